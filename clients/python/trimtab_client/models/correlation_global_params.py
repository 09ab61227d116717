from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..models.correlation_global_params_variant import CorrelationGlobalParamsVariant
from ..types import UNSET, Unset

T = TypeVar("T", bound="CorrelationGlobalParams")


@_attrs_define
class CorrelationGlobalParams:
    """Xing, Zdonik & Hwang, Section 3.4: greedy placement by correlation score onto the least loaded node, one round
    of one-way balancing, then pair-wise correlation improvement (tabu list of node pairs). Needs load series.

        Attributes:
            epsilon (float | Unset): Load balancing threshold, a fraction of node capacity: pairs further apart get balanced
                (Table 2: 0.1). Default: 0.1.
            max_spread (float | Unset): improved variant: largest allowed gap, in utilization points, between the most and
                the least utilized staying node (mean over the windows). Default: 5.0.
            name (Literal['correlation-global'] | Unset):  Default: 'correlation-global'.
            theta (float | Unset): Correlation improvement threshold: improve until the average node-pair load correlation
                exceeds it (Table 2: 0.8). Default: 0.8.
            variant (CorrelationGlobalParamsVariant | Unset): paper: Section 3.4 alone (node means may stay up to epsilon
                apart, correlated peaks may push nodes above 100 %). improved: then moves and swaps (ties broken by the
                correlation score) until node mean utilizations lie within max_spread points and no node exceeds 100 % in any
                window, where reachable; with fewer than 5 windows it places by load (correlations that short are unreliable).
                Default: CorrelationGlobalParamsVariant.IMPROVED.
    """

    epsilon: float | Unset = 0.1
    max_spread: float | Unset = 5.0
    name: Literal["correlation-global"] | Unset = "correlation-global"
    theta: float | Unset = 0.8
    variant: CorrelationGlobalParamsVariant | Unset = CorrelationGlobalParamsVariant.IMPROVED

    def to_dict(self) -> dict[str, Any]:
        epsilon = self.epsilon

        max_spread = self.max_spread

        name = self.name

        theta = self.theta

        variant: str | Unset = UNSET
        if not isinstance(self.variant, Unset):
            variant = self.variant.value

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if epsilon is not UNSET:
            field_dict["epsilon"] = epsilon
        if max_spread is not UNSET:
            field_dict["max_spread"] = max_spread
        if name is not UNSET:
            field_dict["name"] = name
        if theta is not UNSET:
            field_dict["theta"] = theta
        if variant is not UNSET:
            field_dict["variant"] = variant

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        epsilon = d.pop("epsilon", UNSET)

        max_spread = d.pop("max_spread", UNSET)

        name = cast(Literal["correlation-global"] | Unset, d.pop("name", UNSET))
        if name != "correlation-global" and not isinstance(name, Unset):
            raise ValueError(f"name must match const 'correlation-global', got '{name}'")

        theta = d.pop("theta", UNSET)

        _variant = d.pop("variant", UNSET)
        variant: CorrelationGlobalParamsVariant | Unset
        if isinstance(_variant, Unset):
            variant = UNSET
        else:
            variant = CorrelationGlobalParamsVariant(_variant)

        correlation_global_params = cls(
            epsilon=epsilon,
            max_spread=max_spread,
            name=name,
            theta=theta,
            variant=variant,
        )

        return correlation_global_params
