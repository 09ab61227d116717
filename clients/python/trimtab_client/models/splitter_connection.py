from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="SplitterConnection")


@_attrs_define
class SplitterConnection:
    """
    Attributes:
        cumulative_blocking_s (float): Seconds the splitter has blocked sending on this connection since the transport
            started counting; a decrease means the counter was reset.
        id (str): An id: no spaces.
        weight (int): Current share in units of 1/resolution (the weight in force since the last call).
        tuples_in_flight (int | None | Unset): Optional, with tuples_sent: of those, tuples not yet taken into service
            by the worker at observed_at (in the send buffer, the network or its input queue); absent: 0. With it, tuples a
            buffer absorbed do not count as kept up with, and a probe whose worker falls behind fails before it blocks.
        tuples_sent (int | None | Unset): Optional: tuples the splitter has sent on this connection (cumulative). Report
            it for every connection or for none. With it, a zero blocking rate read while the worker took almost nothing
            (the splitter stalled on another connection) is not taken as evidence that the weight is safe.
    """

    cumulative_blocking_s: float
    id: str
    weight: int
    tuples_in_flight: int | None | Unset = UNSET
    tuples_sent: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        cumulative_blocking_s = self.cumulative_blocking_s

        id = self.id

        weight = self.weight

        tuples_in_flight: int | None | Unset
        if isinstance(self.tuples_in_flight, Unset):
            tuples_in_flight = UNSET
        else:
            tuples_in_flight = self.tuples_in_flight

        tuples_sent: int | None | Unset
        if isinstance(self.tuples_sent, Unset):
            tuples_sent = UNSET
        else:
            tuples_sent = self.tuples_sent

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "cumulative_blocking_s": cumulative_blocking_s,
                "id": id,
                "weight": weight,
            }
        )
        if tuples_in_flight is not UNSET:
            field_dict["tuples_in_flight"] = tuples_in_flight
        if tuples_sent is not UNSET:
            field_dict["tuples_sent"] = tuples_sent

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        cumulative_blocking_s = d.pop("cumulative_blocking_s")

        id = d.pop("id")

        weight = d.pop("weight")

        def _parse_tuples_in_flight(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        tuples_in_flight = _parse_tuples_in_flight(d.pop("tuples_in_flight", UNSET))

        def _parse_tuples_sent(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        tuples_sent = _parse_tuples_sent(d.pop("tuples_sent", UNSET))

        splitter_connection = cls(
            cumulative_blocking_s=cumulative_blocking_s,
            id=id,
            weight=weight,
            tuples_in_flight=tuples_in_flight,
            tuples_sent=tuples_sent,
        )

        return splitter_connection
