"""Parameters of each algorithm of POST /v1/assignment/plan, one model per algorithm, told apart by `name`.

To add an algorithm: define its parameter model here (with `name: Literal[...]`), add it to `AlgorithmParams`, and
register its solver adapter in `service/algorithms.py`.
"""

from typing import Annotated, Literal

from pydantic import Field

from schemas.common import StrictModel


class MilpParams(StrictModel):
    """Madsen et al. Section 4.3.1: minimize the load distance under a migration budget (CP-SAT or HiGHS)."""

    name: Literal["milp"] = "milp"
    backend: Literal["cp-sat", "highs"] = Field(
        default="cp-sat", description="cp-sat (OR-Tools, default) or highs (PuLP + HiGHS) on the same model."
    )
    relative_gap: float = Field(
        default=0.001, ge=0.0, le=1.0, description="Stop once the plan is proven within this relative gap."
    )
    seed: int = Field(default=0, ge=0, le=2**31 - 1)


class FluxParams(StrictModel):
    """Flux (Shah et al., as described by Madsen et al.): pair the i-th most with the i-th least loaded node and move
    the best-fitting partition, repeat within the budget."""

    name: Literal["flux"] = "flux"


class LargestLoadFirstParams(StrictModel):
    """Largest-load-first: the most loaded node gives its largest unit that lowers the peak to the least loaded."""

    name: Literal["largest-load-first"] = "largest-load-first"


class RoundRobinParams(StrictModel):
    """Round-robin: units spread by count over the non-draining nodes, ignoring load (a baseline)."""

    name: Literal["round-robin"] = "round-robin"


class RandomParams(StrictModel):
    """Random: random movable units to random non-draining nodes within the budget (a baseline)."""

    name: Literal["random"] = "random"
    seed: int = Field(default=0, ge=0, le=2**31 - 1)


AlgorithmParams = Annotated[
    MilpParams | FluxParams | LargestLoadFirstParams | RoundRobinParams | RandomParams,
    Field(discriminator="name"),
]
