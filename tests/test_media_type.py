"""Bodies that are not JSON by their Content-Type: 415 problem+json on every endpoint that takes a body, before any
parsing (seen 30 Nov 2026: a plan request sent as text/plain was planned, while the splitter answered 422 "Input
should be a valid dictionary"). No Content-Type still reads as JSON, as FastAPI does."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from tests.conftest import make_snapshot
from tests.test_splitter_api import URL as SPLITTER_URL
from tests.test_splitter_api import body as splitter_body

PLAN_URL = "/v1/assignment/plan"


def _requests() -> list[tuple[str, bytes]]:
    return [
        (PLAN_URL, json.dumps(make_snapshot()).encode()),
        (SPLITTER_URL, json.dumps(splitter_body()).encode()),
    ]


@pytest.mark.parametrize(
    "media_type",
    [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/jsonx",
        "text/json",
    ],
)
@pytest.mark.parametrize("request_index", [0, 1])
def test_a_body_that_is_not_json_by_its_content_type_gets_415(
    client: TestClient, media_type: str, request_index: int
) -> None:
    url, content = _requests()[request_index]
    response = client.post(url, content=content, headers={"content-type": media_type})
    assert response.status_code == 415, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["status"] == 415 and problem["instance"] == url
    assert media_type in problem["detail"] and "application/json" in problem["detail"]


@pytest.mark.parametrize(
    "headers",
    [
        {"content-type": "application/json"},
        {"content-type": "Application/JSON; charset=utf-8"},
        {"content-type": "application/vnd.trimtab+json"},
        {},
    ],
    ids=["json", "json with charset, any case", "vendor +json", "none"],
)
@pytest.mark.parametrize("request_index", [0, 1])
def test_json_media_types_and_none_are_read_as_json(
    client: TestClient, headers: dict[str, str], request_index: int
) -> None:
    url, content = _requests()[request_index]
    response = client.post(url, content=content, headers=headers)
    assert response.status_code == 200, response.text


def test_requests_without_a_body_method_are_not_checked(client: TestClient) -> None:
    response = client.get("/healthz", headers={"content-type": "text/plain"})
    assert response.status_code == 200


def test_the_openapi_document_names_415_for_the_body_endpoints(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for url in (PLAN_URL, SPLITTER_URL):
        assert "415" in paths[url]["post"]["responses"]
