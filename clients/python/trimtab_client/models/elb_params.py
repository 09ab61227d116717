from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..models.elb_params_variant import ElbParamsVariant
from ..types import UNSET, Unset

T = TypeVar("T", bound="ElbParams")


@_attrs_define
class ElbParams:
    """Guo & Zhou Algorithm 1 (ELB): bring every instance's latest-window load into [lower, upper] by moving
    substreams from overloaded to underloaded instances, largest first; may add or remove instances
    (parallelism ceil(2w / (upper + lower))).

        Attributes:
            lower (float | None | Unset): v: lowest acceptable instance load, in load units.
            name (Literal['elb'] | Unset):  Default: 'elb'.
            new_node_capacity (float | None | Unset): Capacity of instances ELB adds (within a node's capacity bounds);
                default the mean capacity of the non-draining nodes.
            tolerance (float | None | Unset): Instead of lower/upper: [v, u] = mean x (1 -/+ tolerance), the mean being the
                latest-window load per non-draining node (keeps the parallelism). Default 0.1 when neither is given.
            upper (float | None | Unset): u: highest acceptable instance load, in load units.
            variant (ElbParamsVariant | Unset): improved (default): [lower, upper] is the range of a node of the mean
                capacity, scaled by capacity for the others; acts only when an instance is outside its range; repairs the
                greedy's plan to end inside the range with the least state moved it can, and says in notes why when the range is
                unreachable. paper: Algorithm 1 as published (load units, always runs), for reproductions. Default:
                ElbParamsVariant.IMPROVED.
    """

    lower: float | None | Unset = UNSET
    name: Literal["elb"] | Unset = "elb"
    new_node_capacity: float | None | Unset = UNSET
    tolerance: float | None | Unset = UNSET
    upper: float | None | Unset = UNSET
    variant: ElbParamsVariant | Unset = ElbParamsVariant.IMPROVED

    def to_dict(self) -> dict[str, Any]:
        lower: float | None | Unset
        if isinstance(self.lower, Unset):
            lower = UNSET
        else:
            lower = self.lower

        name = self.name

        new_node_capacity: float | None | Unset
        if isinstance(self.new_node_capacity, Unset):
            new_node_capacity = UNSET
        else:
            new_node_capacity = self.new_node_capacity

        tolerance: float | None | Unset
        if isinstance(self.tolerance, Unset):
            tolerance = UNSET
        else:
            tolerance = self.tolerance

        upper: float | None | Unset
        if isinstance(self.upper, Unset):
            upper = UNSET
        else:
            upper = self.upper

        variant: str | Unset = UNSET
        if not isinstance(self.variant, Unset):
            variant = self.variant.value

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if lower is not UNSET:
            field_dict["lower"] = lower
        if name is not UNSET:
            field_dict["name"] = name
        if new_node_capacity is not UNSET:
            field_dict["new_node_capacity"] = new_node_capacity
        if tolerance is not UNSET:
            field_dict["tolerance"] = tolerance
        if upper is not UNSET:
            field_dict["upper"] = upper
        if variant is not UNSET:
            field_dict["variant"] = variant

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_lower(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        lower = _parse_lower(d.pop("lower", UNSET))

        name = cast(Literal["elb"] | Unset, d.pop("name", UNSET))
        if name != "elb" and not isinstance(name, Unset):
            raise ValueError(f"name must match const 'elb', got '{name}'")

        def _parse_new_node_capacity(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        new_node_capacity = _parse_new_node_capacity(d.pop("new_node_capacity", UNSET))

        def _parse_tolerance(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        tolerance = _parse_tolerance(d.pop("tolerance", UNSET))

        def _parse_upper(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        upper = _parse_upper(d.pop("upper", UNSET))

        _variant = d.pop("variant", UNSET)
        variant: ElbParamsVariant | Unset
        if isinstance(_variant, Unset):
            variant = UNSET
        else:
            variant = ElbParamsVariant(_variant)

        elb_params = cls(
            lower=lower,
            name=name,
            new_node_capacity=new_node_capacity,
            tolerance=tolerance,
            upper=upper,
            variant=variant,
        )

        return elb_params
