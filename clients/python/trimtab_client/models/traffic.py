from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="Traffic")


@_attrs_define
class Traffic:
    """
    Attributes:
        dst (str): An id: no spaces.
        rate (float):
        src (str): An id: no spaces.
    """

    dst: str
    rate: float
    src: str

    def to_dict(self) -> dict[str, Any]:
        dst = self.dst

        rate = self.rate

        src = self.src

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "dst": dst,
                "rate": rate,
                "src": src,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        dst = d.pop("dst")

        rate = d.pop("rate")

        src = d.pop("src")

        traffic = cls(
            dst=dst,
            rate=rate,
            src=src,
        )

        return traffic
