"""Shared building blocks of the wire models: strict base, finite numbers, ids, RFC 9457 problem details."""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

# Hard caps that hold whatever the settings say: they bound memory per request before any solver runs.
MAX_ID_LENGTH = 200


class StrictModel(BaseModel):
    """Every request model: unknown fields are errors, NaN and infinities are rejected, and nothing is coerced
    (`true` is not a load of 1, `"3"` is not 3, `"yes"` is not a boolean)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, populate_by_name=True, strict=True)


class ResponseModel(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


Identifier = Annotated[
    str,
    Field(
        min_length=1, max_length=MAX_ID_LENGTH, pattern=r"^[^\s\x00-\x1f]+$", description="An id: no spaces."
    ),
]
# Every quantity (load, state size, rate, capacity) is at most MAX_QUANTITY and a capacity at least MIN_CAPACITY, so
# sums and utilizations over MAX_UNITS units stay finite in float64 (1e15 x 2.5e5 x 100 / 1e-6 ~ 2.5e28, squared for
# a variance ~ 1e57): a finite request can never turn into inf/NaN statistics.
MAX_QUANTITY = 1e15
MIN_CAPACITY = 1e-6
NonNegativeFloat = Annotated[float, Field(ge=0.0, le=MAX_QUANTITY, allow_inf_nan=False)]
PositiveFloat = Annotated[float, Field(gt=0.0, le=MAX_QUANTITY, allow_inf_nan=False)]
Capacity = Annotated[float, Field(ge=MIN_CAPACITY, le=MAX_QUANTITY, allow_inf_nan=False)]


class FieldError(ResponseModel):
    loc: list[str | int] = Field(
        description="Path of the offending field, e.g. ['body', 'units', 3, 'load']."
    )
    msg: str


class Problem(ResponseModel):
    """RFC 9457 problem details, served as application/problem+json."""

    type: str = Field(default="about:blank", description="A URI naming the kind of problem.")
    title: str
    status: int
    detail: str
    instance: str | None = None
    errors: list[FieldError] = Field(default_factory=list)
