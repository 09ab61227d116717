"""The `trimtab` command line: serve the API, ask for a plan (from a running service or in-process), check a plan
with the independent validator, list the algorithms.

    trimtab serve [--host H] [--port P] [--workers N]
    trimtab plan SNAPSHOT.json [--url URL] [--algorithm NAME] [--output PLAN.json] [--json]
    trimtab validate SNAPSHOT.json PLAN.json
    trimtab algorithms [--url URL]

Exit codes: 0 done; 1 the plan violates an invariant (validate), or the service failed or could not be reached;
2 bad input (a file that is missing, not JSON, or not a valid snapshot / plan: one line on stderr naming it).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any, NoReturn

import httpx
import typer
from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.table import Table

from schemas.assignment import AssignmentRequest, PlanResponse
from solvers.plan_check import check_plan

EXIT_VIOLATION = 1  # also: the service failed or could not be reached
EXIT_BAD_INPUT = 2  # as click's own usage errors
PLAN_PATH = "/v1/assignment/plan"
ALGORITHMS_PATH = "/v1/algorithms"
# Solver time limit plus the HTTP and validation around it; the service caps time_limit_s at 60 s by default.
HTTP_TIMEOUT_S = 300.0

app = typer.Typer(
    help="trimtab: load-balancing plans for stream-processing engines.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)
out = Console()
err = Console(stderr=True)

UrlOption = Annotated[
    str | None,
    typer.Option(
        help="Base URL of a running service; without it the app runs in this process.", show_default=False
    ),
]
TokenOption = Annotated[
    str | None,
    typer.Option(
        envvar="TRIMTAB_AUTH_TOKEN", help="Bearer token for a service with auth on.", show_default=False
    ),
]


class CliFailure(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def fail(message: str, code: int) -> NoReturn:
    raise CliFailure(message, code)


def read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        fail(f"{path}: no such file", EXIT_BAD_INPUT)
    except IsADirectoryError:
        fail(f"{path}: is a directory, not a JSON file", EXIT_BAD_INPUT)
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"{path}: cannot read: {exc}", EXIT_BAD_INPUT)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        fail(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", EXIT_BAD_INPUT)


def first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    first = errors[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first['msg'].removeprefix('Value error, ')}{more}"


def read_model(path: Path, model: type[BaseModel], what: str) -> dict[str, Any]:
    """The file's JSON, after checking it is a valid `model` (the service's own schema) so that a wrong file is
    named here in one line instead of failing somewhere later."""
    data = read_json(path)
    try:
        model.model_validate(data)
    except ValidationError as exc:
        fail(f"{path}: not a valid {what}: {first_error(exc)}", EXIT_BAD_INPUT)
    assert isinstance(data, dict)  # a model validated it
    return data


async def call_service(
    url: str | None, method: str, path: str, token: str | None, body: Any = None
) -> httpx.Response:
    """One request to the service at `url`, or to an app made in this process (its lifespan run around the call)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if url is not None:
        async with httpx.AsyncClient(base_url=url, timeout=HTTP_TIMEOUT_S, headers=headers) as http:
            return await http.request(method, path, json=body)
    from service.main import create_app  # the app only when it runs here: `--url` calls stay light
    from service.settings import get_settings

    local = create_app(
        get_settings().model_copy(update={"log_level": "warning"})
    )  # no access lines on a terminal
    transport = httpx.ASGITransport(app=local)
    async with (
        local.router.lifespan_context(local),
        httpx.AsyncClient(transport=transport, base_url="http://trimtab.local", headers=headers) as http,
    ):
        return await http.request(method, path, json=body)


def request(url: str | None, method: str, path: str, token: str | None, body: Any = None) -> Any:
    """The JSON answer of a 200; anything else fails with the problem's one-line detail."""
    where = url or "in-process service"
    try:
        response = asyncio.run(call_service(url, method, path, token, body))
    except httpx.HTTPError as exc:
        fail(f"cannot reach {where}: {exc or type(exc).__name__}", EXIT_VIOLATION)
    if response.status_code == 200:
        return response.json()
    try:
        problem = response.json()
        detail = f"{problem.get('title', 'error')}: {problem.get('detail', '')}"
    except ValueError:
        detail = response.text[:200]
    # 422: the snapshot itself is wrong, as a file that does not parse.
    code = EXIT_BAD_INPUT if response.status_code == 422 else EXIT_VIOLATION
    fail(f"{where} answered {response.status_code}: {detail}", code)


def number(value: float | None) -> str:
    return "-" if value is None else f"{value:,.4g}"


