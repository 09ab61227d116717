from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.albic_params import AlbicParams
    from ..models.budget import Budget
    from ..models.clb_params import ClbParams
    from ..models.cola_params import ColaParams
    from ..models.correlation_global_params import CorrelationGlobalParams
    from ..models.correlation_pairwise_params import CorrelationPairwiseParams
    from ..models.elb_params import ElbParams
    from ..models.flux_params import FluxParams
    from ..models.largest_load_first_params import LargestLoadFirstParams
    from ..models.milp_params import MilpParams
    from ..models.node import Node
    from ..models.random_params import RandomParams
    from ..models.round_robin_params import RoundRobinParams
    from ..models.traffic import Traffic
    from ..models.unit import Unit
    from ..models.universal_hash_params import UniversalHashParams


T = TypeVar("T", bound="AssignmentRequest")


@_attrs_define
class AssignmentRequest:
    """
    Attributes:
        nodes (list[Node]):
        units (list[Unit]):
        algorithm (AlbicParams | ClbParams | ColaParams | CorrelationGlobalParams | CorrelationPairwiseParams |
            ElbParams | FluxParams | LargestLoadFirstParams | MilpParams | RandomParams | RoundRobinParams |
            UniversalHashParams | Unset):
        budget (Budget | Unset):
        serialization_cost (float | None | Unset): Load units one unit of traffic rate costs while it crosses nodes
            (serialization, network): with it every plan reports the load index.
        time_limit_s (float | None | Unset): Wall-clock limit for the solver; the service default applies when null.
        traffic (list[Traffic] | Unset):
    """

    nodes: list[Node]
    units: list[Unit]
    algorithm: (
        AlbicParams
        | ClbParams
        | ColaParams
        | CorrelationGlobalParams
        | CorrelationPairwiseParams
        | ElbParams
        | FluxParams
        | LargestLoadFirstParams
        | MilpParams
        | RandomParams
        | RoundRobinParams
        | UniversalHashParams
        | Unset
    ) = UNSET
    budget: Budget | Unset = UNSET
    serialization_cost: float | None | Unset = UNSET
    time_limit_s: float | None | Unset = UNSET
    traffic: list[Traffic] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.albic_params import AlbicParams  # noqa: PLC0415
        from ..models.clb_params import ClbParams  # noqa: PLC0415
        from ..models.correlation_global_params import CorrelationGlobalParams  # noqa: PLC0415
        from ..models.correlation_pairwise_params import CorrelationPairwiseParams  # noqa: PLC0415
        from ..models.elb_params import ElbParams  # noqa: PLC0415
        from ..models.flux_params import FluxParams  # noqa: PLC0415
        from ..models.largest_load_first_params import LargestLoadFirstParams  # noqa: PLC0415
        from ..models.milp_params import MilpParams  # noqa: PLC0415
        from ..models.random_params import RandomParams  # noqa: PLC0415
        from ..models.round_robin_params import RoundRobinParams  # noqa: PLC0415
        from ..models.universal_hash_params import UniversalHashParams  # noqa: PLC0415

        nodes = []
        for nodes_item_data in self.nodes:
            nodes_item = nodes_item_data.to_dict()
            nodes.append(nodes_item)

        units = []
        for units_item_data in self.units:
            units_item = units_item_data.to_dict()
            units.append(units_item)

        algorithm: dict[str, Any] | Unset
        if isinstance(self.algorithm, Unset):
            algorithm = UNSET
        elif isinstance(self.algorithm, MilpParams):
            algorithm = self.algorithm.to_dict()
        elif isinstance(self.algorithm, FluxParams):
            algorithm = self.algorithm.to_dict()
        elif isinstance(self.algorithm, LargestLoadFirstParams):
            algorithm = self.algorithm.to_dict()
        elif isinstance(self.algorithm, RoundRobinParams):
            algorithm = self.algorithm.to_dict()
        elif isinstance(self.algorithm, RandomParams):
            algorithm = self.algorithm.to_dict()
        elif isinstance(self.algorithm, CorrelationGlobalParams):
            algorithm = self.algorithm.to_dict()
        elif isinstance(self.algorithm, CorrelationPairwiseParams):
            algorithm = self.algorithm.to_dict()
        elif isinstance(self.algorithm, ElbParams):
            algorithm = self.algorithm.to_dict()
        elif isinstance(self.algorithm, ClbParams):
            algorithm = self.algorithm.to_dict()
        elif isinstance(self.algorithm, UniversalHashParams):
            algorithm = self.algorithm.to_dict()
        elif isinstance(self.algorithm, AlbicParams):
            algorithm = self.algorithm.to_dict()
        else:
            algorithm = self.algorithm.to_dict()

        budget: dict[str, Any] | Unset = UNSET
        if not isinstance(self.budget, Unset):
            budget = self.budget.to_dict()

        serialization_cost: float | None | Unset
        if isinstance(self.serialization_cost, Unset):
            serialization_cost = UNSET
        else:
            serialization_cost = self.serialization_cost

        time_limit_s: float | None | Unset
        if isinstance(self.time_limit_s, Unset):
            time_limit_s = UNSET
        else:
            time_limit_s = self.time_limit_s

        traffic: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.traffic, Unset):
            traffic = []
            for traffic_item_data in self.traffic:
                traffic_item = traffic_item_data.to_dict()
                traffic.append(traffic_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "nodes": nodes,
                "units": units,
            }
        )
        if algorithm is not UNSET:
            field_dict["algorithm"] = algorithm
        if budget is not UNSET:
            field_dict["budget"] = budget
        if serialization_cost is not UNSET:
            field_dict["serialization_cost"] = serialization_cost
        if time_limit_s is not UNSET:
            field_dict["time_limit_s"] = time_limit_s
        if traffic is not UNSET:
            field_dict["traffic"] = traffic

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.albic_params import AlbicParams  # noqa: PLC0415
        from ..models.budget import Budget  # noqa: PLC0415
        from ..models.clb_params import ClbParams  # noqa: PLC0415
        from ..models.cola_params import ColaParams  # noqa: PLC0415
        from ..models.correlation_global_params import CorrelationGlobalParams  # noqa: PLC0415
        from ..models.correlation_pairwise_params import CorrelationPairwiseParams  # noqa: PLC0415
        from ..models.elb_params import ElbParams  # noqa: PLC0415
        from ..models.flux_params import FluxParams  # noqa: PLC0415
        from ..models.largest_load_first_params import LargestLoadFirstParams  # noqa: PLC0415
        from ..models.milp_params import MilpParams  # noqa: PLC0415
        from ..models.node import Node  # noqa: PLC0415
        from ..models.random_params import RandomParams  # noqa: PLC0415
        from ..models.round_robin_params import RoundRobinParams  # noqa: PLC0415
        from ..models.traffic import Traffic  # noqa: PLC0415
        from ..models.unit import Unit  # noqa: PLC0415
        from ..models.universal_hash_params import UniversalHashParams  # noqa: PLC0415

        d = dict(src_dict)
        nodes = []
        _nodes = d.pop("nodes")
        for nodes_item_data in _nodes:
            nodes_item = Node.from_dict(nodes_item_data)

            nodes.append(nodes_item)

        units = []
        _units = d.pop("units")
        for units_item_data in _units:
            units_item = Unit.from_dict(units_item_data)

            units.append(units_item)

        def _parse_algorithm(
            data: object,
        ) -> (
            AlbicParams
            | ClbParams
            | ColaParams
            | CorrelationGlobalParams
            | CorrelationPairwiseParams
            | ElbParams
            | FluxParams
            | LargestLoadFirstParams
            | MilpParams
            | RandomParams
            | RoundRobinParams
            | UniversalHashParams
            | Unset
        ):
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                algorithm_type_0 = MilpParams.from_dict(data)

                return algorithm_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                algorithm_type_1 = FluxParams.from_dict(data)

                return algorithm_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                algorithm_type_2 = LargestLoadFirstParams.from_dict(data)

                return algorithm_type_2
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                algorithm_type_3 = RoundRobinParams.from_dict(data)

                return algorithm_type_3
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                algorithm_type_4 = RandomParams.from_dict(data)

                return algorithm_type_4
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                algorithm_type_5 = CorrelationGlobalParams.from_dict(data)

                return algorithm_type_5
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                algorithm_type_6 = CorrelationPairwiseParams.from_dict(data)

                return algorithm_type_6
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                algorithm_type_7 = ElbParams.from_dict(data)

                return algorithm_type_7
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                algorithm_type_8 = ClbParams.from_dict(data)

                return algorithm_type_8
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                algorithm_type_9 = UniversalHashParams.from_dict(data)

                return algorithm_type_9
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                algorithm_type_10 = AlbicParams.from_dict(data)

                return algorithm_type_10
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            if not isinstance(data, dict):
                raise TypeError()
            algorithm_type_11 = ColaParams.from_dict(data)

            return algorithm_type_11

        algorithm = _parse_algorithm(d.pop("algorithm", UNSET))

        _budget = d.pop("budget", UNSET)
        budget: Budget | Unset
        if isinstance(_budget, Unset):
            budget = UNSET
        else:
            budget = Budget.from_dict(_budget)

        def _parse_serialization_cost(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        serialization_cost = _parse_serialization_cost(d.pop("serialization_cost", UNSET))

        def _parse_time_limit_s(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        time_limit_s = _parse_time_limit_s(d.pop("time_limit_s", UNSET))

        _traffic = d.pop("traffic", UNSET)
        traffic: list[Traffic] | Unset = UNSET
        if _traffic is not UNSET:
            traffic = []
            for traffic_item_data in _traffic:
                traffic_item = Traffic.from_dict(traffic_item_data)

                traffic.append(traffic_item)

        assignment_request = cls(
            nodes=nodes,
            units=units,
            algorithm=algorithm,
            budget=budget,
            serialization_cost=serialization_cost,
            time_limit_s=time_limit_s,
            traffic=traffic,
        )

        return assignment_request
