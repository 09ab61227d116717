from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="Budget")


@_attrs_define
class Budget:
    """
    Attributes:
        max_migration_cost (float | None | Unset): Sum of the moved units' state_size stays at or below this.
        max_migrations (int | None | Unset): At most this many units move (values above the number of units mean no
            count limit).
    """

    max_migration_cost: float | None | Unset = UNSET
    max_migrations: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        max_migration_cost: float | None | Unset
        if isinstance(self.max_migration_cost, Unset):
            max_migration_cost = UNSET
        else:
            max_migration_cost = self.max_migration_cost

        max_migrations: int | None | Unset
        if isinstance(self.max_migrations, Unset):
            max_migrations = UNSET
        else:
            max_migrations = self.max_migrations

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if max_migration_cost is not UNSET:
            field_dict["max_migration_cost"] = max_migration_cost
        if max_migrations is not UNSET:
            field_dict["max_migrations"] = max_migrations

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_max_migration_cost(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        max_migration_cost = _parse_max_migration_cost(d.pop("max_migration_cost", UNSET))

        def _parse_max_migrations(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_migrations = _parse_max_migrations(d.pop("max_migrations", UNSET))

        budget = cls(
            max_migration_cost=max_migration_cost,
            max_migrations=max_migrations,
        )

        return budget
