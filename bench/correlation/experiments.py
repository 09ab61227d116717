"""Xing, Zdonik & Hwang's evaluation, reproduced: timings (Table 1, Section 4.3), Table 3, Figs. 3, 4, 6, 7, 8, 10.

    python -m bench.correlation.experiments [--seeds 5] [--only timing,global,pairwise,fig8,bursty]

Prints tables (paper beside ours) and writes PNGs to bench/out/. Workload and simulator: bench/correlation/sim.py.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench import results
from bench.correlation.sim import (
    Timeline,
    Workload,
    instance_for,
    onoff_workload,
    periodic_workload,
    run_controller,
    simulate,
)
from solvers.correlation import solve_global, solve_pairwise
from solvers.correlation.global_placement import global_assignment
from solvers.correlation.pairwise import PairContext, pairwise_assignment, split_pair, two_way
from solvers.correlation.stats import LoadState
from solvers.instance import AssignmentInstance
from solvers.metrics import average_correlation

OUT = Path(__file__).resolve().parents[1] / "out"
LEVELS = (0.5, 0.6, 0.7, 0.8, 0.9)
WARM_S, END_S = 10, 70  # statistics warm-up, then 60 s measured
Policy = Callable[[AssignmentInstance], np.ndarray]


def glb(selection: str) -> Policy:
    return lambda inst: global_assignment(inst, selection=selection)[0]  # type: ignore[arg-type]


def pw(variant: str, selection: str = "correlation") -> Policy:
    return lambda inst: pairwise_assignment(inst, variant, selection=selection)[0]  # type: ignore[arg-type]


# trimtab's improved variants (the spread and peak repair after the paper's steps), through the solvers' entry points
# as the service calls them. The pair-wise one runs every load distribution period (1 s): it gets a 0.2 s limit.
def glb_improved() -> Policy:
    return lambda inst: solve_global(inst, variant="improved").assignment


def pw_improved(variant: str) -> Policy:
    return lambda inst: solve_pairwise(inst, variant=variant, time_limit_s=0.2).assignment  # type: ignore[arg-type]


def spread_and_overloaded(series: np.ndarray) -> tuple[float, float]:
    """Over the measured period (node loads in percent, one column per second): spread of the nodes' mean
    utilization (points) and the share of node-seconds above 100 %."""
    mean = series.mean(axis=1)
    return float(mean.max() - mean.min()), float((series > 100.0).mean())


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    for row in rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)))
    results.table("correlation", title, header, rows)


def load_note() -> str:
    one, five, _ = os.getloadavg()
    return f"machine load average {one:.1f} (1 min) / {five:.1f} (5 min) on {os.cpu_count()} cores"


# ---------------------------------------------------------------------------------------------- timing


def timing() -> None:
    rng = np.random.default_rng(7)
    n, m, k = 50, 10, 10
    wl = periodic_workload(rng, 0.9, n_nodes=n, n_chains=n, chain_len=m, duration_s=20.0)
    stats = wl.op_samples()[:, :k]
    inst = instance_for(wl, rng.integers(0, n, wl.n_ops), stats)

    def best_of(fn: Callable[[], object], repeat: int) -> float:
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    t_cor = best_of(lambda: global_assignment(inst), 5)
    t_cor_improved = best_of(lambda: solve_global(inst, variant="improved"), 5)
    t_llf = best_of(lambda: global_assignment(inst, selection="largest-load"), 5)
    t_greedy = best_of(lambda: global_assignment(inst, improve=False), 5)
    # One pair-wise redistribution: two nodes of m = 10 operators each, k = 10.
    pair_inst = instance_for(wl, np.repeat(np.arange(n), m)[np.argsort(rng.random(n * m))], stats)
    state = LoadState(pair_inst, pair_inst.current)
    ctx = PairContext(state)
    units = np.concatenate([ctx.units_on(0), ctx.units_on(1)])
    snap = state.snapshot()

    def redistribute() -> None:
        two_way(ctx, 0, 1)
        state.restore(snap)

    t_split = best_of(lambda: split_pair(ctx, 0, 1, units), 300)
    t_two_way = best_of(redistribute, 300)
    table(
        f"Computation time ({load_note()}; medians)",
        ["what", "paper (2005, Athlon 2 GHz)", "target", "ours"],
        [
            ["COR-GLB, n=50, m=10, k=10", "0.9 min", "<= 0.5 s", f"{t_cor:.3f} s"],
            ["  improved variant (with the repair)", "-", "<= 0.5 s", f"{t_cor_improved:.3f} s"],
            ["  greedy + balancing only", "-", "-", f"{t_greedy:.3f} s"],
            ["LLF-GLB, same instance", "-", "-", f"{t_llf:.3f} s ({t_cor / t_llf:.0f}x faster than COR)"],
            [
                f"pair redistribution m=10, k=10 ({len(units)} ops)",
                "6 ms",
                "<= 1 ms",
                f"{t_two_way * 1e3:.3f} ms",
            ],
            ["  greedy split alone", "-", "-", f"{t_split * 1e3:.3f} ms"],
        ],
    )
    results.record(
        "correlation",
        "COR-GLB, n = 50, m = 10, k = 10: one plan (improved variant)",
        t_cor_improved,
        unit="s",
        paper="0.9 min (2005 hardware)",
        baselines={"COR-GLB paper variant": t_cor, "LLF-GLB": t_llf},
        target="<= 0.5 s",
        ok=t_cor_improved <= 0.5,
        note="Section 4.3",
    )
    results.record(
        "correlation",
        "one pair redistribution, m = 10, k = 10",
        t_two_way * 1e3,
        unit="ms",
        paper=6.0,
        target="<= 1 ms",
        ok=t_two_way * 1e3 <= 1.0,
        note="Section 4.3",
    )


# ---------------------------------------------------------------------------------------------- experiments


def node_std_and_correlation(series: np.ndarray) -> tuple[float, float, float]:
    """Mean node load std, Theorem 1 minimum std(X)/n, average node-pair correlation (loads as CPU fractions)."""
    frac = series / 100.0
    return (
        float(frac.std(axis=1).mean()),
        float(frac.sum(axis=0).std() / frac.shape[0]),
        average_correlation(frac),
    )


def run(
    wl: Workload, initial: np.ndarray, once: Policy | None, periodic: Policy | None
) -> tuple[Timeline, object]:
    timeline = run_controller(wl, initial, WARM_S, once, periodic)
    return timeline, simulate(wl, timeline, WARM_S, END_S)


def global_experiment(seeds: int) -> None:
    """Fig. 3 (latency ratio), Fig. 4 (average load std with the MINIMUM line), Table 3 (average load correlation)."""
    algos: dict[str, Policy] = {
        "COR-GLB": glb("correlation"),
        "COR-GLB-IMP": glb_improved(),
        "RAND-GLB": glb("random"),
        "LLF-GLB": glb("largest-load"),
    }
    lat = {a: [] for a in algos}  # type: dict[str, list[float]]
    std = {a: [] for a in algos}  # type: dict[str, list[float]]
    corr = {a: [] for a in algos}  # type: dict[str, list[float]]
    spread = {a: [] for a in algos}  # type: dict[str, list[float]]
    over = {a: [] for a in algos}  # type: dict[str, list[float]]
    minimum: list[float] = []
    for level in LEVELS:
        per = {a: ([], [], [], [], []) for a in algos}  # type: dict[str, tuple[list[float], ...]]
        mins = []
        for seed in range(seeds):
            rng = np.random.default_rng(1000 + seed)
            wl = periodic_workload(rng, level)
            initial = rng.integers(0, wl.n_nodes, wl.n_ops)  # random placement at start (5.1.4)
            for name, policy in algos.items():
                _, res = run(wl, initial, policy, None)
                s, mn, c = node_std_and_correlation(res.node_series)  # type: ignore[attr-defined]
                sp, ov = spread_and_overloaded(res.node_series)  # type: ignore[attr-defined]
                per[name][0].append(res.latency_ratio)  # type: ignore[attr-defined]
                per[name][1].append(s)
                per[name][2].append(c)
                per[name][3].append(sp)
                per[name][4].append(ov)
                mins.append(mn)
        for name in algos:
            lat[name].append(float(np.mean(per[name][0])))
            std[name].append(float(np.mean(per[name][1])))
            corr[name].append(float(np.mean(per[name][2])))
            spread[name].append(float(np.max(per[name][3])))
            over[name].append(float(np.mean(per[name][4])))
        minimum.append(float(np.mean(mins)))
    rows = [
        [f"{lv:.1f}"]
        + [f"{lat[a][i]:.2f}" for a in algos]
        + [f"{std[a][i]:.4f}" for a in algos]
        + [f"{minimum[i]:.4f}"]
        for i, lv in enumerate(LEVELS)
    ]
    table(
        f"Figs. 3 and 4: global algorithms after the warm-up, static afterwards ({seeds} seeds). Paper: COR-GLB's "
        "latency ratio far below RAND/LLF-GLB at high load, its load std close to MINIMUM (figures not numeric)",
        ["load", *(f"latency {a}" for a in algos), *(f"std {a}" for a in algos), "std MINIMUM"],
        rows,
    )
    top = len(LEVELS) - 1
    results.record(
        "correlation",
        f"latency ratio at load {LEVELS[top]}, global plan (COR-GLB improved)",
        lat["COR-GLB-IMP"][top],
        paper="COR-GLB far below RAND/LLF",
        baselines={a: lat[a][top] for a in ("COR-GLB", "RAND-GLB", "LLF-GLB")},
        target="< LLF-GLB and RAND-GLB",
        ok=lat["COR-GLB-IMP"][top] < min(lat["RAND-GLB"][top], lat["LLF-GLB"][top]),
        note="Fig. 3 (no numbers in our copy)",
    )
    results.record(
        "correlation",
        "average node load correlation (COR-GLB improved)",
        float(np.mean(corr["COR-GLB-IMP"])),
        paper=0.65,
        baselines={a: float(np.mean(corr[a])) for a in ("COR-GLB", "RAND-GLB", "LLF-GLB")},
        note="Table 3",
    )
    table(
        "Table 3: average node load correlation (mean over load levels)",
        ["", *algos],
        [
            ["paper", "0.65", "-", "-0.0048", "-0.0008"],
            ["ours", *(f"{np.mean(corr[a]):.4f}" for a in algos)],
        ],
    )
    table(
        "Spread of node mean utilization over the measured 60 s (points, max over seeds) and share of node-seconds "
        "above 100 % (mean over seeds); the plan is made from the 10 s warm-up statistics",
        ["load", *(f"spread {a}" for a in algos), *(f"over100 {a}" for a in algos)],
        [
            [f"{lv:.1f}"]
            + [f"{spread[a][i]:.2f}" for a in algos]
            + [f"{100 * over[a][i]:.1f}%" for a in algos]
            for i, lv in enumerate(LEVELS)
        ],
    )
    plot_lines(
        "fig3_global_latency.png",
        "Fig. 3: latency ratio of the global algorithms",
        "latency ratio",
        lat,
        log=True,
    )
    plot_lines(
        "fig4_global_std.png",
        "Fig. 4: average node load standard deviation",
        "load std (CPU fraction)",
        {**std, "MINIMUM": minimum},
    )


def pairwise_experiment(seeds: int) -> dict[str, list[float]]:
    """Figs. 6 and 7: from the connected plan (each chain on one node), pair-wise algorithms every second."""
    algos: dict[str, tuple[Policy | None, Policy | None]] = {
        "COR-BAL": (None, pw("one-way")),
        "RAND-BAL": (None, pw("one-way", "random")),
        "LLF-BAL": (None, pw("one-way", "largest-load")),
        "COR-RE-IMP": (None, pw("improved-two-way")),
        "COR-SE-IMP": (None, pw("improved-selective-exchange")),
        "COR-SE-IMP+R": (None, pw_improved("improved-selective-exchange")),
        "COR-GLB": (glb("correlation"), None),
        "COR-GLB-IMP": (glb_improved(), None),
    }
    lat: dict[str, list[float]] = {a: [] for a in algos}
    moved: dict[str, list[float]] = {a: [] for a in algos}
    over: dict[str, list[float]] = {a: [] for a in algos}
    for level in LEVELS:
        per: dict[str, list[tuple[float, float, float]]] = {a: [] for a in algos}
        for seed in range(seeds):
            rng = np.random.default_rng(2000 + seed)
            wl = periodic_workload(rng, level)
            connected = np.repeat(np.arange(wl.n_chains), wl.chain_len) % wl.n_nodes
            for name, (once, periodic) in algos.items():
                timeline, res = run(wl, connected, once, periodic)
                _, ov = spread_and_overloaded(res.node_series)  # type: ignore[attr-defined]
                per[name].append((res.latency_ratio, sum(timeline.load_moved) / 100.0, ov))  # type: ignore[attr-defined]
        for name in algos:
            lat[name].append(float(np.mean([x[0] for x in per[name]])))
            moved[name].append(float(np.mean([x[1] for x in per[name]])))
            over[name].append(float(np.mean([x[2] for x in per[name]])))
    table(
        f"Figs. 6 and 7: latency ratio from the connected plan ({seeds} seeds). Paper: COR-BAL < RAND-BAL, LLF-BAL "
        "(similar load moved); all one-way far above COR-GLB; COR-RE-IMP and COR-SE-IMP far below COR-BAL",
        ["load", *algos],
        [[f"{lv:.1f}"] + [f"{lat[a][i]:.2f}" for a in algos] for i, lv in enumerate(LEVELS)],
    )
    top = len(LEVELS) - 1
    results.record(
        "correlation",
        f"latency ratio at load {LEVELS[top]}, pair-wise from the connected plan (COR-SE-IMP+R)",
        lat["COR-SE-IMP+R"][top],
        paper="COR-SE-IMP far below COR-BAL",
        baselines={a: lat[a][top] for a in ("COR-SE-IMP", "COR-BAL", "RAND-BAL", "LLF-BAL")},
        target="< LLF-BAL and RAND-BAL",
        ok=lat["COR-SE-IMP+R"][top] < min(lat["RAND-BAL"][top], lat["LLF-BAL"][top]),
        note="Figs. 6-7 (no numbers in our copy)",
    )
    table(
        "Amount of load moved over the run (CPU fractions)",
        ["load", *algos],
        [[f"{lv:.1f}"] + [f"{moved[a][i]:.2f}" for a in algos] for i, lv in enumerate(LEVELS)],
    )
    table(
        "Share of node-seconds above 100 % utilization over the run",
        ["load", *algos],
        [[f"{lv:.1f}"] + [f"{100 * over[a][i]:.1f}%" for a in algos] for i, lv in enumerate(LEVELS)],
    )
    plot_lines(
        "fig6_oneway_latency.png",
        "Fig. 6: one-way pair-wise algorithms and COR-GLB",
        "latency ratio",
        {a: lat[a] for a in ("COR-BAL", "RAND-BAL", "LLF-BAL", "COR-GLB")},
        log=True,
    )
    plot_lines(
        "fig7_twoway_latency.png",
        "Fig. 7: improved two-way algorithms",
        "latency ratio",
        {
            a: lat[a]
            for a in ("COR-BAL", "COR-RE-IMP", "COR-SE-IMP", "COR-SE-IMP+R", "COR-GLB", "COR-GLB-IMP")
        },
        log=True,
    )
    return lat


def fig8(seeds: int) -> None:
    """Fig. 8: at load 0.9, latency ratio, cumulative load moved and average load correlation over time."""
    algos: dict[str, tuple[Policy | None, Policy | None]] = {
        "COR-GLB": (glb("correlation"), None),
        "COR-GLB-IMP": (glb_improved(), None),
        "COR-RE-IMP": (None, pw("improved-two-way")),
        "COR-SE-IMP": (None, pw("improved-selective-exchange")),
        "COR-SE-IMP+R": (None, pw_improved("improved-selective-exchange")),
        "COR-BAL": (None, pw("one-way")),
    }
    seconds = END_S - WARM_S
    lat = {a: np.zeros(seconds) for a in algos}
    moved = {a: np.zeros(seconds) for a in algos}
    corr = {a: np.zeros(seconds) for a in algos}
    for seed in range(seeds):
        rng = np.random.default_rng(3000 + seed)
        wl = periodic_workload(rng, 0.9)
        connected = np.repeat(np.arange(wl.n_chains), wl.chain_len) % wl.n_nodes
        samples = wl.op_samples()
        for name, (once, periodic) in algos.items():
            timeline, res = run(wl, connected, once, periodic)
            lat[name] += res.latency_ratio_per_second / seeds  # type: ignore[attr-defined]
            for start, load in zip(timeline.starts[1:], timeline.load_moved[1:], strict=True):
                moved[name][start - WARM_S :] += load / 100.0 / seeds
            for s in range(seconds):
                second = WARM_S + s
                seg = int(np.searchsorted(np.array(timeline.starts), second, side="right") - 1)
                window = samples[:, second - 10 : second]
                node = np.zeros((wl.n_nodes, 10))
                np.add.at(node, timeline.placements[seg], window)
                corr[name][s] += average_correlation(node) / seeds
    table(
        f"Fig. 8 at load 0.9 ({seeds} seeds). Paper: COR-RE-IMP moves much more load than COR-SE-IMP and ends "
        "closer to COR-GLB's plan but performs worse on average; COR-GLB moves less load than COR-RE-IMP",
        ["algorithm", "mean latency ratio", "latency ratio last 10 s", "load moved", "final avg correlation"],
        [
            [
                a,
                f"{lat[a].mean():.2f}",
                f"{lat[a][-10:].mean():.2f}",
                f"{moved[a][-1]:.2f}",
                f"{corr[a][-1]:.3f}",
            ]
            for a in algos
        ],
    )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    t = np.arange(seconds) + WARM_S
    for name in algos:
        axes[0].plot(t, lat[name], label=name)
        axes[1].plot(t, moved[name], label=name)
        axes[2].plot(t, corr[name], label=name)
    axes[0].set_yscale("log")
    for ax, label in zip(
        axes, ("latency ratio", "load moved (cumulative)", "avg load correlation"), strict=True
    ):
        ax.set_xlabel("time (s)")
        ax.set_ylabel(label)
        ax.legend()
    fig.suptitle("Fig. 8: correlation-based algorithms at system load 0.9")
    fig.tight_layout()
    fig.savefig(OUT / "fig8_load09_over_time.png", dpi=110)
    plt.close(fig)


def bursty(seeds: int) -> None:
    """Fig. 10: on-off workload, global algorithms combined with their pair-wise algorithms."""
    algos: dict[str, tuple[Policy | None, Policy | None]] = {
        "COR-GLB-SE-IMP": (glb("correlation"), pw("improved-selective-exchange")),
        "COR-GLB-BAL": (glb("correlation"), pw("one-way")),
        "RAND-GLB-BAL": (glb("random"), pw("one-way", "random")),
        "LLF-GLB-BAL": (glb("largest-load"), pw("one-way", "largest-load")),
    }
    lat: dict[str, list[float]] = {a: [] for a in algos}
    for level in LEVELS:
        per: dict[str, list[float]] = {a: [] for a in algos}
        for seed in range(seeds):
            rng = np.random.default_rng(4000 + seed)
            wl = onoff_workload(rng, level)
            initial = rng.integers(0, wl.n_nodes, wl.n_ops)
            for name, (once, periodic) in algos.items():
                _, res = run(wl, initial, once, periodic)
                per[name].append(res.latency_ratio)  # type: ignore[attr-defined]
        for name in algos:
            lat[name].append(float(np.mean(per[name])))
    table(
        f"Fig. 10: on-off bursty workload ({seeds} seeds). Paper: the correlation-based combinations stay best",
        ["load", *algos],
        [[f"{lv:.1f}"] + [f"{lat[a][i]:.2f}" for a in algos] for i, lv in enumerate(LEVELS)],
    )
    plot_lines("fig10_bursty_latency.png", "Fig. 10: on-off input model", "latency ratio", lat, log=True)


def plot_lines(
    filename: str, title: str, ylabel: str, series: dict[str, list[float]], log: bool = False
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, values in series.items():
        ax.plot(LEVELS, values, marker="o", label=name, linestyle="--" if name == "MINIMUM" else "-")
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("system load level")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(OUT / filename, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=5, help="runs per point (the paper averages 5)")
    parser.add_argument("--only", default="timing,global,pairwise,fig8,bursty")
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 1 seed, load 0.9, 15 s measured, no Fig. 8 or 10"
    )
    args = parser.parse_args()
    if args.quick:
        global LEVELS, END_S
        LEVELS, END_S = (0.9,), WARM_S + 15
        args.seeds, args.only = 1, "timing,global,pairwise"
    results.setup(
        "correlation",
        f"Xing 5.1 workload (bench/correlation/sim.py): {args.seeds} seeds per point, load levels {LEVELS}, "
        f"{WARM_S} s warm-up then {END_S - WARM_S} s measured; parts {args.only}",
    )
    OUT.mkdir(parents=True, exist_ok=True)
    parts = set(args.only.split(","))
    started = time.perf_counter()
    if "timing" in parts:
        timing()
    if "global" in parts:
        global_experiment(args.seeds)
    if "pairwise" in parts:
        pairwise_experiment(args.seeds)
    if "fig8" in parts:
        fig8(args.seeds)
    if "bursty" in parts:
        bursty(args.seeds)
    print(f"\ntotal {time.perf_counter() - started:.0f} s; {load_note()}; PNGs in {OUT}")


if __name__ == "__main__":
    main()
