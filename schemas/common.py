"""Shared building blocks of the wire models: strict base, finite numbers, ids, RFC 9457 problem details."""

import typing
from collections.abc import Callable
from copy import copy
from types import MappingProxyType
from typing import Annotated, Any, NotRequired

from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from typing_extensions import TypedDict

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


def field_values_form(
    model: type[BaseModel], nested: dict[type[BaseModel], Any], omit_defaults: bool = False
) -> Any:
    """A TypedDict of the model's own fields, each with the model's type, constraints, default and description, and the
    model's config (unknown keys, NaN and coercion refused alike): validating JSON into it gives plain dicts, no
    model object per item, holding exactly the values a model's fields would (`vars(model)`). Lists of the models in
    `nested` become lists of their forms (and a factory default of such a model its fields' defaults). Only for a
    fast path that must accept exactly what the model accepts; the OpenAPI document keeps the models. A model with
    validators or a post-init of its own has no such form (they would not run): TypeError.

    `omit_defaults`: a field with a default is left out of a dict whose JSON leaves it out, instead of holding the
    default (`field_defaults` says what its readers apply): the same values accepted and refused, the same errors. For
    the items of long lists (a snapshot's units): pydantic-core fills each default of each item into the item's dict
    (a unit of four keys sent became a dict of seven, grown once, plus an empty dict of resources), a sixth of a small
    body's validation."""
    decorators = model.__pydantic_decorators__
    if (
        decorators.validators
        or decorators.field_validators
        or decorators.root_validators
        or decorators.model_validators
        or model.model_post_init is not BaseModel.model_post_init
    ):
        raise TypeError(f"{model.__name__} validates beyond its fields' types: no plain-values form")
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        annotation: Any = info.annotation
        if typing.get_origin(annotation) is list and typing.get_args(annotation)[0] in nested:
            annotation = list[nested[typing.get_args(annotation)[0]]]  # type: ignore[misc]
        elif annotation in nested:
            annotation = nested[annotation]
        form_info: FieldInfo = copy(info)
        factory = info.default_factory
        if omit_defaults and not info.is_required():
            form_info.default, form_info.default_factory = PydanticUndefined, None
            form_info._attributes_set.pop("default", None)
            form_info._attributes_set.pop("default_factory", None)
            fields[name] = NotRequired[Annotated[annotation, form_info]]
            continue
        if isinstance(factory, type) and factory in nested:
            form_info.default_factory = _fields_of_default(factory)
        fields[name] = Annotated[annotation, form_info]
    form = TypedDict(f"{model.__name__}Fields", fields)  # type: ignore[misc]
    form.__pydantic_config__ = model.model_config  # type: ignore[attr-defined]
    return form


def _fields_of_default(model: type[BaseModel]) -> Callable[[], dict[str, Any]]:
    return lambda: dict(vars(model()))


def field_defaults(model: type[BaseModel]) -> dict[str, Any]:
    """The default of each of the model's fields that has one (what a reader of a form made with `omit_defaults`
    applies to a key left out); a mutable default (a factory's empty dict) read-only, since every reader shares it."""
    defaults = {}
    for name, info in model.model_fields.items():
        if not info.is_required():
            value = info.get_default(call_default_factory=True)
            defaults[name] = MappingProxyType(value) if isinstance(value, dict) else value
    if any(isinstance(value, list | set) for value in defaults.values()):
        raise TypeError(f"{model.__name__} has a mutable default its readers would share")
    return defaults
