from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

T = TypeVar("T", bound="Move")


@_attrs_define
class Move:
    """
    Attributes:
        cost (float):
        from_ (None | str):
        to (str):
        unit (str):
    """

    cost: float
    from_: None | str
    to: str
    unit: str

    def to_dict(self) -> dict[str, Any]:
        cost = self.cost

        from_: None | str
        from_ = self.from_

        to = self.to

        unit = self.unit

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "cost": cost,
                "from": from_,
                "to": to,
                "unit": unit,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        cost = d.pop("cost")

        def _parse_from_(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        from_ = _parse_from_(d.pop("from"))

        to = d.pop("to")

        unit = d.pop("unit")

        move = cls(
            cost=cost,
            from_=from_,
            to=to,
            unit=unit,
        )

        return move
