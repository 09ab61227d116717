from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..models.clb_params_variant import ClbParamsVariant
from ..types import UNSET, Unset

T = TypeVar("T", bound="ClbParams")


@_attrs_define
class ClbParams:
    """Guo & Zhou Algorithm 2 (CLB): split the substreams into one subset per non-draining node so that the cross
    covariance of their load series is large, then place the subsets where the least state moves.

        Attributes:
            m (int | None | Unset): Period: CLB uses the latest m windows of the series (default: all). The paper's m > 1.
            name (Literal['clb'] | Unset):  Default: 'clb'.
            threshold (float | Unset): theta: substreams whose load correlation with the split substream is at least theta
                are separated from it. Default: 0.0.
            variant (ClbParamsVariant | Unset): improved (default): minimize the paper's objective sum_t var(L_t) over the m
                windows (loads scaled to the mean capacity) with the state moved second, by local search from the current
                placement and from the paper's plan; never worse than the current placement (else `unchanged`). paper: Algorithm
                2 as published, for reproductions. Default: ClbParamsVariant.IMPROVED.
    """

    m: int | None | Unset = UNSET
    name: Literal["clb"] | Unset = "clb"
    threshold: float | Unset = 0.0
    variant: ClbParamsVariant | Unset = ClbParamsVariant.IMPROVED

    def to_dict(self) -> dict[str, Any]:
        m: int | None | Unset
        if isinstance(self.m, Unset):
            m = UNSET
        else:
            m = self.m

        name = self.name

        threshold = self.threshold

        variant: str | Unset = UNSET
        if not isinstance(self.variant, Unset):
            variant = self.variant.value

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if m is not UNSET:
            field_dict["m"] = m
        if name is not UNSET:
            field_dict["name"] = name
        if threshold is not UNSET:
            field_dict["threshold"] = threshold
        if variant is not UNSET:
            field_dict["variant"] = variant

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_m(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        m = _parse_m(d.pop("m", UNSET))

        name = cast(Literal["clb"] | Unset, d.pop("name", UNSET))
        if name != "clb" and not isinstance(name, Unset):
            raise ValueError(f"name must match const 'clb', got '{name}'")

        threshold = d.pop("threshold", UNSET)

        _variant = d.pop("variant", UNSET)
        variant: ClbParamsVariant | Unset
        if isinstance(_variant, Unset):
            variant = UNSET
        else:
            variant = ClbParamsVariant(_variant)

        clb_params = cls(
            m=m,
            name=name,
            threshold=threshold,
            variant=variant,
        )

        return clb_params
