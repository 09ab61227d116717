from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="LowerBound")


@_attrs_define
class LowerBound:
    """
    Attributes:
        load_distance (float | None | Unset):
    """

    load_distance: float | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        load_distance: float | None | Unset
        if isinstance(self.load_distance, Unset):
            load_distance = UNSET
        else:
            load_distance = self.load_distance

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if load_distance is not UNSET:
            field_dict["load_distance"] = load_distance

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_load_distance(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        load_distance = _parse_load_distance(d.pop("load_distance", UNSET))

        lower_bound = cls(
            load_distance=load_distance,
        )

        return lower_bound
