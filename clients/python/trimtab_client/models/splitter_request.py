from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.splitter_request_clustering import SplitterRequestClustering
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.splitter_connection import SplitterConnection
    from ..models.splitter_model import SplitterModel


T = TypeVar("T", bound="SplitterRequest")


@_attrs_define
class SplitterRequest:
    """
    Attributes:
        connections (list[SplitterConnection]):
        observed_at (float): When the counters were read (seconds, e.g. Unix time).
        clustering (SplitterRequestClustering | Unset): Pool similar connections into clusters (Section 5.3); auto: on
            from 16 connections. Default: SplitterRequestClustering.AUTO.
        exploration_decay (float | Unset): Data points above a connection's current weight shrink by this fraction per
            second of elapsed time (Section 5.4: per 1 s statistics interval), scaled by each connection's back-off; 0
            disables exploration (LB-static). Default: 0.1.
        max_change (int | None | Unset): Each weight moves at most this much per call (bounds m_j, M_j of Section 5.2;
            values above resolution mean free). null: evidence-limited steps (a weight rises by at most an eighth of itself
            or a probe share per call; it falls freely; a newcomer at weight 0 starts at a probe share).
        model (None | SplitterModel | Unset): The `model` of the previous response; null on the first call.
        resolution (int | Unset): Weights are in units of 1/resolution (1000 = 0.1% steps). Default: 1000.
        steady_weights (bool | Unset): Change weights only when the predicted gain exceeds the measurement noise, and
            count the transition after a weight change less; false: the paper's variant (re-optimise every call). Default:
            True.
    """

    connections: list[SplitterConnection]
    observed_at: float
    clustering: SplitterRequestClustering | Unset = SplitterRequestClustering.AUTO
    exploration_decay: float | Unset = 0.1
    max_change: int | None | Unset = UNSET
    model: None | SplitterModel | Unset = UNSET
    resolution: int | Unset = 1000
    steady_weights: bool | Unset = True

    def to_dict(self) -> dict[str, Any]:
        from ..models.splitter_model import SplitterModel  # noqa: PLC0415

        connections = []
        for connections_item_data in self.connections:
            connections_item = connections_item_data.to_dict()
            connections.append(connections_item)

        observed_at = self.observed_at

        clustering: str | Unset = UNSET
        if not isinstance(self.clustering, Unset):
            clustering = self.clustering.value

        exploration_decay = self.exploration_decay

        max_change: int | None | Unset
        if isinstance(self.max_change, Unset):
            max_change = UNSET
        else:
            max_change = self.max_change

        model: dict[str, Any] | None | Unset
        if isinstance(self.model, Unset):
            model = UNSET
        elif isinstance(self.model, SplitterModel):
            model = self.model.to_dict()
        else:
            model = self.model

        resolution = self.resolution

        steady_weights = self.steady_weights

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "connections": connections,
                "observed_at": observed_at,
            }
        )
        if clustering is not UNSET:
            field_dict["clustering"] = clustering
        if exploration_decay is not UNSET:
            field_dict["exploration_decay"] = exploration_decay
        if max_change is not UNSET:
            field_dict["max_change"] = max_change
        if model is not UNSET:
            field_dict["model"] = model
        if resolution is not UNSET:
            field_dict["resolution"] = resolution
        if steady_weights is not UNSET:
            field_dict["steady_weights"] = steady_weights

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.splitter_connection import SplitterConnection  # noqa: PLC0415
        from ..models.splitter_model import SplitterModel  # noqa: PLC0415

        d = dict(src_dict)
        connections = []
        _connections = d.pop("connections")
        for connections_item_data in _connections:
            connections_item = SplitterConnection.from_dict(connections_item_data)

            connections.append(connections_item)

        observed_at = d.pop("observed_at")

        _clustering = d.pop("clustering", UNSET)
        clustering: SplitterRequestClustering | Unset
        if isinstance(_clustering, Unset):
            clustering = UNSET
        else:
            clustering = SplitterRequestClustering(_clustering)

        exploration_decay = d.pop("exploration_decay", UNSET)

        def _parse_max_change(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_change = _parse_max_change(d.pop("max_change", UNSET))

        def _parse_model(data: object) -> None | SplitterModel | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                model_type_0 = SplitterModel.from_dict(data)

                return model_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SplitterModel | Unset, data)

        model = _parse_model(d.pop("model", UNSET))

        resolution = d.pop("resolution", UNSET)

        steady_weights = d.pop("steady_weights", UNSET)

        splitter_request = cls(
            connections=connections,
            observed_at=observed_at,
            clustering=clustering,
            exploration_decay=exploration_decay,
            max_change=max_change,
            model=model,
            resolution=resolution,
            steady_weights=steady_weights,
        )

        return splitter_request
