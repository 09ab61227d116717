from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.plan_response_status import PlanResponseStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.lower_bound import LowerBound
    from ..models.move import Move
    from ..models.plan_response_assignment import PlanResponseAssignment
    from ..models.plan_stats import PlanStats
    from ..models.scaling import Scaling


T = TypeVar("T", bound="PlanResponse")


@_attrs_define
class PlanResponse:
    """
    Attributes:
        after (PlanStats): Statistics of one state of the cluster (before or after the plan), recomputed from the
            assignment.
        algorithm (str):
        assignment (PlanResponseAssignment):
        before (PlanStats): Statistics of one state of the cluster (before or after the plan), recomputed from the
            assignment.
        load_moved (float): Sum of the mean loads of the moved units.
        migration_cost (float):
        migrations (int):
        moves (list[Move]):
        scaling (Scaling):
        solve_ms (float):
        state_moved_share (float): migration_cost / total state size (0 when there is no state).
        status (PlanResponseStatus):
        lower_bound (LowerBound | Unset):
        notes (list[str] | Unset):
    """

    after: PlanStats
    algorithm: str
    assignment: PlanResponseAssignment
    before: PlanStats
    load_moved: float
    migration_cost: float
    migrations: int
    moves: list[Move]
    scaling: Scaling
    solve_ms: float
    state_moved_share: float
    status: PlanResponseStatus
    lower_bound: LowerBound | Unset = UNSET
    notes: list[str] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        after = self.after.to_dict()

        algorithm = self.algorithm

        assignment = self.assignment.to_dict()

        before = self.before.to_dict()

        load_moved = self.load_moved

        migration_cost = self.migration_cost

        migrations = self.migrations

        moves = []
        for moves_item_data in self.moves:
            moves_item = moves_item_data.to_dict()
            moves.append(moves_item)

        scaling = self.scaling.to_dict()

        solve_ms = self.solve_ms

        state_moved_share = self.state_moved_share

        status = self.status.value

        lower_bound: dict[str, Any] | Unset = UNSET
        if not isinstance(self.lower_bound, Unset):
            lower_bound = self.lower_bound.to_dict()

        notes: list[str] | Unset = UNSET
        if not isinstance(self.notes, Unset):
            notes = self.notes

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "after": after,
                "algorithm": algorithm,
                "assignment": assignment,
                "before": before,
                "load_moved": load_moved,
                "migration_cost": migration_cost,
                "migrations": migrations,
                "moves": moves,
                "scaling": scaling,
                "solve_ms": solve_ms,
                "state_moved_share": state_moved_share,
                "status": status,
            }
        )
        if lower_bound is not UNSET:
            field_dict["lower_bound"] = lower_bound
        if notes is not UNSET:
            field_dict["notes"] = notes

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.lower_bound import LowerBound  # noqa: PLC0415
        from ..models.move import Move  # noqa: PLC0415
        from ..models.plan_response_assignment import PlanResponseAssignment  # noqa: PLC0415
        from ..models.plan_stats import PlanStats  # noqa: PLC0415
        from ..models.scaling import Scaling  # noqa: PLC0415

        d = dict(src_dict)
        after = PlanStats.from_dict(d.pop("after"))

        algorithm = d.pop("algorithm")

        assignment = PlanResponseAssignment.from_dict(d.pop("assignment"))

        before = PlanStats.from_dict(d.pop("before"))

        load_moved = d.pop("load_moved")

        migration_cost = d.pop("migration_cost")

        migrations = d.pop("migrations")

        moves = []
        _moves = d.pop("moves")
        for moves_item_data in _moves:
            moves_item = Move.from_dict(moves_item_data)

            moves.append(moves_item)

        scaling = Scaling.from_dict(d.pop("scaling"))

        solve_ms = d.pop("solve_ms")

        state_moved_share = d.pop("state_moved_share")

        status = PlanResponseStatus(d.pop("status"))

        _lower_bound = d.pop("lower_bound", UNSET)
        lower_bound: LowerBound | Unset
        if isinstance(_lower_bound, Unset):
            lower_bound = UNSET
        else:
            lower_bound = LowerBound.from_dict(_lower_bound)

        notes = cast(list[str], d.pop("notes", UNSET))

        plan_response = cls(
            after=after,
            algorithm=algorithm,
            assignment=assignment,
            before=before,
            load_moved=load_moved,
            migration_cost=migration_cost,
            migrations=migrations,
            moves=moves,
            scaling=scaling,
            solve_ms=solve_ms,
            state_moved_share=state_moved_share,
            status=status,
            lower_bound=lower_bound,
            notes=notes,
        )

        return plan_response
