"""The deployment files stay in step with the code (docker cannot run here, so they are checked statically)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from service.settings import Settings

yaml = pytest.importorskip("yaml")  # PyYAML comes with schemathesis (dev extra)

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = (ROOT / "docker" / "Dockerfile").read_text()


def test_compose_environment_names_real_settings() -> None:
    compose = yaml.safe_load((ROOT / "docker" / "docker-compose.yml").read_text())
    service = compose["services"]["trimtab"]
    assert service["build"]["dockerfile"] == "docker/Dockerfile"
    fields = {f"TRIMTAB_{name.upper()}" for name in Settings.model_fields}
    assert set(service["environment"]) <= fields, set(service["environment"]) - fields
    assert "/healthz" in " ".join(service["healthcheck"]["test"])
    env = {k: v for k, v in service["environment"].items() if not str(v).startswith("$")}
    Settings(**{k.removeprefix("TRIMTAB_").lower(): v for k, v in env.items()})  # values parse


def test_dockerfile_runs_unprivileged_with_a_healthcheck() -> None:
    assert DOCKERFILE.startswith("#") and "FROM python:3.11-slim" in DOCKERFILE
    user = re.findall(r"^USER (\S+)", DOCKERFILE, flags=re.M)
    assert user and user[-1] not in ("root", "0")
    assert re.search(r"^HEALTHCHECK .*", DOCKERFILE, flags=re.M) and "/healthz" in DOCKERFILE
    assert "service.main:app" in DOCKERFILE


def test_dockerfile_copies_every_package_of_the_distribution() -> None:
    copied = set(re.findall(r"^COPY (\S+) \./\1$", DOCKERFILE, flags=re.M))
    for package in ("schemas", "service", "solvers", "clients"):
        assert package in copied
    assert "pyproject.toml README.md" in DOCKERFILE  # setuptools reads the readme named in pyproject.toml
