"""Key group -> Spark partition mappings and `apply_plan`, which routes each row to its key group's partition.

`DataFrame.repartitionById(n, column)` (PySpark >= 4.1) sends a row to the partition its integer column names
(modulo n; null to partition 0), so a placement is applied exactly: every row of key group g lands in partition
`placement.partition_of[g]`. pyspark is imported only where a DataFrame is touched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

PARTITION_COLUMN = "trimtab_partition"


def partition_node_id(partition: int) -> str:
    """The node id a Spark partition has in the snapshots sent to trimtab."""
    return f"p{partition}"


@dataclass(frozen=True)
class Placement:
    """`partition_of[g]` is the Spark partition of key group g, in [0, partitions)."""

    partition_of: tuple[int, ...]
    partitions: int

    def __post_init__(self) -> None:
        if self.partitions < 1:
            raise ValueError(f"partitions must be >= 1, got {self.partitions}")
        bad = [g for g, p in enumerate(self.partition_of) if not 0 <= p < self.partitions]
        if bad:
            raise ValueError(f"key groups {bad[:5]} map outside [0, {self.partitions})")

    @property
    def groups(self) -> int:
        return len(self.partition_of)

    @classmethod
    def contiguous_ranges(cls, groups: int, partitions: int) -> Placement:
        """Flink's assignment (KeyGroupRangeAssignment): key group g runs on operator g * n // G, so each partition
        holds one contiguous range of about G / n key groups, balanced by count only."""
        if groups < 1 or partitions < 1:
            raise ValueError("groups and partitions must be >= 1")
        return cls(tuple(g * partitions // groups for g in range(groups)), partitions)

    @classmethod
    def from_assignment(
        cls, assignment: Mapping[str, str], unit_ids: Sequence[str], node_ids: Sequence[str]
    ) -> Placement:
        """From a plan's `assignment` (unit id -> node id): `unit_ids[g]` names key group g, `node_ids[p]` names
        partition p (the plan's added nodes appended after the existing ones)."""
        index = {node: p for p, node in enumerate(node_ids)}
        return cls(tuple(index[assignment[unit]] for unit in unit_ids), len(node_ids))

    def moved(self, other: Placement) -> list[int]:
        """Key groups whose partition differs in `other`."""
        if other.groups != self.groups:
            raise ValueError(f"placements of {self.groups} and {other.groups} key groups")
        return [
            g for g, (a, b) in enumerate(zip(self.partition_of, other.partition_of, strict=True)) if a != b
        ]

    def rows_per_partition(self, rows_per_group: Sequence[float]) -> np.ndarray:
        """Rows each partition gets when key group g has `rows_per_group[g]` rows."""
        return np.bincount(
            np.asarray(self.partition_of, dtype=np.int64),
            weights=np.asarray(rows_per_group, dtype=np.float64),
            minlength=self.partitions,
        )

    def partition_column(self, key_group: str | Column) -> Column:
        """The Spark Column with each row's planned partition, looked up from its key group column.

        The mapping travels as one array literal (Spark folds the literals into a single constant), so no join and no
        broadcast is needed; `element_at` is 1-based."""
        from pyspark.sql import functions as sf

        column = sf.col(key_group) if isinstance(key_group, str) else key_group
        table = sf.array(*(sf.lit(p) for p in self.partition_of))
        return sf.element_at(table, column + sf.lit(1)).cast("int")


def apply_plan(
    df: DataFrame, placement: Placement, key_group: str | Column, partition_column: str = PARTITION_COLUMN
) -> DataFrame:
    """`df` with a `partition_column` (the planned partition of each row's key group), repartitioned by it with
    `repartitionById`: afterwards `spark_partition_id()` of every row equals its planned partition."""
    with_partition = df.withColumn(partition_column, placement.partition_column(key_group))
    return with_partition.repartitionById(placement.partitions, partition_column)
