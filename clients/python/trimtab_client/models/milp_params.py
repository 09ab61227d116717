from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..models.milp_params_backend import MilpParamsBackend
from ..types import UNSET, Unset

T = TypeVar("T", bound="MilpParams")


@_attrs_define
class MilpParams:
    """Madsen et al. Section 4.3.1: minimize the load distance under a migration budget (CP-SAT or HiGHS).

    Attributes:
        backend (MilpParamsBackend | Unset): cp-sat (OR-Tools, default) or highs (PuLP + HiGHS) on the same model.
            Default: MilpParamsBackend.CP_SAT.
        name (Literal['milp'] | Unset):  Default: 'milp'.
        relative_gap (float | Unset): Stop once the plan is proven within this relative gap. Default: 0.001.
        seed (int | Unset):  Default: 0.
    """

    backend: MilpParamsBackend | Unset = MilpParamsBackend.CP_SAT
    name: Literal["milp"] | Unset = "milp"
    relative_gap: float | Unset = 0.001
    seed: int | Unset = 0

    def to_dict(self) -> dict[str, Any]:
        backend: str | Unset = UNSET
        if not isinstance(self.backend, Unset):
            backend = self.backend.value

        name = self.name

        relative_gap = self.relative_gap

        seed = self.seed

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if backend is not UNSET:
            field_dict["backend"] = backend
        if name is not UNSET:
            field_dict["name"] = name
        if relative_gap is not UNSET:
            field_dict["relative_gap"] = relative_gap
        if seed is not UNSET:
            field_dict["seed"] = seed

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        _backend = d.pop("backend", UNSET)
        backend: MilpParamsBackend | Unset
        if isinstance(_backend, Unset):
            backend = UNSET
        else:
            backend = MilpParamsBackend(_backend)

        name = cast(Literal["milp"] | Unset, d.pop("name", UNSET))
        if name != "milp" and not isinstance(name, Unset):
            raise ValueError(f"name must match const 'milp', got '{name}'")

        relative_gap = d.pop("relative_gap", UNSET)

        seed = d.pop("seed", UNSET)

        milp_params = cls(
            backend=backend,
            name=name,
            relative_gap=relative_gap,
            seed=seed,
        )

        return milp_params
