from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="PlanStats")


@_attrs_define
class PlanStats:
    """Statistics of one state of the cluster (before or after the plan), recomputed from the assignment.

    Attributes:
        imbalance (float): Variance of node loads in the latest window (Guo & Zhou).
        imbalance_total (float): Variance of node loads summed over all windows.
        load_distance (float): max over non-draining nodes of |utilization - mean|, in percentage points; mean = 100 x
            total load / total non-draining capacity (the utilization of a perfectly balanced cluster).
        max_utilization (float):
        min_utilization (float):
        parallelism (int): Nodes that hold at least one unit.
        avg_load_correlation (float | None | Unset): Mean pairwise correlation of node load series (Xing et al.); null
            without series.
        collocation_factor (float | None | Unset): Share of the traffic rate whose two units share a node (Madsen et
            al.); null without traffic.
        load_index (float | None | Unset): Estimated system load in percent of the state before the plan: crossing
            traffic costs serialization_cost load units per unit of rate; null without serialization_cost.
        mean_node_load_variance (float | None | Unset): Mean over nodes of the variance of the node's load series; null
            without series.
        min_mean_node_load_variance (float | None | Unset): Theorem 1 of Xing et al.: var(X) / n^2, X the summed load
            series of the n non-draining nodes: no placement of that load has a smaller mean_node_load_variance; null
            without series.
    """

    imbalance: float
    imbalance_total: float
    load_distance: float
    max_utilization: float
    min_utilization: float
    parallelism: int
    avg_load_correlation: float | None | Unset = UNSET
    collocation_factor: float | None | Unset = UNSET
    load_index: float | None | Unset = UNSET
    mean_node_load_variance: float | None | Unset = UNSET
    min_mean_node_load_variance: float | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        imbalance = self.imbalance

        imbalance_total = self.imbalance_total

        load_distance = self.load_distance

        max_utilization = self.max_utilization

        min_utilization = self.min_utilization

        parallelism = self.parallelism

        avg_load_correlation: float | None | Unset
        if isinstance(self.avg_load_correlation, Unset):
            avg_load_correlation = UNSET
        else:
            avg_load_correlation = self.avg_load_correlation

        collocation_factor: float | None | Unset
        if isinstance(self.collocation_factor, Unset):
            collocation_factor = UNSET
        else:
            collocation_factor = self.collocation_factor

        load_index: float | None | Unset
        if isinstance(self.load_index, Unset):
            load_index = UNSET
        else:
            load_index = self.load_index

        mean_node_load_variance: float | None | Unset
        if isinstance(self.mean_node_load_variance, Unset):
            mean_node_load_variance = UNSET
        else:
            mean_node_load_variance = self.mean_node_load_variance

        min_mean_node_load_variance: float | None | Unset
        if isinstance(self.min_mean_node_load_variance, Unset):
            min_mean_node_load_variance = UNSET
        else:
            min_mean_node_load_variance = self.min_mean_node_load_variance

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "imbalance": imbalance,
                "imbalance_total": imbalance_total,
                "load_distance": load_distance,
                "max_utilization": max_utilization,
                "min_utilization": min_utilization,
                "parallelism": parallelism,
            }
        )
        if avg_load_correlation is not UNSET:
            field_dict["avg_load_correlation"] = avg_load_correlation
        if collocation_factor is not UNSET:
            field_dict["collocation_factor"] = collocation_factor
        if load_index is not UNSET:
            field_dict["load_index"] = load_index
        if mean_node_load_variance is not UNSET:
            field_dict["mean_node_load_variance"] = mean_node_load_variance
        if min_mean_node_load_variance is not UNSET:
            field_dict["min_mean_node_load_variance"] = min_mean_node_load_variance

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        imbalance = d.pop("imbalance")

        imbalance_total = d.pop("imbalance_total")

        load_distance = d.pop("load_distance")

        max_utilization = d.pop("max_utilization")

        min_utilization = d.pop("min_utilization")

        parallelism = d.pop("parallelism")

        def _parse_avg_load_correlation(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        avg_load_correlation = _parse_avg_load_correlation(d.pop("avg_load_correlation", UNSET))

        def _parse_collocation_factor(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        collocation_factor = _parse_collocation_factor(d.pop("collocation_factor", UNSET))

        def _parse_load_index(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        load_index = _parse_load_index(d.pop("load_index", UNSET))

        def _parse_mean_node_load_variance(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        mean_node_load_variance = _parse_mean_node_load_variance(d.pop("mean_node_load_variance", UNSET))

        def _parse_min_mean_node_load_variance(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        min_mean_node_load_variance = _parse_min_mean_node_load_variance(d.pop("min_mean_node_load_variance", UNSET))

        plan_stats = cls(
            imbalance=imbalance,
            imbalance_total=imbalance_total,
            load_distance=load_distance,
            max_utilization=max_utilization,
            min_utilization=min_utilization,
            parallelism=parallelism,
            avg_load_correlation=avg_load_correlation,
            collocation_factor=collocation_factor,
            load_index=load_index,
            mean_node_load_variance=mean_node_load_variance,
            min_mean_node_load_variance=min_mean_node_load_variance,
        )

        return plan_stats
