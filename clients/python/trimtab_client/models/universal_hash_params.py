from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="UniversalHashParams")


@_attrs_define
class UniversalHashParams:
    """UHLB baseline: substream -> node by a seeded 2-universal hash ((a x + b) mod P) mod n.

    Attributes:
        name (Literal['universal-hash'] | Unset):  Default: 'universal-hash'.
        seed (int | Unset): Draws the hash function from the family. Default: 0.
    """

    name: Literal["universal-hash"] | Unset = "universal-hash"
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
        name = cast(Literal["universal-hash"] | Unset, d.pop("name", UNSET))
        if name != "universal-hash" and not isinstance(name, Unset):
            raise ValueError(f"name must match const 'universal-hash', got '{name}'")

        seed = d.pop("seed", UNSET)

        universal_hash_params = cls(
            name=name,
            seed=seed,
        )

        return universal_hash_params
