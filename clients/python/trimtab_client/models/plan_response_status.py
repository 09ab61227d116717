from enum import StrEnum


class PlanResponseStatus(StrEnum):
    FEASIBLE = "feasible"
    OPTIMAL = "optimal"
    UNCHANGED = "unchanged"

    def __str__(self) -> str:
        return str(self.value)
