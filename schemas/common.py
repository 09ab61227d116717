"""Shared building blocks of the wire models: strict base, finite numbers, ids, RFC 9457 problem details."""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

# Hard caps that hold whatever the settings say: they bound memory per request before any solver runs.
MAX_ID_LENGTH = 200
MAX_NOTES = 1000


class StrictModel(BaseModel):
    """Every request model: unknown fields are errors, NaN and infinities are rejected."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, populate_by_name=True)


class ResponseModel(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


Identifier = Annotated[
    str,
    Field(
        min_length=1, max_length=MAX_ID_LENGTH, pattern=r"^[^\s\x00-\x1f]+$", description="An id: no spaces."
    ),
]
NonNegativeFloat = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]
PositiveFloat = Annotated[float, Field(gt=0.0, allow_inf_nan=False)]


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
