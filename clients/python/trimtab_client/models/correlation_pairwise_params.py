from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..models.correlation_pairwise_params_variant import CorrelationPairwiseParamsVariant
from ..types import UNSET, Unset

T = TypeVar("T", bound="CorrelationPairwiseParams")


@_attrs_define
class CorrelationPairwiseParams:
    """Xing, Zdonik & Hwang, Section 3.3: one load distribution period of a pair-wise algorithm (nodes paired most
    with least loaded). Needs load series.

        Attributes:
            delta (float | Unset): Score threshold for an operator exchange (selective exchange; Table 2: 0.2). Scores lie
                in [-1, 1]; the paper requires delta > 0. Default: 0.2.
            epsilon (float | Unset): Load balancing threshold, a fraction of node capacity (0.1). Default: 0.1.
            max_spread (float | None | Unset): After the pair-wise step, moves and swaps within the budget until node mean
                utilizations lie within max_spread points and no node exceeds 100 % in any window, where reachable (null: the
                paper's algorithm alone). Default: 5.0.
            name (Literal['correlation-pairwise'] | Unset):  Default: 'correlation-pairwise'.
            theta (float | Unset): Correlation improvement threshold for the improved variants (Table 2: 0.8). Default: 0.8.
            variant (CorrelationPairwiseParamsVariant | Unset): one-way (3.3.1), two-way redistribution (3.3.2), selective-
                exchange (3.3.3), and their improved forms with the correlation improvement step (3.3.4). Default:
                CorrelationPairwiseParamsVariant.IMPROVED_SELECTIVE_EXCHANGE.
    """

    delta: float | Unset = 0.2
    epsilon: float | Unset = 0.1
    max_spread: float | None | Unset = 5.0
    name: Literal["correlation-pairwise"] | Unset = "correlation-pairwise"
    theta: float | Unset = 0.8
    variant: CorrelationPairwiseParamsVariant | Unset = CorrelationPairwiseParamsVariant.IMPROVED_SELECTIVE_EXCHANGE

    def to_dict(self) -> dict[str, Any]:
        delta = self.delta

        epsilon = self.epsilon

        max_spread: float | None | Unset
        if isinstance(self.max_spread, Unset):
            max_spread = UNSET
        else:
            max_spread = self.max_spread

        name = self.name

        theta = self.theta

        variant: str | Unset = UNSET
        if not isinstance(self.variant, Unset):
            variant = self.variant.value

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if delta is not UNSET:
            field_dict["delta"] = delta
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
        delta = d.pop("delta", UNSET)

        epsilon = d.pop("epsilon", UNSET)

        def _parse_max_spread(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        max_spread = _parse_max_spread(d.pop("max_spread", UNSET))

        name = cast(Literal["correlation-pairwise"] | Unset, d.pop("name", UNSET))
        if name != "correlation-pairwise" and not isinstance(name, Unset):
            raise ValueError(f"name must match const 'correlation-pairwise', got '{name}'")

        theta = d.pop("theta", UNSET)

        _variant = d.pop("variant", UNSET)
        variant: CorrelationPairwiseParamsVariant | Unset
        if isinstance(_variant, Unset):
            variant = UNSET
        else:
            variant = CorrelationPairwiseParamsVariant(_variant)

        correlation_pairwise_params = cls(
            delta=delta,
            epsilon=epsilon,
            max_spread=max_spread,
            name=name,
            theta=theta,
            variant=variant,
        )

        return correlation_pairwise_params
