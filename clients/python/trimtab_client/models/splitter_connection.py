from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="SplitterConnection")


@_attrs_define
class SplitterConnection:
    """
    Attributes:
        cumulative_blocking_s (float): Seconds the splitter has blocked sending on this connection since the transport
            started counting; a decrease means the counter was reset.
        id (str): An id: no spaces.
        weight (int): Current share in units of 1/resolution (the weight in force since the last call).
    """

    cumulative_blocking_s: float
    id: str
    weight: int

    def to_dict(self) -> dict[str, Any]:
        cumulative_blocking_s = self.cumulative_blocking_s

        id = self.id

        weight = self.weight

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "cumulative_blocking_s": cumulative_blocking_s,
                "id": id,
                "weight": weight,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        cumulative_blocking_s = d.pop("cumulative_blocking_s")

        id = d.pop("id")

        weight = d.pop("weight")

        splitter_connection = cls(
            cumulative_blocking_s=cumulative_blocking_s,
            id=id,
            weight=weight,
        )

        return splitter_connection
