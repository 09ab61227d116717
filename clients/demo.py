"""Self-contained demo client: builds a skewed cluster snapshot, asks the service for plans from every algorithm,
checks each plan with the independent validator and prints a before/after table.

    python -m clients.demo --url http://127.0.0.1:8000          # against a running service
    python -m clients.demo --spawn-server                      # starts uvicorn on 127.0.0.1 itself (make run)
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import random
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx

from solvers.plan_check import check_plan


def skewed_snapshot(
    nodes: int = 12, units_per_node: int = 20, windows: int = 12, seed: int = 7
) -> dict[str, Any]:
    """A cluster of `nodes` equal nodes, one of them draining, with a few hot nodes (Madsen et al. Section 5.1 style).

    Each key group carries a load series of `windows` statistics windows (a daily-like wave with its own phase, so
    the correlation algorithms have something to work with); the mean-load algorithms use its mean."""
    rng = random.Random(seed)
    node_ids = [f"worker-{i}" for i in range(nodes)]
    units = []
    for i, node in enumerate(node_ids):
        factor = 1.4 if i < 2 else (0.7 if i in (2, 3) else 1.0)
        for j in range(units_per_node):
            mean = 2.5 * factor * rng.uniform(0.95, 1.05)
            phase = rng.uniform(0, 2 * math.pi)
            units.append(
                {
                    "id": f"kg-{i * units_per_node + j}",
                    "node": node,
                    "load": [
                        round(mean * (1 + 0.3 * math.sin(phase + 2 * math.pi * w / windows)), 4)
                        for w in range(windows)
                    ],
                    "state_size": rng.randint(1, 64) * 1_048_576,
                    "operator": f"op-{j % 4}",
                }
            )
    return {
        "nodes": [{"id": n, "capacity": 100.0, "draining": n == node_ids[-1]} for n in node_ids],
        "units": units,
        "budget": {"max_migrations": 30},
        "time_limit_s": 1.0,
    }


@contextlib.contextmanager
def uvicorn_server(host: str, port: int, startup_timeout_s: float = 120.0) -> Iterator[str]:
    url = f"http://{host}:{port}"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "service.main:app",
            "--host",
            host,
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        env={**os.environ},
    )
    try:
        deadline = time.monotonic() + startup_timeout_s
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            if proc.poll() is not None:
                raise RuntimeError(f"uvicorn exited with {proc.returncode}")
            time.sleep(0.2)
        else:
            raise RuntimeError(f"uvicorn did not become healthy in {startup_timeout_s:g} s")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def run_demo(url: str) -> int:
    snapshot = skewed_snapshot()
    with httpx.Client(base_url=url, timeout=30) as client:
        names = [a["name"] for a in client.get("/v1/algorithms").raise_for_status().json()["algorithms"]]
        print(
            f"trimtab at {url}: {len(snapshot['nodes'])} nodes, {len(snapshot['units'])} key groups, "
            f"budget {snapshot['budget']['max_migrations']} migrations, worker-11 draining\n"
        )
        print(
            f"{'algorithm':<22}{'status':<11}{'distance before':>16}{'after':>9}{'imbalance after':>16}"
            f"{'corr after':>11}{'moves':>7}{'solve ms':>10}  valid"
        )
        failures = 0
        for name in names:
            body = {**snapshot, "algorithm": {"name": name}}
            response = client.post("/v1/assignment/plan", json=body)
            if response.status_code != 200:
                print(f"{name:<22}HTTP {response.status_code}: {response.text[:200]}")
                failures += 1
                continue
            plan = response.json()
            problems = check_plan(body, plan)
            failures += bool(problems)
            print(
                f"{name:<22}{plan['status']:<11}{plan['before']['load_distance']:>16.2f}"
                f"{plan['after']['load_distance']:>9.2f}{plan['after']['imbalance']:>16.2f}"
                f"{plan['after']['avg_load_correlation'] or 0.0:>11.2f}{plan['migrations']:>7}{plan['solve_ms']:>10.1f}  "
                f"{'yes' if not problems else problems[:2]}"
            )
        failures += splitter_demo(client)
    return 1 if failures else 0


def splitter_demo(client: httpx.Client, calls: int = 12) -> int:
    """Four connections of an ordered region, one worker 4x slower: the splitter blocks mostly on its connection.
    Each call sends the cumulative blocking counters and the model from the previous answer (the service keeps no
    state), and applies the weights it gets back."""
    speed = {"c0": 0.25, "c1": 1.0, "c2": 1.0, "c3": 1.0}
    weights = dict.fromkeys(speed, 250)
    counters = dict.fromkeys(speed, 0.0)
    model = None
    print("\nsplitter weights (per mille) for 4 connections, c0's worker 4x slower:")
    for call in range(calls):
        # Blocking per second grows once a connection's share exceeds its worker's share of the capacity.
        capacity = sum(speed.values())
        for cid, w in weights.items():
            counters[cid] += max(0.0, w / 1000 - speed[cid] / capacity) * 4.0
        body = {
            "connections": [
                {"id": cid, "weight": weights[cid], "cumulative_blocking_s": round(counters[cid], 6)}
                for cid in speed
            ],
            "observed_at": float(call),
            "model": model,
        }
        response = client.post("/v1/splitter/weights", json=body)
        if response.status_code != 200:
            print(f"HTTP {response.status_code}: {response.text[:200]}")
            return 1
        answer = response.json()
        weights, model = answer["weights"], answer["model"]
        if call % 3 == 2 or call == calls - 1:
            print(f"  call {call + 1:>2}: " + "  ".join(f"{cid} {w:>3}" for cid, w in weights.items()))
    ideal = round(1000 * speed["c0"] / sum(speed.values()))
    print(f"  (capacity-proportional share of c0: {ideal})")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", help="a running trimtab service")
    parser.add_argument(
        "--spawn-server", action="store_true", help="start uvicorn on --host/--port for the demo"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    args = parser.parse_args()
    if args.spawn_server:
        with uvicorn_server(args.host, args.port or free_port(args.host)) as url:
            return run_demo(url)
    return run_demo(args.url or "http://127.0.0.1:8000")


if __name__ == "__main__":
    sys.exit(main())
