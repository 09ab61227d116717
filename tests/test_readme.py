"""The README's curl example is a real request: it must keep working and give the plan the README describes."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fastapi.testclient import TestClient

from solvers.plan_check import check_plan

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_curl_example_gives_the_documented_plan(client: TestClient) -> None:
    match = re.search(r"-d '(\{.*?\})'", README.read_text(), re.S)
    assert match, "the README lost its curl example"
    body = json.loads(match.group(1))
    response = client.post("/v1/assignment/plan", json=body)
    assert response.status_code == 200, response.text
    plan = response.json()
    assert check_plan(body, plan) == []
    assert plan["status"] == "optimal"
    assert plan["after"]["load_distance"] == 0.0
    assert plan["scaling"]["remove_nodes"] == ["n3"]
    assert {(m["unit"], m["from"], m["to"]) for m in plan["moves"]} == {
        ("kg-4", "n3", "n1"),
        ("kg-1", "n1", "n2"),
    }
