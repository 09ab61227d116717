"""Robustness of the issue-12 targets to the tuple cost (x0.9 .. x1.1): Fig. 10 at 16 PEs static (LB-static,
LB-adaptive / Oracle*), dead connection re-explorations and calls at weight > 0, fast newcomer calls to 90%."""

import sys
import numpy as np
from fastapi.testclient import TestClient
from bench.splitter import experiments as ex
from bench.splitter.simulator import simulate
from service.main import create_app
from service.settings import Settings

SCALES = (0.9, 0.95, 1.0, 1.05, 1.1)
base_mult = ex.MULT_S


def fig10(client, scale, adaptive):
    pes, tuple_s = 16, 10 * base_mult * scale
    slowdown = np.where(np.arange(pes) < pes // 2, 100.0, 1.0)
    reg = ex.region(tuple_s, slowdown)
    rate = min(float((1.0 / (reg.service_s * slowdown)).sum()), 1.0 / ex.SPLITTER_S)
    tuples = int(150 * rate)
    best = ex.offline_best_weights(reg, slowdown, min(tuples, 50000))
    oracle = simulate(reg, tuples, best).total_time_s
    return ex.run_lb(client, reg, tuples, adaptive=adaptive)[0].total_time_s / oracle


with TestClient(create_app(Settings())) as client:
    rows = {"LB-static": [], "LB-adaptive": [], "die re-expl": [], "die calls>0": [], "join fast calls": []}
    for scale in SCALES:
        rows["LB-static"].append(fig10(client, scale, False))
        rows["LB-adaptive"].append(fig10(client, scale, True))
        ex.MULT_S = base_mult * scale
        dead = [1.0, 1.0, 1.0, ex.DEAD]
        r = ex.membership_run(client, "die", dead, phases=((30.0, dead),), duration_s=330.0)
        t, W = ex.weight_matrix(r.result)
        rows["die re-expl"].append(r.reexplorations)
        rows["die calls>0"].append(int((W[t >= 30, 3][:300] > 0).sum()))
        fast = ex.membership_run(client, "join fast", [1.0] * 4, join=True, duration_s=90.0)
        rows["join fast calls"].append(fast.calls_to_90)
        ex.MULT_S = base_mult
    print(sys.argv[1:], flush=True)
    for name, values in rows.items():
        print(f"{name:16s}", " ".join(f"{v:6.2f}" if isinstance(v, float) else f"{v!s:>6}" for v in values))
