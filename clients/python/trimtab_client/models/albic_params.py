from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..models.albic_params_backend import AlbicParamsBackend
from ..models.albic_params_pairs import AlbicParamsPairs
from ..types import UNSET, Unset

T = TypeVar("T", bound="AlbicParams")


@_attrs_define
class AlbicParams:
    """Madsen et al. Section 4.3.2 (Algorithm 2): collocate key groups that talk a lot, on top of the MILP. Needs
    `traffic` (and each unit's `operator`); without traffic it is the plain MILP. With `target_utilization` or
    `target_nodes` it runs one period of the adaptation framework (Section 4.1, Algorithm 1): plan, scaling decision,
    re-plan on the scaled cluster (new nodes added, or nodes marked for removal drained under the budget).

        Attributes:
            backend (AlbicParamsBackend | Unset):  Default: AlbicParamsBackend.CP_SAT.
            balance_reserve (float | Unset): pairs=budget: share of the budget kept for the MILP's balancing when a node is
                already further than maxLD / 2 from the mean utilization. Default: 0.1.
            max_load_distance (float | Unset): maxLD: while the plan is above it, partitions get smaller (10). Default:
                10.0.
            max_partition_load (float | Unset): maxPL: largest partition load, in percent of the mean staying node capacity
                (25); 0 = the plain MILP. Default: 25.0.
            name (Literal['albic'] | Unset):  Default: 'albic'.
            new_node_capacity (float | None | Unset): Capacity of nodes a scale-out adds (within a node's capacity bounds);
                default the mean staying capacity.
            pairs (AlbicParamsPairs | Unset): one: the paper's one new pair per period; budget: as many merges as the
                migration budget (less balance_reserve) and maxLD allow, most collocation per migration first, toward target
                sets that stay the same from one period to the next. Default: AlbicParamsPairs.ONE.
            score_factor (float | Unset): sF: a pair qualifies when it sends more than sF x the average per downstream key
                group (1.5). Default: 1.5.
            seed (int | Unset): Breaks ties between equally good pairs. Default: 0.
            step_partition_load (float | Unset): stepPL: maxPL falls by this while the plan is above maxLD (5). Default:
                5.0.
            target_nodes (int | None | Unset): Scaling decision: this many staying nodes.
            target_utilization (list[float] | None | Unset): Scaling decision: [lower, upper] mean utilization (%) of the
                staying nodes; outside it the cluster is scaled to the node count nearest the middle.
    """

    backend: AlbicParamsBackend | Unset = AlbicParamsBackend.CP_SAT
    balance_reserve: float | Unset = 0.1
    max_load_distance: float | Unset = 10.0
    max_partition_load: float | Unset = 25.0
    name: Literal["albic"] | Unset = "albic"
    new_node_capacity: float | None | Unset = UNSET
    pairs: AlbicParamsPairs | Unset = AlbicParamsPairs.ONE
    score_factor: float | Unset = 1.5
    seed: int | Unset = 0
    step_partition_load: float | Unset = 5.0
    target_nodes: int | None | Unset = UNSET
    target_utilization: list[float] | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        backend: str | Unset = UNSET
        if not isinstance(self.backend, Unset):
            backend = self.backend.value

        balance_reserve = self.balance_reserve

        max_load_distance = self.max_load_distance

        max_partition_load = self.max_partition_load

        name = self.name

        new_node_capacity: float | None | Unset
        if isinstance(self.new_node_capacity, Unset):
            new_node_capacity = UNSET
        else:
            new_node_capacity = self.new_node_capacity

        pairs: str | Unset = UNSET
        if not isinstance(self.pairs, Unset):
            pairs = self.pairs.value

        score_factor = self.score_factor

        seed = self.seed

        step_partition_load = self.step_partition_load

        target_nodes: int | None | Unset
        if isinstance(self.target_nodes, Unset):
            target_nodes = UNSET
        else:
            target_nodes = self.target_nodes

        target_utilization: list[float] | None | Unset
        if isinstance(self.target_utilization, Unset):
            target_utilization = UNSET
        elif isinstance(self.target_utilization, list):
            target_utilization = self.target_utilization

        else:
            target_utilization = self.target_utilization

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if backend is not UNSET:
            field_dict["backend"] = backend
        if balance_reserve is not UNSET:
            field_dict["balance_reserve"] = balance_reserve
        if max_load_distance is not UNSET:
            field_dict["max_load_distance"] = max_load_distance
        if max_partition_load is not UNSET:
            field_dict["max_partition_load"] = max_partition_load
        if name is not UNSET:
            field_dict["name"] = name
        if new_node_capacity is not UNSET:
            field_dict["new_node_capacity"] = new_node_capacity
        if pairs is not UNSET:
            field_dict["pairs"] = pairs
        if score_factor is not UNSET:
            field_dict["score_factor"] = score_factor
        if seed is not UNSET:
            field_dict["seed"] = seed
        if step_partition_load is not UNSET:
            field_dict["step_partition_load"] = step_partition_load
        if target_nodes is not UNSET:
            field_dict["target_nodes"] = target_nodes
        if target_utilization is not UNSET:
            field_dict["target_utilization"] = target_utilization

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        _backend = d.pop("backend", UNSET)
        backend: AlbicParamsBackend | Unset
        if isinstance(_backend, Unset):
            backend = UNSET
        else:
            backend = AlbicParamsBackend(_backend)

        balance_reserve = d.pop("balance_reserve", UNSET)

        max_load_distance = d.pop("max_load_distance", UNSET)

        max_partition_load = d.pop("max_partition_load", UNSET)

        name = cast(Literal["albic"] | Unset, d.pop("name", UNSET))
        if name != "albic" and not isinstance(name, Unset):
            raise ValueError(f"name must match const 'albic', got '{name}'")

        def _parse_new_node_capacity(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        new_node_capacity = _parse_new_node_capacity(d.pop("new_node_capacity", UNSET))

        _pairs = d.pop("pairs", UNSET)
        pairs: AlbicParamsPairs | Unset
        if isinstance(_pairs, Unset):
            pairs = UNSET
        else:
            pairs = AlbicParamsPairs(_pairs)

        score_factor = d.pop("score_factor", UNSET)

        seed = d.pop("seed", UNSET)

        step_partition_load = d.pop("step_partition_load", UNSET)

        def _parse_target_nodes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        target_nodes = _parse_target_nodes(d.pop("target_nodes", UNSET))

        def _parse_target_utilization(data: object) -> list[float] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                target_utilization_type_0 = cast(list[float], data)

                return target_utilization_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float] | None | Unset, data)

        target_utilization = _parse_target_utilization(d.pop("target_utilization", UNSET))

        albic_params = cls(
            backend=backend,
            balance_reserve=balance_reserve,
            max_load_distance=max_load_distance,
            max_partition_load=max_partition_load,
            name=name,
            new_node_capacity=new_node_capacity,
            pairs=pairs,
            score_factor=score_factor,
            seed=seed,
            step_partition_load=step_partition_load,
            target_nodes=target_nodes,
            target_utilization=target_utilization,
        )

        return albic_params
