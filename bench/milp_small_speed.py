"""CPU per small `milp` request in-process (issue 9: the worker's CPU per request bounds milp's throughput): the
throughput bench's 64 bodies (bench/reliability/throughput.py: 10 nodes x 100 units, 10 migrations, time_limit_s
0.2), each
- through `service.planning.plan_task` (what a solver worker runs: parse, checks, adapter, solver, statistics,
  validator, serialization), and
- `solve_milp` alone on the adapted instance,
- and in a forked solver worker (service.pool's, as the service runs it: the pipe and pickling on top; CPU read from
  /proc in clock ticks, over 256 requests),
timed by `time.process_time` over whole passes of the 64 bodies (the median pass of `--passes`, per request), with
the solver's own phases split out (bound, starts and their descents).

An older tree can be measured in the same run (`--baseline TREE`: a child interpreter on that tree, passes
interleaved with this tree's so the machine's load hits both alike).

    python -m bench.milp_small_speed [--passes 15] [--baseline TREE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

MEASURE = """
import functools, gc, json, os, statistics, sys, time
from bench.reliability.throughput import snapshot
from schemas.assignment import AssignmentRequest
from service.adapters import to_instance
from service.planning import PlanJob, plan_task
from service.pool import _Worker
from service.settings import Settings
from solvers.milp import solve_milp

settings = Settings()
bodies = [snapshot(s, {"name": "milp"}, 0.2) for s in range(64)]
instances = [to_instance(AssignmentRequest.model_validate_json(b)) for b in bodies]


def one_pass():
    gc.collect()
    gc.disable()  # as in a worker (service.planning._guarded), for both measurements alike
    t0 = time.process_time()
    for body in bodies:
        plan_task(settings, PlanJob(body, time.monotonic()), lambda deadline: None)
    t1 = time.process_time()
    for instance in instances:
        solve_milp(instance, time_limit_s=0.2)
    t2 = time.process_time()
    gc.enable()
    return (t1 - t0) / len(bodies), (t2 - t1) / len(bodies)


def worker_pass(worker):
    # CPU of a forked solver worker (service.pool, as the service runs it) per request, the bodies one by one
    stat = f"/proc/{worker.process.pid}/stat"
    def cpu():
        with open(stat) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    before = cpu()
    for _ in range(4):  # 256 requests: the kernel counts CPU in clock ticks
        for body in bodies:
            worker.conn.send(PlanJob(body, time.monotonic()))
            while worker.conn.recv()[0] != "answer":
                pass
    return (cpu() - before) / (4 * len(bodies))


one_pass()  # warm-up: imports, caches
worker = _Worker(functools.partial(plan_task, settings), 0)
worker_pass(worker)
for _ in range(int(sys.argv[1])):
    print(json.dumps([*one_pass(), worker_pass(worker)]), flush=True)
worker.kill()
"""


def run(tree: Path, passes: int) -> list[tuple[float, float, float]]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, str(passes)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [tuple(json.loads(line)) for line in out.splitlines()]  # type: ignore[misc]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--passes", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=2, help="interleaved runs of each tree")
    parser.add_argument("--baseline", type=Path, default=None)
    args = parser.parse_args()
    here = Path(__file__).resolve().parent.parent
    trees = [("this tree", here)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name, _ in trees}
    load_before = os.getloadavg()
    for _ in range(args.rounds):
        for name, tree in trees:
            results[name] += run(tree, args.passes)
    load_after = os.getloadavg()
    print(
        f"CPU per request, 64 throughput-bench bodies (10 x 100, K = 10, time_limit_s 0.2), median pass of "
        f"{args.rounds} x {args.passes}; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after"
    )
    print(f"{'tree':<10} {'plan_task ms':>13} {'solve_milp ms':>14} {'rest ms':>8} {'pool worker ms':>15}")
    for name, _ in trees:
        task = statistics.median(r[0] for r in results[name]) * 1000
        solve = statistics.median(r[1] for r in results[name]) * 1000
        worker = statistics.median(r[2] for r in results[name]) * 1000
        print(f"{name:<10} {task:>13.3f} {solve:>14.3f} {task - solve:>8.3f} {worker:>15.2f}")


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"({time.perf_counter() - started:.0f} s)")
