"""Start a server in a subprocess on a free port and wait until /healthz (or / for the bare app) answers."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from clients.demo import free_port


@contextlib.contextmanager
def serve(kind: str, env: dict[str, str] | None = None) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """kind "trimtab" (python -m service.server) or "bare" (the bare FastAPI app under plain uvicorn)."""
    port = free_port("127.0.0.1")
    if kind == "trimtab":
        command = [
            sys.executable,
            "-m",
            "service.server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ]
        # no access log, as for the bare endpoint (--no-access-log): JSON access lines are info-level
        env = {"TRIMTAB_LOG_LEVEL": "warning", **(env or {})}
        probe = "/healthz"
    else:
        command = [
            sys.executable,
            "-m",
            "uvicorn",
            "bench.reliability.bare_app:app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-access-log",
        ]
        probe = "/docs"
    process = subprocess.Popen(
        command, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + probe, timeout=1).status_code == 200:
                    break
            if process.poll() is not None:
                raise RuntimeError(f"{kind} server exited with {process.returncode}")
            time.sleep(0.05)
        yield url, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def process_family(pid: int) -> list[int]:
    """The process and its descendants (/proc): a server, its workers' zygote, the workers, and their children
    (milp's second chain)."""
    try:
        kids = [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        kids = []
    return [pid, *(member for kid in kids for member in process_family(kid))]
