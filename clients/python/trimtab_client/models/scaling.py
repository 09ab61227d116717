from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="Scaling")


@_attrs_define
class Scaling:
    """
    Attributes:
        add_nodes (list[str] | Unset): New nodes the plan asks for (ELB scale-out).
        drain_nodes (list[str] | Unset): Nodes the plan marks for removal (scale-in): nothing moves onto them; send them
            as draining from now on; they are released once empty.
        new_node_capacity (float | Unset): Capacity the plan assumes for each added node. Default: 100.0.
        remove_nodes (list[str] | Unset): Nodes the plan empties; they can be released.
    """

    add_nodes: list[str] | Unset = UNSET
    drain_nodes: list[str] | Unset = UNSET
    new_node_capacity: float | Unset = 100.0
    remove_nodes: list[str] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        add_nodes: list[str] | Unset = UNSET
        if not isinstance(self.add_nodes, Unset):
            add_nodes = self.add_nodes

        drain_nodes: list[str] | Unset = UNSET
        if not isinstance(self.drain_nodes, Unset):
            drain_nodes = self.drain_nodes

        new_node_capacity = self.new_node_capacity

        remove_nodes: list[str] | Unset = UNSET
        if not isinstance(self.remove_nodes, Unset):
            remove_nodes = self.remove_nodes

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if add_nodes is not UNSET:
            field_dict["add_nodes"] = add_nodes
        if drain_nodes is not UNSET:
            field_dict["drain_nodes"] = drain_nodes
        if new_node_capacity is not UNSET:
            field_dict["new_node_capacity"] = new_node_capacity
        if remove_nodes is not UNSET:
            field_dict["remove_nodes"] = remove_nodes

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        add_nodes = cast(list[str], d.pop("add_nodes", UNSET))

        drain_nodes = cast(list[str], d.pop("drain_nodes", UNSET))

        new_node_capacity = d.pop("new_node_capacity", UNSET)

        remove_nodes = cast(list[str], d.pop("remove_nodes", UNSET))

        scaling = cls(
            add_nodes=add_nodes,
            drain_nodes=drain_nodes,
            new_node_capacity=new_node_capacity,
            remove_nodes=remove_nodes,
        )

        return scaling
