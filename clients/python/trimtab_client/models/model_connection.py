from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ModelConnection")


@_attrs_define
class ModelConnection:
    """A connection's raw data points of its blocking-rate function (Section 5.1), column by column: point k is
    (w[k], rate[k], n[k], seen[k], var[k]). Columns keep the model small and fast to parse. Then the state of its
    weight (version 2).

        Attributes:
            cumulative_blocking_s (float): Counter value at the previous call.
            id (str): An id: no spaces.
            changed_at (float | None | Unset): observed_at of the call that changed the weight.
            decay_scale (float | Unset): This connection's share of exploration_decay (halved after a re-exploration that
                blocked again). Default: 1.0.
            expected_rate (float | Unset): Blocking rate predicted at `weight`. Default: 0.0.
            held_until (float | None | Unset): observed_at before which the weight stays 0: a re-exploration from 0 that
                blocked again (version 3).
            n (list[int] | Unset): Observations smoothed in.
            previous_weight (int | Unset): The weight in force before that one (-1: none). Default: -1.
            rate (list[float] | Unset): Smoothed blocking rate observed there (seconds blocked per second).
            seen (list[int] | Unset): Call number of each point's latest observation (the oldest is evicted first).
            tuples_sent (int | None | Unset): tuples_sent at the previous call (null: not reported).
            tuples_taken (int | None | Unset): tuples_sent minus tuples_in_flight at the previous call (null: not reported).
            var (list[float] | None | Unset): Smoothed variance of the observations at each point (version 2; absent: 0).
            w (list[int] | Unset): Weight of each point.
            weight (int | Unset): Weight returned at the previous call. Default: -1.
    """

    cumulative_blocking_s: float
    id: str
    changed_at: float | None | Unset = UNSET
    decay_scale: float | Unset = 1.0
    expected_rate: float | Unset = 0.0
    held_until: float | None | Unset = UNSET
    n: list[int] | Unset = UNSET
    previous_weight: int | Unset = -1
    rate: list[float] | Unset = UNSET
    seen: list[int] | Unset = UNSET
    tuples_sent: int | None | Unset = UNSET
    tuples_taken: int | None | Unset = UNSET
    var: list[float] | None | Unset = UNSET
    w: list[int] | Unset = UNSET
    weight: int | Unset = -1

    def to_dict(self) -> dict[str, Any]:
        cumulative_blocking_s = self.cumulative_blocking_s

        id = self.id

        changed_at: float | None | Unset
        if isinstance(self.changed_at, Unset):
            changed_at = UNSET
        else:
            changed_at = self.changed_at

        decay_scale = self.decay_scale

        expected_rate = self.expected_rate

        held_until: float | None | Unset
        if isinstance(self.held_until, Unset):
            held_until = UNSET
        else:
            held_until = self.held_until

        n: list[int] | Unset = UNSET
        if not isinstance(self.n, Unset):
            n = self.n

        previous_weight = self.previous_weight

        rate: list[float] | Unset = UNSET
        if not isinstance(self.rate, Unset):
            rate = self.rate

        seen: list[int] | Unset = UNSET
        if not isinstance(self.seen, Unset):
            seen = self.seen

        tuples_sent: int | None | Unset
        if isinstance(self.tuples_sent, Unset):
            tuples_sent = UNSET
        else:
            tuples_sent = self.tuples_sent

        tuples_taken: int | None | Unset
        if isinstance(self.tuples_taken, Unset):
            tuples_taken = UNSET
        else:
            tuples_taken = self.tuples_taken

        var: list[float] | None | Unset
        if isinstance(self.var, Unset):
            var = UNSET
        elif isinstance(self.var, list):
            var = self.var

        else:
            var = self.var

        w: list[int] | Unset = UNSET
        if not isinstance(self.w, Unset):
            w = self.w

        weight = self.weight

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "cumulative_blocking_s": cumulative_blocking_s,
                "id": id,
            }
        )
        if changed_at is not UNSET:
            field_dict["changed_at"] = changed_at
        if decay_scale is not UNSET:
            field_dict["decay_scale"] = decay_scale
        if expected_rate is not UNSET:
            field_dict["expected_rate"] = expected_rate
        if held_until is not UNSET:
            field_dict["held_until"] = held_until
        if n is not UNSET:
            field_dict["n"] = n
        if previous_weight is not UNSET:
            field_dict["previous_weight"] = previous_weight
        if rate is not UNSET:
            field_dict["rate"] = rate
        if seen is not UNSET:
            field_dict["seen"] = seen
        if tuples_sent is not UNSET:
            field_dict["tuples_sent"] = tuples_sent
        if tuples_taken is not UNSET:
            field_dict["tuples_taken"] = tuples_taken
        if var is not UNSET:
            field_dict["var"] = var
        if w is not UNSET:
            field_dict["w"] = w
        if weight is not UNSET:
            field_dict["weight"] = weight

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        cumulative_blocking_s = d.pop("cumulative_blocking_s")

        id = d.pop("id")

        def _parse_changed_at(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        changed_at = _parse_changed_at(d.pop("changed_at", UNSET))

        decay_scale = d.pop("decay_scale", UNSET)

        expected_rate = d.pop("expected_rate", UNSET)

        def _parse_held_until(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        held_until = _parse_held_until(d.pop("held_until", UNSET))

        n = cast(list[int], d.pop("n", UNSET))

        previous_weight = d.pop("previous_weight", UNSET)

        rate = cast(list[float], d.pop("rate", UNSET))

        seen = cast(list[int], d.pop("seen", UNSET))

        def _parse_tuples_sent(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        tuples_sent = _parse_tuples_sent(d.pop("tuples_sent", UNSET))

        def _parse_tuples_taken(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        tuples_taken = _parse_tuples_taken(d.pop("tuples_taken", UNSET))

        def _parse_var(data: object) -> list[float] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                var_type_0 = cast(list[float], data)

                return var_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float] | None | Unset, data)

        var = _parse_var(d.pop("var", UNSET))

        w = cast(list[int], d.pop("w", UNSET))

        weight = d.pop("weight", UNSET)

        model_connection = cls(
            cumulative_blocking_s=cumulative_blocking_s,
            id=id,
            changed_at=changed_at,
            decay_scale=decay_scale,
            expected_rate=expected_rate,
            held_until=held_until,
            n=n,
            previous_weight=previous_weight,
            rate=rate,
            seen=seen,
            tuples_sent=tuples_sent,
            tuples_taken=tuples_taken,
            var=var,
            w=w,
            weight=weight,
        )

        return model_connection
