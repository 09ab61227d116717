from enum import StrEnum


class CorrelationGlobalParamsVariant(StrEnum):
    IMPROVED = "improved"
    PAPER = "paper"

    def __str__(self) -> str:
        return str(self.value)
