from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.unit_resources import UnitResources


T = TypeVar("T", bound="Unit")


@_attrs_define
class Unit:
    """
    Attributes:
        id (str): An id: no spaces.
        load (float | list[float]): Mean load, or a series of loads (one per window).
        node (None | str | Unset): Current node; null for an initial placement.
        operator (None | str | Unset):
        pinned (bool | Unset): A pinned unit never moves. Default: False.
        resources (UnitResources | Unset):
        state_size (float | Unset): What moving the unit costs (bytes or any unit). Default: 0.0.
    """

    id: str
    load: float | list[float]
    node: None | str | Unset = UNSET
    operator: None | str | Unset = UNSET
    pinned: bool | Unset = False
    resources: UnitResources | Unset = UNSET
    state_size: float | Unset = 0.0

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        load: float | list[float]
        if isinstance(self.load, list):
            load = self.load

        else:
            load = self.load

        node: None | str | Unset
        if isinstance(self.node, Unset):
            node = UNSET
        else:
            node = self.node

        operator: None | str | Unset
        if isinstance(self.operator, Unset):
            operator = UNSET
        else:
            operator = self.operator

        pinned = self.pinned

        resources: dict[str, Any] | Unset = UNSET
        if not isinstance(self.resources, Unset):
            resources = self.resources.to_dict()

        state_size = self.state_size

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "id": id,
                "load": load,
            }
        )
        if node is not UNSET:
            field_dict["node"] = node
        if operator is not UNSET:
            field_dict["operator"] = operator
        if pinned is not UNSET:
            field_dict["pinned"] = pinned
        if resources is not UNSET:
            field_dict["resources"] = resources
        if state_size is not UNSET:
            field_dict["state_size"] = state_size

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.unit_resources import UnitResources  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        def _parse_load(data: object) -> float | list[float]:
            try:
                if not isinstance(data, list):
                    raise TypeError()
                load_type_1 = cast(list[float], data)

                return load_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(float | list[float], data)

        load = _parse_load(d.pop("load"))

        def _parse_node(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        node = _parse_node(d.pop("node", UNSET))

        def _parse_operator(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        operator = _parse_operator(d.pop("operator", UNSET))

        pinned = d.pop("pinned", UNSET)

        _resources = d.pop("resources", UNSET)
        resources: UnitResources | Unset
        if isinstance(_resources, Unset):
            resources = UNSET
        else:
            resources = UnitResources.from_dict(_resources)

        state_size = d.pop("state_size", UNSET)

        unit = cls(
            id=id,
            load=load,
            node=node,
            operator=operator,
            pinned=pinned,
            resources=resources,
            state_size=state_size,
        )

        return unit
