"""Hard deadlines and memory per request at the maximum allowed sizes (issue 9), against a real server.

    python -m bench.reliability.deadlines [--only flux,milp] [--shapes units,windows]

For every algorithm and shape: the wall time of the whole request (client side: send, parse, solve, validate,
serialize, receive) against time_limit_s + 1 s, the answer, and the peak resident memory of the service (its
process plus its solver workers, proportional set size summed, sampled every 20 ms during the request) against 30 x body + 300 MiB.

Shapes (the caps of schemas/assignment.py and service/settings.py):
- units:   10,000 nodes x 250,000 units, one load each (the unit and node caps);
- windows: 400 nodes x 1,220 units x 4,096 windows (5M load values: the series cap at the longest series);
- nodes:   10,000 nodes x 12,500 units x 400 windows (4M node values: the nodes x windows cap);
- units/10, windows/10: a tenth of the units and of the load values;
- draining: the units cap with half the nodes draining;
- dense: 500 nodes x 1,000 units x 2 windows (CLB's units x nodes and paper caps in a 0.1 MiB body);
- wide: 10,000 nodes x 5,000 units (a small body with the node cap).
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.reliability.servers import process_family, serve
from service.algorithms import REGISTRY

PLAN = "/v1/assignment/plan"
SERIES_ONLY = {"correlation-global", "correlation-pairwise", "clb"}
ALGORITHMS = list(REGISTRY)  # every algorithm the service offers, new ones included
SHAPES = {
    "units": (10_000, 250_000, 1),
    "windows": (400, 1_220, 4_096),
    "nodes": (10_000, 12_500, 400),
    # A tenth of the caps: what fits the default time_limit_s of 2 s on a loaded 2-core machine.
    "units/10": (1_000, 25_000, 1),
    "windows/10": (40, 1_220, 410),
    # The units cap with the half of the nodes that holds everything draining: every unit must leave (the baselines'
    # drain, milp's starts; 7.7-10 s past a 0.2 s limit before 29 Nov).
    "draining": (10_000, 250_000, 1),
    # Small bodies whose work is units x nodes (CLB's and the correlation algorithms' matrices): the memory cap is
    # then about 30 MiB above the idle service (29 Nov, seventh session: CLB at 2,000 x 40 x 2 windows took 554 MiB).
    "dense": (500, 1_000, 2),
    "wide": (10_000, 5_000, 1),
}


def body_for(shape: str, algorithm: str, time_limit_s: float, seed: int = 0) -> bytes:
    n_nodes, n_units, windows = SHAPES[shape]
    rng = np.random.default_rng(seed)
    where = rng.integers(0, max(1, n_nodes // 2), n_units)  # half the nodes hold everything: work to do
    if windows == 1:
        loads = np.round(rng.uniform(0.01, 4.0, n_units), 3).tolist()
    else:
        base = rng.uniform(0.01, 4.0, (n_units, 1))
        loads = np.round(base * rng.uniform(0.5, 1.5, (n_units, windows)), 3).tolist()
    units = [
        {"id": f"u{k}", "node": f"n{where[k]}", "load": loads[k], "state_size": 1.0} for k in range(n_units)
    ]
    body = {
        "nodes": [
            {"id": f"n{i}", "draining": True} if shape == "draining" and i < n_nodes // 2 else {"id": f"n{i}"}
            for i in range(n_nodes)
        ],
        "units": units,
        "algorithm": {"name": algorithm},
        "time_limit_s": time_limit_s,
    }
    return json.dumps(body).encode()


def _pss_bytes(pid: int) -> int:
    """Proportional set size: pages shared between the service and its forked workers count once in the sum."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def measure(url: str, pid: int, body: bytes) -> tuple[float, int, str, int, str]:
    """(wall s, status, short answer, peak RSS bytes of the server and its workers during the request, the server's
    phases in seconds from its Server-Timing header)."""
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, sum(_pss_bytes(p) for p in process_family(pid)))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.monotonic()
    response = httpx.post(url + PLAN, content=body, headers={"content-type": "application/json"}, timeout=600)
    wall = time.monotonic() - started
    done.set()
    sampler.join()
    if response.status_code == 200:
        plan = response.json()
        short = f"{plan['status']}, {plan['migrations']} moves, solve {plan['solve_ms'] / 1000:.2f} s"
    else:
        short = response.json().get("detail", "")[:90]
    phases = " ".join(
        f"{name} {float(dur) / 1000:.1f}"
        for name, _, dur in (
            part.partition(";dur=") for part in response.headers.get("server-timing", "").split(", ") if part
        )
    )
    return wall, response.status_code, short, peak, phases


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", help="comma-separated algorithms")
    parser.add_argument("--shapes", default="units,windows,nodes")
    parser.add_argument("--time-limit", type=float, default=10.0)
    args = parser.parse_args()
    algorithms = args.only.split(",") if args.only else ALGORITHMS
    print(f"load average {os.getloadavg()[0]:.1f} (2 cores); time_limit_s {args.time_limit:g}")
    print(
        "| algorithm | shape | body MiB | wall s | limit + 1 s | within | status | answer | server phases s "
        "| peak memory MiB | cap MiB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows: list[list[object]] = []  # for the report (record_results)
    with serve("trimtab") as (url, process):
        for shape in args.shapes.split(","):
            for algorithm in algorithms:
                if SHAPES[shape][2] == 1 and algorithm in SERIES_ONLY:
                    continue  # needs series: covered by the other shapes
                body = body_for(shape, algorithm, args.time_limit)
                wall, status, short, peak, phases = measure(url, process.pid, body)
                mib = len(body) / 2**20
                cap = 30 * mib + 300
                within = "yes" if wall <= args.time_limit + 1.0 else "NO"
                rows.append([algorithm, shape, mib, wall, status, peak / 2**20, cap])
                print(
                    f"| {algorithm} | {shape} | {mib:.0f} | {wall:.2f} | {args.time_limit + 1:g} | {within} | "
                    f"{status} | {short} | {phases} | {peak / 2**20:.0f} | {cap:.0f} |",
                    flush=True,
                )
    print(f"load average after {os.getloadavg()[0]:.1f}")
    record_results(rows, args.time_limit)


def record_results(rows: list[list[Any]], time_limit: float) -> None:
    """The report's rows (bench/results.py; a no-op outside `make bench`)."""
    from bench import results

    results.table(
        "reliability",
        f"Largest requests: wall and peak memory per request (time_limit_s {time_limit:g})",
        ["algorithm", "shape", "body MiB", "wall s", "status", "peak MiB", "memory cap MiB"],
        rows,
    )
    if rows:
        worst = max(rows, key=lambda r: r[3] - time_limit)
        results.record(
            "reliability",
            "largest requests: worst wall over time_limit_s",
            worst[3] - time_limit,
            unit="s",
            target="<= 1 s",
            ok=all(r[3] <= time_limit + 1.0 for r in rows),
            note=f"{worst[0]}, {worst[1]}; {len(rows)} requests; issue 9",
        )
        results.record(
            "reliability",
            "largest requests: requests within the memory cap (30 x body + 300 MiB)",
            f"{sum(r[5] <= r[6] for r in rows)} of {len(rows)}",
            target=f"{len(rows)} of {len(rows)}",
            ok=all(r[5] <= r[6] for r in rows),
        )


if __name__ == "__main__":
    main()
