from enum import StrEnum


class AlbicParamsPairs(StrEnum):
    BUDGET = "budget"
    ONE = "one"

    def __str__(self) -> str:
        return str(self.value)
