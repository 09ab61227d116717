"""Guo & Zhou, Section 5, replayed against trimtab: Table 1 (mean and sd of var(L_t)), the Fig. 2 numbers (CLB on S1/S2),
and the Fig. 4 state-movement shares, each printed next to the paper's; Fig. 2-4 saved as PNG in bench/out/.

    python -m bench.stateful.experiments [--url http://127.0.0.1:8000] [--tolerance 0.2] [--n 5 10 15]

Statistics of var(L_t) are taken over windows 2..120: window 1 runs under the engine's initial hash partitioning
before any algorithm has decided anything (it is the same for all and would only add the same outlier to each).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import results as results_mod
from bench.stateful.replay import Post, Run, http_planner, in_process_planner, replay_pkg, replay_plans
from bench.stateful.streams import Stream, all_streams

OUT = Path(__file__).resolve().parents[1] / "out"
CLB_PERIOD = 24

# The paper's numbers (Twitter stream, n = 10): Table 1 and Section 5.1.
PAPER_TABLE1 = {
    "clb": (6.1e4, 5133.7),
    "elb": (5.1e4, 1806.8),
    "pkg": (3.1e4, 1018.8),
    "universal-hash": (2.9e4, 770.4),
}
PAPER_FIG2 = {"S1": (2.08983e10, 6.76016e8), "S2": (2.08325e10, 7.92797e8)}
PAPER_FIG4 = {
    "elb": 0.145,
    "pkg": 0.212,
    "universal-hash": 0.242,
    "clb-per-rebalance": 0.484,
    "clb-amortized": 0.016,
}
LABEL = {
    "clb-paper": "CLBp",
    "clb": "CLB",
    "elb-paper": "ELBp",
    "elb": "ELB",
    "pkg": "PKG",
    "universal-hash": "UHLB",
}
# "-paper": the paper's variant (the reproduction); without suffix: the improved default of the service.
ORDER = ("clb-paper", "clb", "elb-paper", "elb", "pkg", "universal-hash")
PAPER_KEY = {"clb-paper": "clb", "clb": "clb", "elb-paper": "elb", "elb": "elb"}


def run_all(stream: Stream, n: int, post: Post, tolerance: float) -> dict[str, Run]:
    clb = {"name": "clb", "m": CLB_PERIOD}
    elb = {"name": "elb", "tolerance": tolerance}
    return {
        "clb-paper": replay_plans(stream, n, {**clb, "variant": "paper"}, post, period=CLB_PERIOD),
        "clb": replay_plans(stream, n, clb, post, period=CLB_PERIOD),
        "elb-paper": replay_plans(stream, n, {**elb, "variant": "paper"}, post),
        "elb": replay_plans(stream, n, elb, post),
        "pkg": replay_pkg(stream, n),
        "universal-hash": replay_plans(stream, n, {"name": "universal-hash"}, post, reseed=True),
    }


def stats(run: Run) -> tuple[float, float]:
    measured = run.imbalance[1:]
    return float(measured.mean()), float(measured.std())


def print_table1(
    results: dict[tuple[str, int], dict[str, Run]], streams: list[Stream], ns: list[int]
) -> None:
    print(
        "\nTable 1: mean mu and sd delta of var(L_t) (windows 2..120); ELB, PKG, UHLB every window, CLB every 24"
    )
    head = "".join(f"{LABEL[a] + ' mu':>12}{LABEL[a] + ' sd':>12}" for a in ORDER)
    print(f"{'stream':<10}{'n':>4}{head}   ratio to UHLB (CLBp/CLB/ELBp/ELB/PKG)")
    for stream in streams:
        for n in ns:
            runs = results[(stream.name, n)]
            row = "".join(f"{stats(runs[a])[0]:>12.3g}{stats(runs[a])[1]:>12.3g}" for a in ORDER)
            base = stats(runs["universal-hash"])[0]
            ratios = "/".join(f"{stats(runs[a])[0] / base:.3g}" for a in ORDER[:-1])
            print(f"{stream.name:<10}{n:>4}{row}   {ratios}")
    paper = "".join(
        f"{PAPER_TABLE1[PAPER_KEY.get(a, a)][0]:>12.3g}{PAPER_TABLE1[PAPER_KEY.get(a, a)][1]:>12.3g}"
        if a in ("clb-paper", "elb-paper", "pkg", "universal-hash")
        else f"{'':>12}{'':>12}"
        for a in ORDER
    )
    ratios = "/".join(
        f"{PAPER_TABLE1[a][0] / PAPER_TABLE1['universal-hash'][0]:.3g}" for a in ("clb", "elb", "pkg")
    )
    print(f"{'paper':<10}{10:>4}{paper}   {ratios}   (Twitter stream)")


def print_fig4(results: dict[tuple[str, int], dict[str, Run]], streams: list[Stream], ns: list[int]) -> None:
    print(
        "\nFig. 4: share of all state moved, mean per window (CLB: per rebalance and amortized over all windows)"
    )
    print(
        f"{'stream':<10}{'n':>4}{'ELBp':>9}{'ELB':>9}{'PKG':>9}{'UHLB':>9}{'CLBp/reb':>10}{'CLBp/am':>9}"
        f"{'CLB/reb':>9}{'CLB/am':>9}"
    )
    for stream in streams:
        for n in ns:
            r = results[(stream.name, n)]
            print(
                f"{stream.name:<10}{n:>4}{r['elb-paper'].moved_amortized:>9.1%}{r['elb'].moved_amortized:>9.1%}"
                f"{r['pkg'].moved_amortized:>9.1%}{r['universal-hash'].moved_amortized:>9.1%}"
                f"{r['clb-paper'].moved_per_rebalance:>10.1%}{r['clb-paper'].moved_amortized:>9.2%}"
                f"{r['clb'].moved_per_rebalance:>9.1%}{r['clb'].moved_amortized:>9.2%}"
            )
    p = PAPER_FIG4
    print(
        f"{'paper':<10}{10:>4}{p['elb']:>9.1%}{'':>9}{p['pkg']:>9.1%}{p['universal-hash']:>9.1%}"
        f"{p['clb-per-rebalance']:>10.1%}{p['clb-amortized']:>9.2%}   (Twitter stream)"
    )


def fig2(post: Post, streams: dict[str, Stream]) -> dict[str, Run]:
    """Fig. 2: CLB with n = 10 and 1/f = 1 (a rebalance every window, over the latest 24 windows, from window 24 on)
    on S1 and S2."""
    runs = {
        name: replay_plans(
            streams[name],
            10,
            {"name": "clb", "m": CLB_PERIOD, "variant": "paper"},
            post,
            period=1,
            first=CLB_PERIOD,
        )
        for name in ("S1", "S2")
    }
    print("\nFig. 2: CLB (paper variant), n = 10, 1/f = 1: mean and sd of var(L_t) (windows 2..120)")
    print(f"{'stream':<8}{'ours mu':>12}{'ours sd':>12}{'paper mu':>12}{'paper sd':>12}")
    for name, run in runs.items():
        mu, sd = stats(run)
        print(f"{name:<8}{mu:>12.4g}{sd:>12.4g}{PAPER_FIG2[name][0]:>12.4g}{PAPER_FIG2[name][1]:>12.4g}")
    return runs


def save_plots(
    results: dict[tuple[str, int], dict[str, Run]], fig2_runs: dict[str, Run], real: str
) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    OUT.mkdir(parents=True, exist_ok=True)
    paths = []
    windows = np.arange(1, 121)

    fig, ax = plt.subplots(figsize=(8, 4))
    for name, run in fig2_runs.items():
        label = {"S1": "Gaussian-10", "S2": "Zipf-10"}[name]
        ax.plot(windows[1:], run.imbalance[1:], label=label)
    zipf = fig2_runs["S2"].imbalance[1:]
    ax.axhspan(zipf.min(), zipf.max(), color="tab:blue", alpha=0.1)
    ax.set(xlabel="statistics window", ylabel="var(L_t)", title="Fig. 2: CLB imbalance, n = 10, 1/f = 1")
    ax.legend()
    paths.append(OUT / "stateful_fig2_clb_imbalance.png")
    fig.savefig(paths[-1], dpi=120, bbox_inches="tight")
    plt.close(fig)

    runs = results[(real, 10)]
    fig, ax = plt.subplots(figsize=(8, 4))
    for algorithm in ORDER:
        ax.plot(windows[1:], runs[algorithm].imbalance[1:], label=LABEL[algorithm])
    ax.set_yscale("log")
    ax.set(
        xlabel="statistics window",
        ylabel="var(L_t)",
        title=f"Fig. 3: load imbalance over time ({real}, n = 10)",
    )
    ax.legend()
    paths.append(OUT / "stateful_fig3_imbalance.png")
    fig.savefig(paths[-1], dpi=120, bbox_inches="tight")
    plt.close(fig)

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4), gridspec_kw={"width_ratios": [2, 1]})
    for algorithm in ("elb-paper", "elb", "universal-hash", "pkg"):
        left.plot(windows, 100 * runs[algorithm].moved_share, label=LABEL[algorithm])
    left.set(
        xlabel="statistics window",
        ylabel="state moved (%)",
        title=f"Fig. 4 (left): per window, {real}, n = 10",
    )
    left.legend()
    names = ["PKG", "UHLB", "ELB (paper)", "ELB", "CLB (paper, am.)", "CLB (am.)"]
    ours = [
        runs["pkg"].moved_amortized,
        runs["universal-hash"].moved_amortized,
        runs["elb-paper"].moved_amortized,
        runs["elb"].moved_amortized,
        runs["clb-paper"].moved_amortized,
        runs["clb"].moved_amortized,
    ]
    paper = [
        PAPER_FIG4["pkg"],
        PAPER_FIG4["universal-hash"],
        PAPER_FIG4["elb"],
        PAPER_FIG4["elb"],
        PAPER_FIG4["clb-amortized"],
        PAPER_FIG4["clb-amortized"],
    ]
    x = np.arange(len(names))
    right.bar(x - 0.2, 100 * np.array(ours), 0.4, label="ours")
    right.bar(x + 0.2, 100 * np.array(paper), 0.4, label="paper (Twitter)")
    right.set_xticks(x, names, rotation=30, ha="right")
    right.set(ylabel="mean state moved per window (%)", title="Fig. 4 (right): averages")
    right.legend()
    paths.append(OUT / "stateful_fig4_state_moved.png")
    fig.savefig(paths[-1], dpi=120, bbox_inches="tight")
    plt.close(fig)
    return paths


def record_results(
    results: dict[tuple[str, int], dict[str, Run]], streams: list[Stream], ns: list[int], tolerance: float
) -> None:
    """The report's rows: Table 1 as ratios to universal hashing (the paper's absolute numbers are for its Twitter
    stream, ours for S1, S2 and the flights; ratios to the same-run baseline are what compares), Fig. 4's shares."""
    paper_uh = PAPER_TABLE1["universal-hash"][0]
    results_mod.setup(
        "stateful",
        f"replay of S1, S2 (Guo & Zhou 5) and flights (NYC 2013, real) over 120 windows, n = {ns}; ELB every window "
        f"(range mean x (1 -/+ {tolerance:g})), CLB every {CLB_PERIOD} windows; the service in-process",
    )
    rows = []
    for stream in streams:
        for n in ns:
            r = results[(stream.name, n)]
            base = stats(r["universal-hash"])[0]
            rows.append(
                [stream.name, n, *(stats(r[a])[0] / base for a in ORDER[:-1])]
                + [r[a].moved_amortized * 100 for a in ("elb-paper", "elb", "pkg", "universal-hash")]
                + [r["clb-paper"].moved_per_rebalance * 100, r["clb"].moved_per_rebalance * 100]
            )
    rows.append(
        [
            "paper (Twitter)",
            10,
            PAPER_TABLE1["clb"][0] / paper_uh,
            None,
            PAPER_TABLE1["elb"][0] / paper_uh,
            None,
            PAPER_TABLE1["pkg"][0] / paper_uh,
            PAPER_FIG4["elb"] * 100,
            None,
            PAPER_FIG4["pkg"] * 100,
            PAPER_FIG4["universal-hash"] * 100,
            PAPER_FIG4["clb-per-rebalance"] * 100,
            None,
        ]
    )
    results_mod.table(
        "stateful",
        "Table 1 (mean var(L_t) / universal hashing's, lower is better) and Fig. 4 (% of state moved per window)",
        [
            "stream",
            "n",
            *(f"{LABEL[a]} var" for a in ORDER[:-1]),
            "ELBp moved %",
            "ELB moved %",
            "PKG moved %",
            "UHLB moved %",
            "CLBp moved %/reb",
            "CLB moved %/reb",
        ],
        rows,
        note="p = the paper's variant, without p = trimtab's improved default; UHLB = universal hashing.",
    )
    n = 10 if 10 in ns else ns[0]
    for stream in streams:
        r = results[(stream.name, n)]
        base = stats(r["universal-hash"])[0]
        results_mod.record(
            "stateful",
            f"{stream.name}, n = {n}: mean var(L_t) of ELB / universal hashing's",
            stats(r["elb"])[0] / base,
            unit="x",
            paper=round(PAPER_TABLE1["elb"][0] / paper_uh, 2),
            baselines={
                "ELB paper": stats(r["elb-paper"])[0] / base,
                "CLB": stats(r["clb"])[0] / base,
                "PKG": stats(r["pkg"])[0] / base,
            },
            note="Table 1 (Twitter, n = 10)",
        )
        results_mod.record(
            "stateful",
            f"{stream.name}, n = {n}: state moved per window by ELB",
            100 * r["elb"].moved_amortized,
            unit="%",
            paper=100 * PAPER_FIG4["elb"],
            baselines={
                "ELB paper": 100 * r["elb-paper"].moved_amortized,
                "PKG": 100 * r["pkg"].moved_amortized,
                "universal hashing": 100 * r["universal-hash"].moved_amortized,
            },
            note="Fig. 4",
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", help="base URL of a running trimtab (default: the app in-process)")
    parser.add_argument("--tolerance", type=float, default=0.2, help="ELB range: mean x (1 -/+ tolerance)")
    parser.add_argument("--n", type=int, nargs="+", default=[5, 10, 15])
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: the flights stream, n = 10, no Fig. 2"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.n = [10]
    post = http_planner(args.url) if args.url else in_process_planner()
    started = time.perf_counter()
    streams = [s for s in all_streams() if not args.quick or s.name == "flights"]
    for stream in streams:
        y = stream.histograms
        print(
            f"{stream.name}: {stream.description}; {y.shape[0]} substreams x {y.shape[1]} windows, "
            f"{y.sum() / y.shape[1]:.0f} tuples/window, largest substream {y.sum(axis=1).max() / y.sum():.1%} of load"
        )
    results: dict[tuple[str, int], dict[str, Any]] = {}
    for stream in streams:
        for n in args.n:
            results[(stream.name, n)] = run_all(stream, n, post, args.tolerance)
    print(
        f"\nELB range: mean x (1 -/+ {args.tolerance:g}); CLB every {CLB_PERIOD} windows over the latest {CLB_PERIOD}"
    )
    print_table1(results, streams, args.n)
    print_fig4(results, streams, args.n)
    record_results(results, streams, args.n, args.tolerance)
    if args.quick:
        print(f"\nquick: {time.perf_counter() - started:.0f} s wall, load average {os.getloadavg()[0]:.1f}")
        return
    fig2_runs = fig2(post, {s.name: s for s in streams})
    if 10 in args.n:
        for path in save_plots(results, fig2_runs, "flights"):
            print(f"saved {path}")
    elapsed = time.perf_counter() - started
    print(f"\n{elapsed:.0f} s wall, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
