from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="FluxParams")


@_attrs_define
class FluxParams:
    """Flux (Shah et al., as described by Madsen et al.): pair the i-th most with the i-th least loaded node and move
    the best-fitting partition, repeat within the budget.

        Attributes:
            name (Literal['flux'] | Unset):  Default: 'flux'.
    """

    name: Literal["flux"] | Unset = "flux"

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if name is not UNSET:
            field_dict["name"] = name

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = cast(Literal["flux"] | Unset, d.pop("name", UNSET))
        if name != "flux" and not isinstance(name, Unset):
            raise ValueError(f"name must match const 'flux', got '{name}'")

        flux_params = cls(
            name=name,
        )

        return flux_params