def print_plan(plan: dict[str, Any], problems: list[str], max_moves: int) -> None:
    moves = Table(title=f"{plan['algorithm']}: {plan['status']}, {plan['migrations']} moves")
    for column in ("unit", "from", "to", "cost"):
        moves.add_column(column, justify="right" if column == "cost" else "left")
    for move in plan["moves"][:max_moves]:
        moves.add_row(move["unit"], str(move["from"]), move["to"], number(move["cost"]))
    hidden = len(plan["moves"]) - max_moves
    if hidden > 0:
        moves.add_row(f"... {hidden} more", "", "", "")
    out.print(moves)
    stats = Table(title="before / after")
    for column in ("metric", "before", "after"):
        stats.add_column(column, justify="left" if column == "metric" else "right")
    for key in ("load_distance", "max_utilization", "min_utilization", "imbalance", "parallelism"):
        stats.add_row(key, number(plan["before"][key]), number(plan["after"][key]))
    stats.add_row("lower bound (load distance)", "", number(plan["lower_bound"].get("load_distance")))
    stats.add_row("migration cost", "", number(plan["migration_cost"]))
    stats.add_row("solve ms", "", number(plan["solve_ms"]))
    out.print(stats)
    scaling = plan.get("scaling") or {}
    for key in ("add_nodes", "remove_nodes"):
        if scaling.get(key):
            out.print(f"{key.replace('_', ' ')}: {', '.join(scaling[key])}")
    for note in plan.get("notes", []):
        out.print(f"note: {note}")
    out.print("independent validator: " + ("ok" if not problems else f"{len(problems)} violations"))


def run_cli(action: Any) -> None:
    """Run a command body; a CliFailure becomes its one line on stderr and its exit code."""
    try:
        action()
    except CliFailure as exc:
        err.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(exc.code) from None


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Default: TRIMTAB_HOST or 127.0.0.1.")] = None,
    port: Annotated[int | None, typer.Option(help="Default: TRIMTAB_PORT or 8000.")] = None,
    workers: Annotated[
        int | None, typer.Option(help="uvicorn worker processes. Default: TRIMTAB_WORKERS or 1.")
    ] = None,
) -> None:
    """Serve the HTTP API (uvicorn, JSON logs on stderr, problem+json for unparseable HTTP, graceful SIGTERM)."""
    from service.server import run_server

    run_server(host, port, workers)


@app.command()
def plan(
    snapshot: Annotated[
        Path, typer.Argument(help="The statistics snapshot (a /v1/assignment/plan request body).")
    ],
    url: UrlOption = None,
    algorithm: Annotated[
        str | None, typer.Option(help="Algorithm name (see `trimtab algorithms`); default: the snapshot's.")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Also write the plan JSON here.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan JSON instead of tables.")] = False,
    max_moves: Annotated[
        int, typer.Option(min=0, help="Moves listed in the table (all are in -o / --json).")
    ] = 50,
    token: TokenOption = None,
) -> None:
    """Ask for a plan and print its moves and before/after metrics."""

    def action() -> None:
        body = read_json(snapshot)
        if not isinstance(body, dict):
            fail(f"{snapshot}: not a valid snapshot: the top level must be a JSON object", EXIT_BAD_INPUT)
        if algorithm is not None:
            current = body.get("algorithm")
            same = isinstance(current, dict) and current.get("name") == algorithm
            body["algorithm"] = current if same else {"name": algorithm}
        answer = request(url, "POST", PLAN_PATH, token, body)
        problems = check_plan(body, answer)
        if output is not None:
            output.write_text(json.dumps(answer, indent=2) + "\n", encoding="utf-8")
        if as_json:
            out.print_json(data=answer)
        else:
            print_plan(answer, problems, max_moves)
        if problems:
            fail(f"the plan violates: {'; '.join(problems[:3])}", EXIT_VIOLATION)

    run_cli(action)


@app.command()
def validate(
    snapshot: Annotated[Path, typer.Argument(help="The snapshot the plan was made for.")],
    plan_file: Annotated[
        Path, typer.Argument(metavar="PLAN", help="The plan (a /v1/assignment/plan answer).")
    ],
) -> None:
    """Check a plan against its snapshot with the independent validator (exit 1 on any violation)."""

    def action() -> None:
        body = read_model(snapshot, AssignmentRequest, "snapshot")
        answer = read_model(plan_file, PlanResponse, "plan")
        problems = check_plan(body, answer)
        if problems:
            for problem in problems:
                out.print(f"violation: {problem}", markup=False, highlight=False)
            fail(f"{plan_file}: {len(problems)} violations", EXIT_VIOLATION)
        out.print(f"{plan_file}: valid for {snapshot} ({answer['migrations']} moves)", markup=False)

    run_cli(action)


@app.command()
def algorithms(url: UrlOption = None, token: TokenOption = None) -> None:
    """List the algorithms, what they need and the paper behind each."""

    def action() -> None:
        catalog = request(url, "GET", ALGORITHMS_PATH, token)
        table = Table(title="algorithms (algorithm.name)")
        for column in ("name", "needs", "summary", "paper"):
            table.add_column(column, overflow="fold")
        for entry in catalog["algorithms"]:
            table.add_row(entry["name"], ", ".join(entry["needs"]) or "-", entry["summary"], entry["paper"])
        out.print(table)

    run_cli(action)


if __name__ == "__main__":
    app()
