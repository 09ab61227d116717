from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.splitter_model import SplitterModel
    from ..models.splitter_response_weights import SplitterResponseWeights


T = TypeVar("T", bound="SplitterResponse")


@_attrs_define
class SplitterResponse:
    """
    Attributes:
        clusters (list[list[str]]): Connection ids grouped by cluster (singletons when clustering is off).
        model (SplitterModel): What the splitter model learned so far; send it back unchanged on the next call.
        predicted_max_blocking_rate (float): max over connections (clusters) of the predicted blocking rate at the new
            weights.
        solve_ms (float):
        weights (SplitterResponseWeights): New weight per connection id; they sum to resolution.
        notes (list[str] | Unset):
    """

    clusters: list[list[str]]
    model: SplitterModel
    predicted_max_blocking_rate: float
    solve_ms: float
    weights: SplitterResponseWeights
    notes: list[str] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        clusters = []
        for clusters_item_data in self.clusters:
            clusters_item = clusters_item_data

            clusters.append(clusters_item)

        model = self.model.to_dict()

        predicted_max_blocking_rate = self.predicted_max_blocking_rate

        solve_ms = self.solve_ms

        weights = self.weights.to_dict()

        notes: list[str] | Unset = UNSET
        if not isinstance(self.notes, Unset):
            notes = self.notes

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "clusters": clusters,
                "model": model,
                "predicted_max_blocking_rate": predicted_max_blocking_rate,
                "solve_ms": solve_ms,
                "weights": weights,
            }
        )
        if notes is not UNSET:
            field_dict["notes"] = notes

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.splitter_model import SplitterModel  # noqa: PLC0415
        from ..models.splitter_response_weights import SplitterResponseWeights  # noqa: PLC0415

        d = dict(src_dict)
        clusters = []
        _clusters = d.pop("clusters")
        for clusters_item_data in _clusters:
            clusters_item = cast(list[str], clusters_item_data)

            clusters.append(clusters_item)

        model = SplitterModel.from_dict(d.pop("model"))

        predicted_max_blocking_rate = d.pop("predicted_max_blocking_rate")

        solve_ms = d.pop("solve_ms")

        weights = SplitterResponseWeights.from_dict(d.pop("weights"))

        notes = cast(list[str], d.pop("notes", UNSET))

        splitter_response = cls(
            clusters=clusters,
            model=model,
            predicted_max_blocking_rate=predicted_max_blocking_rate,
            solve_ms=solve_ms,
            weights=weights,
            notes=notes,
        )

        return splitter_response
