from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.model_connection import ModelConnection


T = TypeVar("T", bound="SplitterModel")


@_attrs_define
class SplitterModel:
    """What the splitter model learned so far; send it back unchanged on the next call.

    Attributes:
        calls (int): Calls that built this model (saturates at 2**53).
        connections (list[ModelConnection]):
        observed_at (float): observed_at of the previous call.
        resolution (int):
        version (int): Model format version; this service writes 3 and migrates (1, 2).
        reference_rate (float | Unset): Tuples per second the region's workers took at best recently (from tuples_sent;
            0: none). Default: 0.0.
    """

    calls: int
    connections: list[ModelConnection]
    observed_at: float
    resolution: int
    version: int
    reference_rate: float | Unset = 0.0

    def to_dict(self) -> dict[str, Any]:
        calls = self.calls

        connections = []
        for connections_item_data in self.connections:
            connections_item = connections_item_data.to_dict()
            connections.append(connections_item)

        observed_at = self.observed_at

        resolution = self.resolution

        version = self.version

        reference_rate = self.reference_rate

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "calls": calls,
                "connections": connections,
                "observed_at": observed_at,
                "resolution": resolution,
                "version": version,
            }
        )
        if reference_rate is not UNSET:
            field_dict["reference_rate"] = reference_rate

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.model_connection import ModelConnection  # noqa: PLC0415

        d = dict(src_dict)
        calls = d.pop("calls")

        connections = []
        _connections = d.pop("connections")
        for connections_item_data in _connections:
            connections_item = ModelConnection.from_dict(connections_item_data)

            connections.append(connections_item)

        observed_at = d.pop("observed_at")

        resolution = d.pop("resolution")

        version = d.pop("version")

        reference_rate = d.pop("reference_rate", UNSET)

        splitter_model = cls(
            calls=calls,
            connections=connections,
            observed_at=observed_at,
            resolution=resolution,
            version=version,
            reference_rate=reference_rate,
        )

        return splitter_model
