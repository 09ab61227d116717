from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ModelConnection")


@_attrs_define
class ModelConnection:
    """A connection's raw data points of its blocking-rate function (Section 5.1), column by column: point k is
    (w[k], rate[k], n[k], seen[k]). Columns keep the model small and fast to parse.

        Attributes:
            cumulative_blocking_s (float): Counter value at the previous call.
            id (str): An id: no spaces.
            n (list[int] | Unset): Observations smoothed in.
            rate (list[float] | Unset): Smoothed blocking rate observed there (seconds blocked per second).
            seen (list[int] | Unset): Call number of each point's latest observation (the oldest is evicted first).
            w (list[int] | Unset): Weight of each point.
    """

    cumulative_blocking_s: float
    id: str
    n: list[int] | Unset = UNSET
    rate: list[float] | Unset = UNSET
    seen: list[int] | Unset = UNSET
    w: list[int] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        cumulative_blocking_s = self.cumulative_blocking_s

        id = self.id

        n: list[int] | Unset = UNSET
        if not isinstance(self.n, Unset):
            n = self.n

        rate: list[float] | Unset = UNSET
        if not isinstance(self.rate, Unset):
            rate = self.rate

        seen: list[int] | Unset = UNSET
        if not isinstance(self.seen, Unset):
            seen = self.seen

        w: list[int] | Unset = UNSET
        if not isinstance(self.w, Unset):
            w = self.w

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "cumulative_blocking_s": cumulative_blocking_s,
                "id": id,
            }
        )
        if n is not UNSET:
            field_dict["n"] = n
        if rate is not UNSET:
            field_dict["rate"] = rate
        if seen is not UNSET:
            field_dict["seen"] = seen
        if w is not UNSET:
            field_dict["w"] = w

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        cumulative_blocking_s = d.pop("cumulative_blocking_s")

        id = d.pop("id")

        n = cast(list[int], d.pop("n", UNSET))

        rate = cast(list[float], d.pop("rate", UNSET))

        seen = cast(list[int], d.pop("seen", UNSET))

        w = cast(list[int], d.pop("w", UNSET))

        model_connection = cls(
            cumulative_blocking_s=cumulative_blocking_s,
            id=id,
            n=n,
            rate=rate,
            seen=seen,
            w=w,
        )

        return model_connection
