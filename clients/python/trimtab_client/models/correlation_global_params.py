from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="CorrelationGlobalParams")


@_attrs_define
class CorrelationGlobalParams:
    """Xing, Zdonik & Hwang, Section 3.4: greedy placement by correlation score onto the least loaded node, one round
    of one-way balancing, then pair-wise correlation improvement (tabu list of node pairs). Needs load series.

        Attributes:
            epsilon (float | Unset): Load balancing threshold, a fraction of node capacity: pairs further apart get balanced
                (Table 2: 0.1). Default: 0.1.
            name (Literal['correlation-global'] | Unset):  Default: 'correlation-global'.
            theta (float | Unset): Correlation improvement threshold: improve until the average node-pair load correlation
                exceeds it (Table 2: 0.8). Default: 0.8.
    """

    epsilon: float | Unset = 0.1
    name: Literal["correlation-global"] | Unset = "correlation-global"
    theta: float | Unset = 0.8

    def to_dict(self) -> dict[str, Any]:
        epsilon = self.epsilon

        name = self.name

        theta = self.theta

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if epsilon is not UNSET:
            field_dict["epsilon"] = epsilon
        if name is not UNSET:
            field_dict["name"] = name
        if theta is not UNSET:
            field_dict["theta"] = theta

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        epsilon = d.pop("epsilon", UNSET)

        name = cast(Literal["correlation-global"] | Unset, d.pop("name", UNSET))
        if name != "correlation-global" and not isinstance(name, Unset):
            raise ValueError(f"name must match const 'correlation-global', got '{name}'")

        theta = d.pop("theta", UNSET)

        correlation_global_params = cls(
            epsilon=epsilon,
            name=name,
            theta=theta,
        )

        return correlation_global_params
