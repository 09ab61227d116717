"""RFC 9457 problem details for every failure: validation (422), size (413), auth (401), overload (503)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from schemas.common import FieldError, Problem
from service.telemetry import count_rejection

PROBLEM_JSON = "application/problem+json"
log = logging.getLogger("trimtab")


class ProblemError(Exception):
    """Raised anywhere in the service to answer with a problem document."""

    def __init__(
        self,
        status: int,
        title: str,
        detail: str,
        errors: Sequence[tuple[Sequence[str | int], str]] = (),
        headers: dict[str, str] | None = None,
        type_: str = "about:blank",
    ) -> None:
        super().__init__(detail)
        self.status, self.title, self.detail, self.type_ = status, title, detail, type_
        self.errors = [FieldError(loc=list(loc), msg=msg) for loc, msg in errors]
        self.headers = headers or {}


# The problem answers every /v1 operation can give, for the OpenAPI document.
PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": Problem, "content": {PROBLEM_JSON: {}}, "description": text}
    for status, text in (
        (400, "Body is not parseable JSON"),
        (401, "Missing or wrong bearer token"),
        (413, "Body over the size limit"),
        (415, "Content-Type is not JSON (application/json or a +json type)"),
        (422, "Invalid or unsatisfiable snapshot; `errors` names the fields"),
        (503, "Solver pool saturated; retry after the Retry-After header"),
    )
}


def invalid_snapshot(errors: Sequence[tuple[Sequence[str | int], str]]) -> ProblemError:
    first = errors[0]
    where = ".".join(str(p) for p in first[0])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return ProblemError(
        422,
        "Invalid snapshot",
        f"{where}: {first[1]}{more}",
        errors,
        type_="https://trimtab.dev/problems/invalid-snapshot",
    )


def problem_response(problem: Problem, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(
        problem.model_dump(exclude_none=True),
        status_code=problem.status,
        media_type=PROBLEM_JSON,
        headers=headers,
    )


def _clean_msg(error: Mapping[str, Any]) -> str:
    msg = str(error.get("msg", "invalid"))
    return msg.removeprefix("Value error, ")


def is_unparseable(errors: Sequence[Mapping[str, Any]]) -> bool:
    """Whether validation failed because the body is not JSON at all (400), not because JSON is invalid (422)."""
    return any(e.get("type") == "json_invalid" for e in errors)


def validation_problem(errors: Sequence[Mapping[str, Any]], path: str) -> Problem:
    """The problem document for pydantic errors: 400 when the body is not JSON, else 422 naming every field."""
    if is_unparseable(errors):
        return Problem(
            type="https://trimtab.dev/problems/unparseable-body",
            title="Body is not parseable JSON",
            status=400,
            detail=f"body: not parseable JSON ({_clean_msg(errors[0])})",
            instance=path,
            errors=[FieldError(loc=["body"], msg=_clean_msg(errors[0]))],
        )
    fields = [FieldError(loc=list(e.get("loc", ())), msg=_clean_msg(e)) for e in errors]
    first = fields[0] if fields else FieldError(loc=["body"], msg="invalid")
    more = f" (and {len(fields) - 1} more)" if len(fields) > 1 else ""
    return Problem(
        type="https://trimtab.dev/problems/invalid-request",
        title="Invalid request",
        status=422,
        detail=f"{'.'.join(str(p) for p in first.loc)}: {first.msg}{more}",
        instance=path,
        errors=fields[:100],
    )


def problem_of(exc: ProblemError, path: str) -> Problem:
    return Problem(
        type=exc.type_,
        title=exc.title,
        status=exc.status,
        detail=exc.detail,
        instance=path,
        errors=exc.errors,
    )


def problem_bytes(problem: Problem) -> bytes:
    return problem.model_dump_json(exclude_none=True).encode()


def _answer(request: Request, problem: Problem, headers: dict[str, str] | None = None) -> JSONResponse:
    count_rejection(request.scope, problem.status)
    return problem_response(problem, headers)


def install_problem_handlers(app: FastAPI) -> None:
    @app.exception_handler(ProblemError)
    async def _problem(request: Request, exc: ProblemError) -> JSONResponse:
        return _answer(request, problem_of(exc, request.url.path), exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _answer(request, validation_problem(exc.errors(), request.url.path))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        problem = Problem(
            title=str(exc.detail) if exc.status_code < 500 else "Server error",
            status=exc.status_code,
            detail=str(exc.detail),
            instance=request.url.path,
        )
        return _answer(request, problem, dict(exc.headers or {}))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s", request.url.path)
        problem = Problem(
            title="Internal error",
            status=500,
            detail="The service failed on a valid request; this is a bug in trimtab.",
            instance=request.url.path,
        )
        return _answer(request, problem)
