from enum import StrEnum


class CorrelationPairwiseParamsVariant(StrEnum):
    IMPROVED_SELECTIVE_EXCHANGE = "improved-selective-exchange"
    IMPROVED_TWO_WAY = "improved-two-way"
    ONE_WAY = "one-way"
    SELECTIVE_EXCHANGE = "selective-exchange"
    TWO_WAY = "two-way"

    def __str__(self) -> str:
        return str(self.value)
