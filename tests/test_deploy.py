"""The deployment files stay in step with the code (docker cannot run here, so they are checked statically):
docker/docker-compose.yml (the service replicas, Prometheus, Spark), docker/prometheus.yml and docker/Dockerfile."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from service.main import create_app
from service.settings import Settings

yaml = pytest.importorskip("yaml")  # PyYAML comes with schemathesis (dev extra)

ROOT = Path(__file__).resolve().parents[1]
DOCKER = ROOT / "docker"
DOCKERFILE = (DOCKER / "Dockerfile").read_text()
COMPOSE: dict[str, Any] = yaml.safe_load((DOCKER / "docker-compose.yml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]
SCRAPE: dict[str, Any] = yaml.safe_load((DOCKER / "prometheus.yml").read_text())
SETTING_VARS = {f"TRIMTAB_{name.upper()}" for name in Settings.model_fields}


def stages() -> dict[str, str]:
    """Each build stage of the Dockerfile: name -> its text (FROM line to the next FROM)."""
    parts = re.split(r"^(?=FROM )", DOCKERFILE, flags=re.M)
    found = {}
    for part in parts:
        head = re.match(r"FROM (\S+)(?: AS (\S+))?", part)
        if head:
            found[head.group(2) or head.group(1)] = part
    return found


def command_option(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def trimtab_port() -> int:
    return int(SERVICES["trimtab"]["environment"]["TRIMTAB_PORT"])


def test_compose_has_the_service_prometheus_and_spark() -> None:
    assert set(SERVICES) == {"trimtab", "prometheus", "spark-master", "spark-worker", "spark-job"}
    for name, service in SERVICES.items():
        for dependency, condition in service.get("depends_on", {}).items():
            assert dependency in SERVICES, (name, dependency)
            if condition["condition"] == "service_healthy":
                assert "healthcheck" in SERVICES[dependency], (name, dependency)
        build = service.get("build")
        if build is not None:
            assert (
                ROOT / "docker" / build["context"] / build["dockerfile"]
            ).resolve() == DOCKER / "Dockerfile"
            assert build["target"] in stages(), (name, build["target"])
    for volume in ("prometheus-data", "spark-shared"):
        assert volume in COMPOSE["volumes"]


def test_compose_environment_names_real_settings() -> None:
    service = SERVICES["trimtab"]
    assert set(service["environment"]) <= SETTING_VARS, set(service["environment"]) - SETTING_VARS
    env = {k: v for k, v in service["environment"].items() if not str(v).startswith("$")}
    settings = Settings(**{k.removeprefix("TRIMTAB_").lower(): v for k, v in env.items()})  # values parse
    # one process per replica, so a scrape of a replica sees all of its metrics (workers keep their own)
    assert settings.workers == 1
    assert settings.host == "0.0.0.0"  # reachable from Prometheus and the other containers


def test_service_replicas_ports_and_healthcheck() -> None:
    service = SERVICES["trimtab"]
    replicas = service["deploy"]["replicas"]
    assert replicas >= 2
    (mapping,) = service["ports"]
    host_ip, host_ports, container_port = mapping.split(":")
    assert host_ip == "127.0.0.1"  # not open beyond the host unless someone means it
    first, last = (int(p) for p in host_ports.split("-"))
    assert last - first + 1 == replicas  # a host port per replica, or `up` fails on the second one
    assert int(container_port) == trimtab_port()
    check = service["healthcheck"]
    assert check["test"][0] == "CMD" and f"127.0.0.1:{trimtab_port()}/healthz" in " ".join(check["test"])
    assert {"interval", "timeout", "retries", "start_period"} <= set(check)
    assert service["read_only"] is True and "/tmp" in service["tmpfs"]


def test_prometheus_scrapes_every_replica_of_the_service() -> None:
    prometheus = SERVICES["prometheus"]
    mounted = {v.split(":")[1]: v.split(":")[0] for v in prometheus["volumes"]}
    flags = dict(arg.split("=", 1) for arg in prometheus["command"])
    assert (DOCKER / mounted[flags["--config.file"]]).resolve() == DOCKER / "prometheus.yml"
    assert "127.0.0.1:9090:9090" in prometheus["ports"]
    assert prometheus["depends_on"]["trimtab"]["condition"] == "service_healthy"
    (job,) = [j for j in SCRAPE["scrape_configs"] if j["job_name"] == "trimtab"]
    # DNS service discovery on the compose service name: one target per replica, whatever the replica count
    (discovery,) = job["dns_sd_configs"]
    assert discovery["names"] == ["trimtab"] and discovery["type"] == "A"
    assert discovery["port"] == trimtab_port()
    assert job["metrics_path"] in create_app(Settings()).openapi()["paths"]


def test_scrape_config_passes_promtool(tmp_path: Path) -> None:
    """Prometheus's own checker, where it is installed (Debian's prometheus package, as `make e2e` installs)."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool not installed (`make e2e` installs the prometheus package)")
    done = subprocess.run(
        [promtool, "check", "config", str(DOCKER / "prometheus.yml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def seconds(text: str) -> float:
    return float(text.removesuffix("s"))


def test_scrape_timing_is_consistent() -> None:
    for job in SCRAPE["scrape_configs"]:
        interval = seconds(job.get("scrape_interval", SCRAPE["global"]["scrape_interval"]))
        timeout = seconds(job.get("scrape_timeout", "10s"))
        assert timeout <= interval, job["job_name"]


def test_spark_cluster_runs_the_main_job_against_the_service() -> None:
    master, worker, job = SERVICES["spark-master"], SERVICES["spark-worker"], SERVICES["spark-job"]
    assert "org.apache.spark.deploy.master.Master" in master["command"]
    master_url = (
        f"spark://{command_option(master['command'], '--host')}:{command_option(master['command'], '--port')}"
    )
    assert (
        "org.apache.spark.deploy.worker.Worker" in worker["command"] and worker["command"][-1] == master_url
    )
    command = job["command"]
    assert command[:3] == ["python", "-m", "clients.spark.job"]
    assert command_option(command, "--master") == master_url
    assert command_option(command, "--url") == f"http://trimtab:{trimtab_port()}"
    assert command_option(command, "--png").startswith(
        "/shared/"
    )  # the image's site-packages are not writable
    assert job["depends_on"]["trimtab"]["condition"] == "service_healthy"
    # the driver (spark-job) and the executors (spark-worker) write to the same paths: one shared volume
    assert "spark-shared:/shared" in worker["volumes"] and "spark-shared:/shared" in job["volumes"]
    assert "TMPDIR=/shared/tmp" in stages()["spark"].replace(" ", "")


def test_the_spark_main_job_module_exists_once_the_spark_client_does() -> None:
    if importlib.util.find_spec("clients.spark") is None:
        pytest.skip("clients/spark/ is not on this branch yet")
    assert importlib.util.find_spec("clients.spark.job") is not None, "compose runs clients.spark.job"


def test_dockerfile_is_multi_stage_slim_and_unprivileged() -> None:
    assert DOCKERFILE.startswith("#")
    found = stages()
    assert {"build", "build-spark", "service", "spark"} <= set(found)
    for name in ("service", "spark"):
        stage = found[name]
        assert stage.startswith("FROM python:3.11-slim AS"), name
        user = re.findall(r"^USER (\S+)", stage, flags=re.M)
        assert user and user[-1] not in ("root", "0"), name
        assert "pip install" not in stage, name  # runtime stages copy a built venv: no build tools, no caches
    assert "COPY --from=build /opt/trimtab /opt/trimtab" in found["service"]
    assert "COPY --from=build-spark /opt/trimtab /opt/trimtab" in found["spark"]


def test_dockerfile_service_stage_healthcheck_workers_and_entry_point() -> None:
    stage = stages()["service"]
    assert re.search(r"^HEALTHCHECK .*", stage, flags=re.M) and "/healthz" in stage
    assert "TRIMTAB_PORT" in stage.split("HEALTHCHECK", 1)[1]  # the check follows the port the server uses
    env_vars = set(re.findall(r"\b(TRIMTAB_[A-Z_]+)=", stage))
    assert {"TRIMTAB_WORKERS", "TRIMTAB_HOST", "TRIMTAB_PORT"} <= env_vars <= SETTING_VARS
    assert re.search(r'^CMD \["trimtab", "serve"\]$', stage, flags=re.M)
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["trimtab"] == "service.cli:app"
    assert "run_server" in (ROOT / "service" / "cli.py").read_text()  # one way to serve: service.server
    assert '"service.main:app"' in (ROOT / "service" / "server.py").read_text()


def test_dockerfile_copies_every_package_of_the_distribution() -> None:
    copied = set(re.findall(r"^COPY (\S+) \./\1$", DOCKERFILE, flags=re.M))
    for package in ("schemas", "service", "solvers", "clients"):
        assert package in copied
    assert (
        "COPY pyproject.toml README.md ./" in DOCKERFILE
    )  # setuptools reads the readme named in pyproject.toml
