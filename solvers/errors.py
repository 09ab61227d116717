"""Errors a solver raises for requests it cannot serve; the service turns them into 422 problem documents."""

from collections.abc import Sequence


class UnsolvableRequest(ValueError):
    """The snapshot is well formed but this algorithm cannot plan for it (infeasible, or missing data it needs).

    `loc` names the offending field of the request, e.g. ("body", "units", 3, "load").
    """

    def __init__(self, loc: Sequence[str | int], msg: str) -> None:
        super().__init__(msg)
        self.loc = tuple(loc)
        self.msg = msg
