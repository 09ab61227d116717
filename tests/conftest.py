"""Shared fixtures: an in-process client (TestClient) and snapshot builders."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import settings

from service.main import create_app
from service.settings import Settings

# Hypothesis explores fresh random examples on every local run (that is how it finds rare cases), but CI
# (HYPOTHESIS_PROFILE=ci, set by .ci/run) runs the same examples every time, so that a red CI is always a regression of
# the change under test and reproducible, never a rare example drawn that day. Tests' own @settings still apply.
settings.register_profile("ci", derandomize=True, print_blob=True)
# Fresh randomness with the reproduction blob printed: for hunting rare examples (HYPOTHESIS_PROFILE=hunt).
settings.register_profile("hunt", print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session")
def client() -> Iterator[TestClient]:
    with TestClient(create_app(Settings())) as c:
        yield c


def make_snapshot(
    n_nodes: int = 4, units_per_node: int = 6, seed: int = 0, windows: int | None = None, **extra: Any
) -> dict[str, Any]:
    """A small valid /v1/assignment/plan request with skewed loads (optionally load series of `windows`)."""
    rng = random.Random(seed)
    nodes = [{"id": f"n{i}", "capacity": 100.0} for i in range(n_nodes)]
    units = []
    for i in range(n_nodes):
        for j in range(units_per_node):
            base = rng.uniform(1.0, 6.0) * (1.5 if i == 0 else 1.0)
            load: float | list[float] = (
                round(base, 3)
                if windows is None
                else [round(base * rng.uniform(0.5, 1.5), 3) for _ in range(windows)]
            )
            units.append(
                {"id": f"u{i}-{j}", "node": f"n{i}", "load": load, "state_size": float(rng.randint(1, 9))}
            )
    return {"nodes": nodes, "units": units, **extra}


PLAN = "/v1/assignment/plan"
PROBLEM_JSON = "application/problem+json"


def assert_problem(response: Any, status: int, loc: tuple[str | int, ...] | None = None) -> dict[str, Any]:
    """`response` is an RFC 9457 problem document with `status`; with `loc`, one of its errors names that field
    (an error whose loc starts with `loc`: pydantic may add the union member it tried, e.g. 'constrained-float')."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM_JSON), response.headers
    problem = response.json()
    assert problem["status"] == status
    assert problem["title"] and problem["detail"]
    if loc is not None:
        locs = [tuple(e["loc"]) for e in problem.get("errors", [])]
        assert any(found[: len(loc)] == loc for found in locs), (loc, problem)
        assert ".".join(str(p) for p in loc) in problem["detail"] or len(locs) > 1, problem
    return problem
