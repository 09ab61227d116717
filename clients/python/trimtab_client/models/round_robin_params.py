from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="RoundRobinParams")


@_attrs_define
class RoundRobinParams:
    """Round-robin: units spread by count over the non-draining nodes, ignoring load (a baseline).

    Attributes:
        name (Literal['round-robin'] | Unset):  Default: 'round-robin'.
    """

    name: Literal["round-robin"] | Unset = "round-robin"

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
        name = cast(Literal["round-robin"] | Unset, d.pop("name", UNSET))
        if name != "round-robin" and not isinstance(name, Unset):
            raise ValueError(f"name must match const 'round-robin', got '{name}'")

        round_robin_params = cls(
            name=name,
        )

        return round_robin_params
