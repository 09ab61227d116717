"""trimtab for PySpark: key groups, window statistics, query-progress series, an HTTP client, checked plans applied
with `DataFrame.repartitionById`. Talks to the service over HTTP only (ships alone with spark-submit --py-files).

The pure pieces (key groups, client, planner, placement) import without pyspark; `statistics` and `progress` need it.
See docs/spark.md."""

from clients.spark.client import RetryPolicy, ServiceRejected, ServiceUnavailable, TrimtabClient
from clients.spark.keygroups import key_group, key_group_column, spark_xxhash64
from clients.spark.placement import Placement, apply_plan
from clients.spark.planner import Budget, Planner, PlanOutcome, PlanRefused, check_plan

__all__ = [
    "Budget",
    "Placement",
    "PlanOutcome",
    "PlanRefused",
    "Planner",
    "RetryPolicy",
    "ServiceRejected",
    "ServiceUnavailable",
    "TrimtabClient",
    "apply_plan",
    "check_plan",
    "key_group",
    "key_group_column",
    "spark_xxhash64",
]
