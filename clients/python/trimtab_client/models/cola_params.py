from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ColaParams")


@_attrs_define
class ColaParams:
    """COLA (Khandekar et al.) as Madsen et al. compare with it: partition the whole communication graph from scratch
    into balanced parts (METIS), ignoring the current placement; parts are split further until maxLD holds. It ignores
    the budget: with one, the plan is cut down to it (least collocation gain reverted first).

        Attributes:
            max_load_distance (float | Unset): maxLD (10). Default: 10.0.
            name (Literal['cola'] | Unset):  Default: 'cola'.
    """

    max_load_distance: float | Unset = 10.0
    name: Literal["cola"] | Unset = "cola"

    def to_dict(self) -> dict[str, Any]:
        max_load_distance = self.max_load_distance

        name = self.name

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if max_load_distance is not UNSET:
            field_dict["max_load_distance"] = max_load_distance
        if name is not UNSET:
            field_dict["name"] = name

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        max_load_distance = d.pop("max_load_distance", UNSET)

        name = cast(Literal["cola"] | Unset, d.pop("name", UNSET))
        if name != "cola" and not isinstance(name, Unset):
            raise ValueError(f"name must match const 'cola', got '{name}'")

        cola_params = cls(
            max_load_distance=max_load_distance,
            name=name,
        )

        return cola_params
