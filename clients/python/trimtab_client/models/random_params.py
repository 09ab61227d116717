from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="RandomParams")


@_attrs_define
class RandomParams:
    """Random: random movable units to random non-draining nodes within the budget (a baseline).

    Attributes:
        name (Literal['random'] | Unset):  Default: 'random'.
        seed (int | Unset):  Default: 0.
    """

    name: Literal["random"] | Unset = "random"
    seed: int | Unset = 0

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        seed = self.seed

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if name is not UNSET:
            field_dict["name"] = name
        if seed is not UNSET:
            field_dict["seed"] = seed

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = cast(Literal["random"] | Unset, d.pop("name", UNSET))
        if name != "random" and not isinstance(name, Unset):
            raise ValueError(f"name must match const 'random', got '{name}'")

        seed = d.pop("seed", UNSET)

        random_params = cls(
            name=name,
            seed=seed,
        )

        return random_params
