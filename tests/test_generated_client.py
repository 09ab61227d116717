"""The OpenAPI-generated client (clients/python/trimtab_client): it is what `make client` makes from the committed
schemas/openapi.json, and it talks to the app, every endpoint, answers and errors alike (httpx ASGI transport)."""

from __future__ import annotations

import asyncio
import filecmp
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from service.logs import REQUEST_ID_HEADER
from service.main import create_app
from service.settings import Settings
from solvers.plan_check import check_plan
from tests.conftest import make_snapshot

ROOT = Path(__file__).resolve().parents[1]
CLIENT_DIR = ROOT / "clients" / "python"
GENERATOR = ROOT / ".venv-openapi" / "bin" / "openapi-python-client"
IGNORED = {".ruff_cache", "__pycache__", ".mypy_cache", ".pytest_cache"}

sys.path.insert(0, str(CLIENT_DIR))
from trimtab_client import AuthenticatedClient, Client  # noqa: E402
from trimtab_client.api.assignment import assignment_list_algorithms, assignment_plan_assignment  # noqa: E402
from trimtab_client.api.operations import operations_healthz, operations_metrics, operations_readyz  # noqa: E402
from trimtab_client.api.splitter import splitter_weights  # noqa: E402
from trimtab_client.models import (  # noqa: E402
    AlgorithmCatalog,
    AssignmentRequest,
    PlanResponse,
    Problem,
    SplitterRequest,
    SplitterResponse,
)

T = TypeVar("T")


def tree(root: Path) -> dict[str, Path]:
    return {
        str(p.relative_to(root)): p
        for p in root.rglob("*")
        if p.is_file() and not IGNORED.intersection(p.relative_to(root).parts)
    }


@pytest.mark.slow
def test_committed_client_is_what_the_generator_makes_now(tmp_path: Path) -> None:
    """A stale client (schemas changed, `make client` not run) or a hand edit fails here."""
    if not GENERATOR.exists():
        pytest.skip(
            f"{GENERATOR.relative_to(ROOT)} missing: `make client` (or `make test`) builds the tool venv"
        )
    out = tmp_path / "python"
    env = {**os.environ, "PATH": f"{GENERATOR.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [
            str(GENERATOR),
            "generate",
            "--path",
            str(ROOT / "schemas" / "openapi.json"),
            "--output-path",
            str(out),
            "--meta",
            "uv",
            "--overwrite",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    fresh, committed = tree(out), tree(CLIENT_DIR)
    assert sorted(fresh) == sorted(committed), "run `make client`: files differ"
    changed = [name for name in fresh if not filecmp.cmp(fresh[name], committed[name], shallow=False)]
    assert changed == [], f"run `make client`: {changed} differ from a fresh generation"


def run(app: Any, call: Callable[[Client], Awaitable[T]], token: str | None = None) -> T:
    """`call` with a generated client whose httpx transport is the app itself (no sockets)."""

    async def go() -> T:
        # httpx_args reach the httpx.AsyncClient the generated client builds itself (with its auth header).
        args = {"httpx_args": {"transport": httpx.ASGITransport(app=app)}}
        base = "http://trimtab.test"
        client = (
            Client(base_url=base, **args)
            if token is None
            else AuthenticatedClient(base_url=base, token=token, **args)
        )
        async with client:
            return await call(client)  # type: ignore[arg-type]

    return asyncio.run(go())


@pytest.fixture(scope="module")
def app() -> Iterator[Any]:
    yield create_app(Settings())


def test_plan_round_trip_through_the_generated_models(app: Any) -> None:
    snapshot = make_snapshot(n_nodes=4, budget={"max_migrations": 3}, time_limit_s=1.0)
    snapshot["algorithm"] = {"name": "flux"}
    body = AssignmentRequest.from_dict(snapshot)
    response = run(app, lambda c: assignment_plan_assignment.asyncio_detailed(client=c, body=body))
    assert response.status_code == 200
    assert response.headers[REQUEST_ID_HEADER]
    plan = response.parsed
    assert isinstance(plan, PlanResponse)
    assert plan.algorithm == "flux" and plan.migrations <= 3
    assert plan.after.load_distance <= plan.before.load_distance
    assert check_plan(snapshot, plan.to_dict()) == []  # the generated models keep every field (`from` too)
    assert {m.unit for m in plan.moves} <= set(plan.assignment.to_dict())


def test_invalid_snapshot_parses_as_a_problem_naming_the_field(app: Any) -> None:
    snapshot = make_snapshot(n_nodes=2)
    snapshot["units"][0]["node"] = "n9"
    body = AssignmentRequest.from_dict(snapshot)
    response = run(app, lambda c: assignment_plan_assignment.asyncio_detailed(client=c, body=body))
    assert response.status_code == 422
    problem = response.parsed
    assert isinstance(problem, Problem)
    assert problem.status == 422 and "n9" in problem.detail
    assert isinstance(problem.errors, list)
    assert [e.loc for e in problem.errors] == [["body", "units", 0, "node"]]


def test_bearer_token_through_the_authenticated_client() -> None:
    guarded = create_app(Settings(auth_token="s3cret"))
    body = AssignmentRequest.from_dict(make_snapshot(n_nodes=2, algorithm={"name": "round-robin"}))
    denied = run(guarded, lambda c: assignment_plan_assignment.asyncio_detailed(client=c, body=body))
    assert denied.status_code == 401 and isinstance(denied.parsed, Problem)
    allowed = run(
        guarded, lambda c: assignment_plan_assignment.asyncio_detailed(client=c, body=body), token="s3cret"
    )
    assert allowed.status_code == 200 and isinstance(allowed.parsed, PlanResponse)


def test_algorithm_catalog(app: Any) -> None:
    catalog = run(app, lambda c: assignment_list_algorithms.asyncio(client=c))
    assert isinstance(catalog, AlgorithmCatalog)
    names = [a.name for a in catalog.algorithms]
    assert "milp" in names and "flux" in names
    milp = catalog.algorithms[names.index("milp")]
    assert milp.paper and milp.parameters.to_dict()["properties"]["name"]


def test_splitter_weights_and_the_model_sent_back(app: Any) -> None:
    first = SplitterRequest.from_dict(
        {
            "connections": [
                {"id": f"c{j}", "weight": w, "cumulative_blocking_s": 0.0}
                for j, w in enumerate((334, 333, 333))
            ],
            "observed_at": 1731400000.0,
        }
    )
    answer = run(app, lambda c: splitter_weights.asyncio(client=c, body=first))
    assert isinstance(answer, SplitterResponse)
    assert sum(answer.weights.to_dict().values()) == 1000
    follow_up = SplitterRequest.from_dict(
        {
            "connections": [
                {"id": f"c{j}", "weight": answer.weights[f"c{j}"], "cumulative_blocking_s": b}
                for j, b in enumerate((0.0, 0.5, 0.1))
            ],
            "observed_at": 1731400001.0,
            "model": answer.model.to_dict(),
        }
    )
    again = run(app, lambda c: splitter_weights.asyncio(client=c, body=follow_up))
    assert isinstance(again, SplitterResponse)
    assert again.model.calls == answer.model.calls + 1


def test_operations_endpoints(app: Any) -> None:
    health = run(app, lambda c: operations_healthz.asyncio(client=c))
    assert health is not None and health.to_dict() == {"status": "ok"}
    ready = run(app, lambda c: operations_readyz.asyncio_detailed(client=c))
    assert ready.status_code == 200
    text = run(app, lambda c: operations_metrics.asyncio(client=c))
    assert isinstance(text, str) and "trimtab_request_seconds" in text
