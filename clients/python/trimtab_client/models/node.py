from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.node_resources import NodeResources


T = TypeVar("T", bound="Node")


@_attrs_define
class Node:
    """
    Attributes:
        id (str): An id: no spaces.
        capacity (float | Unset): In load units; a load is a percent of a 100 node. Default: 100.0.
        draining (bool | Unset): Marked for removal: units leave it, none arrive. Default: False.
        resources (NodeResources | Unset): Capacities of further resources (memory, network...). A unit's usage of such
            a resource is capped per node; the main `load` is the one balanced (Madsen et al., multi-dimensional load).
    """

    id: str
    capacity: float | Unset = 100.0
    draining: bool | Unset = False
    resources: NodeResources | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        capacity = self.capacity

        draining = self.draining

        resources: dict[str, Any] | Unset = UNSET
        if not isinstance(self.resources, Unset):
            resources = self.resources.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "id": id,
            }
        )
        if capacity is not UNSET:
            field_dict["capacity"] = capacity
        if draining is not UNSET:
            field_dict["draining"] = draining
        if resources is not UNSET:
            field_dict["resources"] = resources

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.node_resources import NodeResources  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        capacity = d.pop("capacity", UNSET)

        draining = d.pop("draining", UNSET)

        _resources = d.pop("resources", UNSET)
        resources: NodeResources | Unset
        if isinstance(_resources, Unset):
            resources = UNSET
        else:
            resources = NodeResources.from_dict(_resources)

        node = cls(
            id=id,
            capacity=capacity,
            draining=draining,
            resources=resources,
        )

        return node
