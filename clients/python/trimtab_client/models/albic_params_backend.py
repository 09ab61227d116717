from enum import StrEnum


class AlbicParamsBackend(StrEnum):
    CP_SAT = "cp-sat"
    HIGHS = "highs"

    def __str__(self) -> str:
        return str(self.value)
