"""What a small plan request costs at the inline caps (service.planning.is_small): the whole request (parse, checks,
solve, statistics, validator, serialization) in this process, for each inline algorithm on adversarial snapshots at
INLINE_MAX_UNITS units and up to INLINE_MAX_NODES nodes: everything on one node (the most moves), equal loads (ties),
integer loads, random skew, no budget. The slowest bounds how long one inline plan holds the event loop; the
watchdog (service.inline.INLINE_WATCHDOG_S) must be well above it.

    python -m bench.reliability.inline_worst [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from typing import Any

from service.inline import INLINE_WATCHDOG_S
from service.planning import (
    INLINE_ALGORITHMS,
    INLINE_MAX_BODY_BYTES,
    INLINE_MAX_NODES,
    INLINE_MAX_UNITS,
    PlanJob,
    plan_if_small,
)
from service.settings import Settings


def snapshots(algorithm: str) -> dict[str, dict[str, Any]]:
    rng = random.Random(0)

    def body(n_nodes: int, loads: list[float], nodes_of: list[int], budget: dict[str, Any]) -> dict[str, Any]:
        return {
            "nodes": [{"id": f"n{i}"} for i in range(n_nodes)],
            "units": [
                {"id": f"u{k}", "node": f"n{nodes_of[k]}", "load": load, "state_size": 1.0}
                for k, load in enumerate(loads)
            ],
            "algorithm": {"name": algorithm},
            "budget": budget,
        }

    units = INLINE_MAX_UNITS
    return {
        "2 nodes, all on one, equal loads": body(2, [0.3] * units, [0] * units, {}),
        f"{INLINE_MAX_NODES} nodes, all on one, equal loads": body(
            INLINE_MAX_NODES, [1.0] * units, [0] * units, {}
        ),
        f"{INLINE_MAX_NODES} nodes, all on one, integer loads": body(
            INLINE_MAX_NODES, [float(rng.randint(1, 9)) for _ in range(units)], [0] * units, {}
        ),
        f"{INLINE_MAX_NODES} nodes, random skew": body(
            INLINE_MAX_NODES,
            [rng.paretovariate(1.2) for _ in range(units)],
            [rng.randrange(8) for _ in range(units)],
            {},
        ),
        "16 nodes, random skew, budget 10": body(
            16,
            [rng.uniform(0.1, 2.0) for _ in range(units)],
            [rng.randrange(16) if rng.random() < 0.7 else 0 for _ in range(units)],
            {"max_migrations": 10},
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    settings = Settings()
    print(
        f"load average {os.getloadavg()[0]:.1f} (2 cores); caps: {INLINE_MAX_BODY_BYTES} bytes, {INLINE_MAX_UNITS} "
        f"units, {INLINE_MAX_NODES} nodes; watchdog {1000 * INLINE_WATCHDOG_S:.0f} ms"
    )
    print("| algorithm | snapshot | body bytes | status | CPU ms (min) | CPU ms (max) |")
    print("|---|---|---|---|---|---|")
    slowest = 0.0
    for algorithm in sorted(INLINE_ALGORITHMS):
        for name, snapshot in snapshots(algorithm).items():
            body = json.dumps(snapshot).encode()
            times = []
            status = None
            for _ in range(args.repeats):
                started = time.process_time()
                answer = plan_if_small(settings, PlanJob(body, time.monotonic()))
                times.append(1000.0 * (time.process_time() - started))
                status = "not small" if answer is None else answer.status
            slowest = max(slowest, max(times))
            print(f"| {algorithm} | {name} | {len(body)} | {status} | {min(times):.2f} | {max(times):.2f} |")
    print(f"slowest: {slowest:.2f} ms CPU")


if __name__ == "__main__":
    main()
