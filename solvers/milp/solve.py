"""MILP entry point: proven bound, starts, budget-neutral local search, large-neighbourhood search, best plan.

Steps, all inside the call's time limit (see docs/milp.md):
1. Units without a node are placed largest-first (free; the search may still move them).
2. A combinatorial lower bound (solvers.milp.bounds); a plan that meets it is optimal and ends the call.
3. Starts: the current plan and the plan built from the bound's threshold (solvers.milp.starts), each improved by
   the budget-aware descent (solvers.milp.local_search: moves, swaps with every partner, and compound steps that
   send a migration home to spend it better). The best is kept.
4. Small problems (the full move model has at most FULL_MODEL_MOVES booleans): the full model on CP-SAT or HiGHS
   with the best plan as a hint; it is the whole problem (every staying node, every movable unit, draining homes as
   refunds), so its proof is a proof. Tiny ones (TINY_MODEL_MOVES) run it beside the perturbations of step 5 from
   the start instead.
5. Otherwise (and after an unproven full model), rounds until the deadline, the gap, or a stall: iterated
   perturbation (send a share of the migrations home, then the band repair and the descent, or the descent alone)
   and short move-model rounds around the best plan on neighbourhoods of extreme nodes, random nodes, and the home
   nodes of migrated units. After a small problem's full model stalls, CP-SAT goes on with it beside those rounds,
   in a thread at the lowest CPU priority, until the deadline or its proof (BACKGROUND_WORKERS). On a large
   problem a second chain of the same rounds runs in a child process at the lowest CPU priority, where a second
   core allows it; the two chains trade their best plans (solvers.milp.second_chain). Where a budget binds and the
   rounds have the time, the trees of both chains' plans are recombined by set partitioning (solvers.milp.recombine).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
from ortools.sat.python import cp_model

from solvers import baselines
from solvers.errors import UnsolvableRequest
from solvers.instance import UNPLACED, AssignmentInstance, BoolArray, FloatArray, IntArray, Plan, PlanStatus
from solvers.milp.bounds import (
    LowerBound,
    deviation_levels_below,
    lattice_bound,
    lower_bound,
    utilization_steps,
)
from solvers.milp.cpsat import solve_cpsat
from solvers.milp.highs import solve_highs
from solvers.milp.local_search import LocalSearch
from solvers.milp.model import BackendResult, MoveModel, build_move_model, choose_neighbourhood
from solvers.milp.recombine import TreePool
from solvers.milp.recombine import applies as trees_recombine
from solvers.milp.second_chain import MIN_SECONDS as SECOND_CHAIN_MIN_S
from solvers.milp.second_chain import NICE, STOP_GRACE_S, SecondChain, keeps_rules
from solvers.milp.second_chain import available as second_chain_available
from solvers.milp.starts import bound_plan, packed_plan, repack_fits, repacked_plan

Backend = Literal["cp-sat", "highs"]
OPTIMALITY_TOLERANCE = 1e-6  # percentage points
# Share of the current plan's load distance: a plan this close to the proven bound ends the search (it removes all
# but a thousandth of the imbalance there is; finer balance buys nothing a stream engine can measure). A share of
# the imbalance, not points, so the stop does not depend on the unit of load.
RESIDUAL_GAP = 0.001
# ... and at most this many points (a snapshot 200 points off balance would otherwise stop 0.2 points above its bound:
# seen 0.54 where the descent of another start reached 0.32). Small snapshots stop as before (0.01-0.02 points).
RESIDUAL_GAP_MAX = 0.02
# The pair-balanced start (number partitioning): at most this many staying nodes, and movable units per staying node.
PAIR_START_NODES = 64
# Without a budget, up to this many staying nodes (a round of pairs is quadratic in them; the compiled scan checks the
# deadline between calls of bounded work). Not under a budget: at 256 nodes the start's round took the band
# restarts' time on skew 12522 (250 x 2,048, K 625: 0.0657 -> 0.085-0.135 points at 1 s).
PAIR_START_NODES_UNBUDGETED = 256
PAIR_START_UNITS_PER_NODE = 12
# Points above the bound within which no plan is better by enough to pay for the repacked start (see solve_milp's
# repacked; until 2 Dec also the gap within which a stop without a budget skipped the baselines' check).
FLOOR_CHECK_GAP = 0.02
DEADLINE_MARGIN = 0.12  # share of the time limit kept free for the work in flight at the deadline
FULL_MODEL_MOVES = 4_000  # booleans up to which the full model is solved at once (see docs/milp.md)
# Full models up to this many booleans run beside the perturbations from the rounds' start, in one CP-SAT call for
# the whole time left (_FullModelThread), instead of first in the doubling slices of larger ones (see _Rounds._run).
# Why: on a tiny model (5 nodes x 30 units, K 6: 150 booleans, what a new user tries first) CP-SAT needs 2.5-20 s
# for the proof and, hinted with the starts' plan, rarely improves it within a second, while the perturbations find
# other basins; until 30 Nov the tiny model had the whole call alone. Measured at 1 s (make_snapshot 5 x 6, K 6,
# seeds 0-35, 4 search seeds): calls above max(1.1 x best, best + 0.05 points) 20 of 144 -> 10, geometric mean
# over the best known 1.25 -> 1.13 (on 0-11 against the proven optima: 4 of 48 -> 1, 1.19 -> 1.11); 157 tiny
# random-campaign snapshots: the same plans but one (within the 0.02-point gap stop), 62 proofs -> 61.
TINY_MODEL_MOVES = 300
# Share of a tiny model's perturbations that restart: every migration sent home, then 1 to as many random moves as
# the plan had migrations (LocalSearch.random_moves), then the repair. Why: on a tiny model a plan's basin is its
# whole forest of migrations (K of 6 for 5 nodes), and kicks of 10-50 % of it plus the repair rebuild the same
# forest: make_snapshot seed 19 (5 x 6, K 6) stayed at 0.0898 through 9,000 perturbations and 29 walk steps on 4 of 4
# seeds where 0.0342 exists. A repair costs ~0.1 ms there, so random restarts cover the basins. Measured at 1 s
# (seeds 0-35 x 4 search seeds, beside CP-SAT as TINY_MODEL_MOVES says): calls above max(1.1 x best, best + 0.05)
# 10-14 of 144 -> 0, at the best known plan 85-88 -> 137 (share 0.1: 3 and 124; 0.6: 0 and 138); other tiny shapes
# (6 x 8 K 8, 3 x 10 K 4, 8 x 4 K 5, 6 x 5 K 12) better or equal in the geometric mean, 157 tiny random-campaign
# snapshots 2 better, none worse. Not beyond tiny models: 8 x 8 K 8, 10 x 10 K 10 and 16 x 128 K 16 (skew 10920,
# 10009, 11321) within the spread of seeds (random plans of more migrations are far from any good basin).
RESTART_SHARE = 0.3
# Band restarts, on problems above TINY_MODEL_MOVES under a count budget: every migration sent home, then the band
# repair (LocalSearch.fill_band) towards a band of the best plan's distance times a factor drawn log-uniformly from
# RESTART_BAND, then the descent: a new forest of migrations built from the current placement, not a repair of the
# best plan's. Why: a large count budget's basins are whole forests, and kicks of up to PERTURBATION_UNITS
# migrations plus the repair rebuild the same forest. Seen (bench.milp_campaign --family skew 12522: 250 nodes x
# 2,048 key groups, 1x/2x/4x capacities, 625 migrations): 0.1355 points at 1 s and still at 30 s (the call stalled
# after 7.7 s), where 0.0657 exists. From that plan, kicks of 8-128 of the 625 migrations found no better plan in 60
# repairs each, 256 in 1 of 60, and all of them (this restart, 33 ms) in 59 of 60: 0.0657 in the median, and at a
# band of 0.3 times the distance 0.0349. Their share of the perturbations' time follows their share of the
# improvements per second (RESTART_PRIOR counted in advance) within RESTART_TIME_SHARE. Measured at 1 s against
# the same code without them (docs/milp.md): 12522 0.1355-0.166 -> 0.0349-0.0405, 12622 (120 x 4,096, K 300)
# 0.50 -> 0.31, 12629 (250 x 4,096, K 375) 0.0425 -> 0.0345; bench.milp_skew_hunt 0.966 of the distance in the
# geometric mean (carrier-dest-hour 4,096 key groups 64n K100 0.057 -> 0.026, below its best known plan). Only
# where the count budget K is at least the staying nodes n: on 79 large count-budget snapshots of the skew campaign
# (seeds 13000-13249, 2 seeds each) the distance was 0.924 of before in the geometric mean at K / n >= 1.5, 0.988
# at 1-1.5, 1.002 at 0.5-1 (2 better, 3 worse; flights-year 40n K30 0.097 -> 0.104) and 1.000 below: with fewer
# migrations than nodes a forest built anew lands few nodes, and the tree kicks already re-partition the small
# trees around the worst node. Not under cost budgets alone: there they gave 0.988-1.004 of the distance (4
# better, 4 worse of the campaign's), the tree kicks' finding too.
# Without a budget, where the pair-balanced start runs (pair_start_pays: number partitioning, a few units a node), a
# perturbation's trial that the descent leaves worse than the best plan gets pair re-partitions
# (LocalSearch.pair_balance) for at most PAIR_REPAIR_S, then the descent again: the descent's single moves and swaps
# stop early there, and a kick re-descended lands in the same local optimum. Seen (bench.milp_campaign 12419: 63
# staying nodes of random capacities, 17 draining, 160 units, no budget): 0.57-0.58 points at 1 s against 0.23-0.28
# at 5 s; with it 0.25-0.39 at 1 s. Chosen over 0.005 s and 0.06 s on 7 such snapshots x 3 seeds (geometric mean
# 0.116 / 0.112 / 0.123 points). Small calls stop within their gap before the perturbations (bench.milp_small: the
# same plans and times).
PAIR_REPAIR_S = 0.02
RESTART_BAND = (0.25, 1.15)
RESTART_TIME_SHARE = (0.05, 0.5)
RESTART_PRIOR = 0.3
# CPU a full-model proof on CP-SAT needs per boolean (one worker, full presolve). Measured on random 10-40-node
# snapshots of 450-1,900 booleans with budgets of 10-20 migrations: proofs took 60-790 us per boolean (median ~150;
# many not within 1 s at all), and slices shorter than the presolve (10-40 ms) return no solution at all. Above
# TINY_MODEL_MOVES a full model is only started when the time left covers this much per boolean: otherwise its
# slices end before CP-SAT has a solution, and the call only pays for them (e.g. 900 booleans at time_limit_s 0.2).
FULL_MODEL_S_PER_MOVE = 200e-6
# Of the rounds' time, the most a small problem's full model takes in its own doubling slices before it hands over to
# the perturbations (with the full model beside them for the rest of the call, as after a stall). Why: a full model
# that improves a little in every slice never stalls, and the perturbations, which find far better plans there in
# milliseconds, never ran: campaign skew 10009 (16 nodes x 128 key groups, K16) at 3 s 3.61 points with 8 model
# rounds and no perturbation, against 2.03 at 1 s; at 5 s 2.48. A proof of T s is found either way only when
# T is at most about half the rounds' time: a slice of T starts T after the rounds' start (the slices double), and
# after the hand-over the full model beside the perturbations gets the second half in one go.
FULL_PHASE_SHARE = 0.5
# (ratio, points): a plan at most this far above the bound is near-optimal by issue 10's measure (within 10 % or 0.05
# points of the best plan); where a small problem's full model cannot be proven in the time left, such a plan ends the
# call (see _Rounds.run).
NEAR_OPTIMAL = (1.1, 0.05)
MAX_ROUND_MOVES = 3_000  # booleans of one neighbourhood model (halved while building outgrows the slice)
MIN_ROUND_MOVES = 200
DESCENT_STEPS = 20_000  # cap on the steps of one descent (each is also bounded by the deadline)
FINISH_SHARE = 0.3  # of the time limit kept for the rounds when unfinished descents are continued
START_SHARE = 0.15  # of the time left, for each start and for its descent
FIRST_SHARE = 0.4  # of the time left, for the descent of the first start
# Of the migrations, sent home by one perturbation (drawn uniformly). Measured on real skew (40-node snapshots, 2 s,
# 9,000 perturbations): the share of perturbations that find a new best plan grows from 0.7 % at 5-10 % to 2.3 %
# at 30-35 %; 10-50 % against 5-30 %: 5 % lower distances on average over 8 snapshots (4 of them held out).
PERTURBATION_SHARE = (0.1, 0.5)
PERTURBATION_UNITS = 32  # migrations sent home by one perturbation at most
# On a coarse lattice of loads (see FILL_LEVELS) a better plan is a different forest of migrations: the plans in
# between lie on the plateau. Calls cut at 300 perturbations (8 seeds): busiest-day snapshots of other days, node
# counts and budgets (not in the bench) at their bound in 4 of 8 against 2 of 8 (3rd day, 36 nodes, K 30), 8 / 7,
# 8 / 7 and equal on three more; flights-day 40n K30 at 200 perturbations 29 of 30 against 16 of 30 (5-30 %: 6).
PERTURBATION_SHARE_COARSE = (0.3, 0.7)
# The band repair after a perturbation (LocalSearch.fill_band): its band is the best plan's distance times a factor
# drawn from FILL_BAND (from a local optimum of flights-year 40n K30 at 0.188: a better plan in 3 % of the repairs
# with a band at 1.0-1.15 times d, 0.5 % at 0.8, none at 0.6).
FILL_BAND = (0.95, 1.15)
# Loads that are record counts (every load a multiple of one step) make the distances a plan can have a lattice
# (bounds.deviation_levels_below). Where its levels are coarse, FILL_BAND's lower end (0.95 d) lies above the next
# level below d, so a band drawn from it asks for no better plan than the current one (every band from the next
# level up to d demands the same), and the perturbations never leave a plateau: on the busiest day of NYC flights
# (1,024 key groups of 1-9 departures, one departure = 2 points, 40 nodes, 30 migrations) every one of 40 calls at
# 1 s ended at 2.239 while 1.741, the bound, is reached with 29 migrations (proven with CP-SAT on the units grouped
# by node and size). The band then starts FILL_LEVELS levels below d (when that is below 0.95 d): the band repair
# moves units off the nodes of the level just below d too, which a plan one level better needs.
FILL_LEVELS = 2
FILL_SHARE = 0.7  # of the perturbations' time, for those repaired by the band repair first, at the start
FILL_SHARE_RANGE = (0.3, 0.85)
# Under cost budgets (prior share, lowest share): measured over 5 cost snapshots, 6 seeds, the band repair at a
# prior of 0.7 (0.3) lowered flights-year 40n cost 2 % 1.358 -> 1.358 (1.303) and raised the 2,048-key-group
# snapshot 1.020 -> 1.197 (1.200), where only ~30 repairs fit in a second: it starts with a small share there.
FILL_SHARE_COST = (0.3, 0.1)
# Seconds counted in advance for each kind of repair (with the wins above): 0.1 against 0.02, interleaved A/B over
# 14 real-skew snapshots (10 held out), 6 seeds, 1 s: geometric mean of the distance 0.981 (0.935 on 6 of them).
FILL_PRIOR_S = 0.1
# Cap on the band repair's moves, per staying node (each lands a node or takes excess off: it ends anyway).
FILL_STEPS_PER_NODE = 4
MODEL_SHARE_MIN = 0.15  # of the rounds' time, for move-model rounds however rarely they improve the plan
# Shortest slice of a move-model round (CP-SAT) that is run while perturbations have migrations to send home.
# Measured at 1 s (slices of 50 ms) on the 14 real-skew instances of bench.milp_skew and its held-out set and the 12
# Madsen 5.1 configurations, 2 seeds each: no model round ever improved the plan (their 15-20 % of the time went to
# waste); at 2 s (slices of 0.1 s) model rounds improved it on 4 of the 14 real-skew instances, at 5 s on 6.
MODEL_SLICE_MIN = 0.1
# Share of the bound's threshold within which the first bisection stops (a 0.1 % higher threshold for the aimed
# starts; on the throughput bench's snapshots 15 tests instead of 29).
COARSE_BISECTION = 1e-3
# Acceptance of the iterated perturbation (Lourenco, Martin & Stutzle, "Iterated local search"): perturbations
# start from a current plan, which a trial replaces when it is not worse (ties too: plateau moves); after
# WALK_PERTURBATIONS perturbations without a new best plan the next trial replaces it whatever its distance (a
# random-walk step away from the optimum the search is stuck at). The best plan is kept apart. Measured on real
# skew: 0.7-2.3 % of the perturbations find a new best plan while the search moves (PERTURBATION_SHARE), so 300
# perturbations without one happen by chance with probability 0.993^300 ~ 12 % at the lowest rate and are a
# stall; a stuck optimum is left about once in 1,000 perturbations.
WALK_PERTURBATIONS = 300
# A stall for the repair's choice: this many perturbations without a new best plan (walk steps do not reset it)
# and every repair is the band repair (where it applies), outside the two repairs' statistics. Why: the share
# follows improvements per second, which the cheaper descent-only repair earns while the search still moves
# (descending from far plans); they say nothing about leaving a local optimum. Measured from a stuck optimum of
# flights-year 40n cost 2 % (1.343; the budget spent to 0.2 %, the most utilized node without a migration off
# it): 0 of 700 descent-only repairs left it, 15 of 700 band repairs did (2.1 %; both after sending home 10-50 %
# of the migrations). Calls cut at a fixed number of perturbations (load-independent; 200 is a 1 s call at load
# 4, 300 at load 2): cost 2 % above its target 1.233 in 12 of 50 calls at 300 without the stall rule, 1 of 50
# with it at 40; at 200, 14 of 100 at 40, 7 of 100 at 20, 10 of 100 at 10; flights-year 40n K30 at 600 above
# 0.155 in 3 of 20 without, 3 of 20 at 40, 0 of 20 at 20. A false stall only costs speed (the band repair also
# finds improvements while the search moves).
FILL_STALL_PERTURBATIONS = 20
# Tree recombination (solvers.milp.recombine, issue 10, 7 Dec): the trees of the perturbations' plans kept in a pool
# and recombined by set partitioning once RECOMBINE_NEW_TREES new ones have come, while the recombinations have had at
# most RECOMBINE_SHARE of the rounds' time, each for at most RECOMBINE_MAX_S.
# The share of the time follows the recombinations' improvements per second against the perturbations' (RECOMBINE_PRIOR
# counted in advance), within RECOMBINE_SHARE.
# Not in the shortest calls: the rounds must have RECOMBINE_MIN_S at their start, and the first recombination comes
# RECOMBINE_AFTER_S into them, or RECOMBINE_AFTER_SHARE of their time when that is sooner (a 1 s call: about 0.44 s),
# so that the pool holds the trees of a few hundred perturbations first. Measured at 1 s on six count-budget misses of
# the hunt, 32 seeds each (docs/milp.md, the twenty-seventh session): tail airtime 80n K50 at its target on 20 seeds
# against 3, the other five within their noise.
RECOMBINE_MIN_S = 0.5
RECOMBINE_AFTER_S = 0.8
RECOMBINE_AFTER_SHARE = 0.6
RECOMBINE_NEW_TREES = 200
RECOMBINE_GROWTH = 0.25
RECOMBINE_PRIOR = 0.3
RECOMBINE_SHARE = (0.1, 0.3)
RECOMBINE_MAX_S = 0.3
# Share of the kicks that are tree kicks (_tree_kick), under count budgets on clusters without draining nodes: the
# migrations sent home are connected in the forest of migrations (nodes joined by the units moved between them),
# breadth first from the limiting node, not drawn anywhere. Why: with K migrations for about as many nodes to fix,
# each tree of the forest balances a few nodes (its deviations sum to about zero); random kicks take a move or two
# off many trees and the repair rebuilds the same trees, a kick of whole trees around the limiting node lets the
# repair re-partition those nodes. Measured after 300 perturbations, 8 seeds, on 12 count-budget snapshots
# (bench.milp_skew_hunt, bench.milp_skew, held out): geometric mean of the distance 0.79 of random kicks' at a
# share of 0.8 (0.84 at 0.3, 0.81 at 0.5 and 1.0); carrier-dest-hour 4096kg 64n K100 0.117 -> 0.062, flight 4096kg
# 200n K200 0.467 -> 0.261, route-day 4096kg 150n K120 0.197 -> 0.134, held-out year 50n K40 0.347 -> 0.232. Off
# under cost budgets (no gain: 1.002 over 9 cost snapshots) and with draining nodes (2-10 % worse on 2 snapshots:
# their units must leave, the kick sends them back); the rest of the kicks stay random (a small forest kicked
# around one node only gives the same few kicks: dest 128kg 8n K8 reached its optimum in 17 of 20 seeds at a
# share of 1.0 without the random order of ties, 20 of 20 with random kicks alone, 19 of 20 now).
TREE_KICK = 0.8
STALL_ROUNDS = 24  # rounds without improvement after which the search stops, once it has also run as long
# as it took to find the best plan
# A small problem's full model (at most FULL_MODEL_MOVES booleans, CP-SAT) searched *beside* the perturbations for
# the rest of the call, in a thread (_FullModelThread), once its own doubling slices stall: CP-SAT releases the GIL
# while it searches, and runs at the lowest CPU priority (_StoppableSolver.solve), so the perturbations keep their
# core and a busy service loses nothing to it. Why: where the perturbations are stuck in a basin, CP-SAT
# warm-started from their plan finds a better one in a few tenths of a second: airports city 128kg 12n cost 3 %
# (bench.milp_skew_hunt, 1,276 booleans): 3,700 perturbations in a 1 s call left 1.659 on 7 of 8 seeds; CP-SAT
# from that plan reaches the optimum 1.363 within 0.3 s on 2 of 3 seeds and 0.6 s on 3 of 3 with 2 workers (with
# one worker, 0 of 6: the improvement comes from the default_lp worker of the 2-worker portfolio). Now 1.363 on
# every seed. Measured and reverted twice: the full model *instead of* the perturbations, in doubling slices at
# every stall (fourth session) or one slice of 70 % of the time left after 300 perturbations without a win (fifth):
# airports reached, but 7-9 of the 308 snapshots where a full model applies got worse. Beside them, at normal
# priority (3 threads on 2 cores: the perturbations at 80 % of their speed) 4 better and 8 worse over 3 seeds; at
# the lowest priority 8 better and 4 worse (geometric mean 0.999, calls more than 10 % or 0.05 points above the
# best of both 17 -> 14; see docs/milp.md).
BACKGROUND_WORKERS = 2
BACKGROUND_MIN_S = 0.1  # least time left for the thread to start (CP-SAT's presolve alone takes 10-40 ms)


@dataclass
class _Best:
    """The best plan so far, compared on the MILP's lexicographic objective (d, then du + dl), exactly."""

    search: LocalSearch
    name: str
    key: tuple[float, float] = field(init=False)

    def __post_init__(self) -> None:
        self.key = self.search.key()

    def offer(self, search: LocalSearch, name: str) -> bool:
        key = search.key()
        if key < self.key:
            self.search, self.name, self.key = search, name, key
            return True
        return False


def solve_milp(
    instance: AssignmentInstance,
    backend: Backend = "cp-sat",
    time_limit_s: float = 2.0,
    relative_gap: float = 0.001,
    seed: int = 0,
    width: int | None = None,
    per_node: int = 12,
    residual_gap: float = RESIDUAL_GAP,
    residual_gap_max: float = RESIDUAL_GAP_MAX,
    second_chain: bool = True,
) -> Plan:
    """`second_chain`: where the rounds of a large problem have a second core, a second perturbation chain runs in a
    child process beside them (solvers.milp.second_chain; False: this process alone).

    The search stops once the best plan is within `relative_gap` of its own distance, or within `residual_gap`
    of the current plan's distance (at most `residual_gap_max` points), of the proven bound (the plan is `optimal`
    only when it meets the bound)."""
    started = time.perf_counter()
    # The last step, model round or descent may run a little past the deadline it checked: keep a margin so the
    # call returns within time_limit_s (the service adds parsing, validation and serialization on top).
    deadline = started + time_limit_s * (1 - DEADLINE_MARGIN) - 0.005
    # The preparation (the drained problem, the bound and its refinement) ends within the first quarter of the time.
    first_quarter = started + 0.25 * (deadline - started)
    notes: list[str] = []
    asked = instance
    # A budget that cannot bind (at least as many migrations, or as much state, as all the movable units) is no
    # limit: the problem is the one without a budget, with its drain and its starts (the repacked start, pairs of
    # nodes re-partitioned). Seen (bench.milp_campaign seed 14567: 80 nodes of random capacities, 4 draining, 400
    # units, 400 migrations): 3.12-4.04 points at 1 s and 2.27-3.17 at 5 s under the budget; 2.27-2.59 at 1 s
    # without it. And under such a budget a plan kept units on draining nodes that it could move (seed 14521).
    unbound = asked.budgeted and not asked.budget_binds
    problem = replace(asked, max_migrations=None, max_migration_cost=None) if unbound else asked
    if unbound:
        notes.append(
            "the budget cannot bind (every movable unit may move within it): planned as without a budget"
        )
    instance, original, start = search_problem(problem, first_quarter)
    if instance is not problem:
        notes.append(
            "no budget: every unit leaves the draining nodes (placed largest first, then searched)"
            if start is original
            else "no budget: every unit leaves the draining nodes (they fit only with every movable unit placed "
            "anew, largest first; then searched)"
        )
    elif not problem.budgeted and (problem.movable & problem.on_draining).any():
        kept = problem.movable & problem.draining[start]
        notes.append(
            "no budget: not every unit of the draining nodes fits on the staying nodes; the search starts with the "
            f"{int(kept.sum())} largest home (the rest placed largest first), and any unit may stay"
        )
    # The bisection first to a thousandth of its threshold: most small calls end with a start whose own distance
    # the bound's tests rule out below (one test); the bound is refined to full precision only when they do not.
    bound = lower_bound(instance, first_quarter, COARSE_BISECTION)
    # points; start: every unit placed. At most RESIDUAL_GAP_MAX points: from a very unbalanced start (200 points) a
    # thousandth would stop 0.2 points above the bound, where better plans are often within reach.
    absolute_gap = min(residual_gap * instance.load_distance(start), residual_gap_max)
    # Loads that are counts: every distance is a level of their lattice, so each bound is raised to the next level.
    steps = utilization_steps(instance)
    mean = instance.mean_utilization
    lower = lattice_bound(bound.value, mean, steps)

    def meets(value: float, d: float | None = None) -> bool:
        return (best.key[0] if d is None else d) <= value + OPTIMALITY_TOLERANCE

    def proven_at(d: float) -> bool:
        """Whether a plan of distance d is proven optimal: it meets the bound, or the bound's counting tests rule
        out any lower distance (one test, where the bisection stopped short of it)."""
        nonlocal lower
        # The tests pass at the threshold and above (they are monotone): only a distance below it can be ruled out.
        below = d - 0.5 * OPTIMALITY_TOLERANCE < bound.threshold
        if below and not meets(lower, d) and bound.rules_out(d - 0.5 * OPTIMALITY_TOLERANCE):
            lower = max(lower, d - 0.5 * OPTIMALITY_TOLERANCE)
        return meets(lower, d)

    def settled() -> bool:
        """Whether the best plan is proven optimal or within the gap."""
        d = best.key[0]
        proven_at(d)
        return d - lower <= max(relative_gap * d, absolute_gap, OPTIMALITY_TOLERANCE)

    def slice_end(share: float) -> float:
        now = time.perf_counter()
        return min(deadline, now + share * (deadline - now))

    def shaved() -> LocalSearch:
        search = LocalSearch(instance, start, original)
        search.shave(slice_end(0.5), DESCENT_STEPS)  # the strongest start at scale: up to half the time
        return search

    def paired(target: Callable[[], float], share: float = START_SHARE) -> Callable[[], LocalSearch]:
        def make() -> LocalSearch:
            search = LocalSearch(instance, start, original)
            search.pair(slice_end(share), target=target())
            return search

        return make

    packed: LocalSearch | None = None  # the packed plan (built before the starts), when not proven at once

    def bound_built() -> LocalSearch:
        # The best of the plans built from the bound's threshold (see solvers.milp.starts): under a cost budget
        # also the one that sheds the cheapest load first.
        search = LocalSearch(
            instance, bound_plan(instance, start, bound.threshold, slice_end(START_SHARE)), original
        )
        if instance.max_migration_cost is not None:
            cheapest = bound_plan(
                instance, start, bound.threshold, slice_end(START_SHARE), cheapest_first=True
            )
            cheapest_search = LocalSearch(instance, cheapest, original)
            if cheapest_search.key() < search.key():
                search = cheapest_search
        if packed is not None and packed.key() < search.key():
            return LocalSearch(instance, packed.assignment, original)
        return search

    # Starts, each followed by the descent within its share of the time left: largest-load-first and Flux (fast,
    # budget-aware, capped), the largest-load-first baseline's own plan, the plan built from the bound's threshold,
    # and the current plan. A start that meets the bound ends the call.
    start_name = "current plan" if start is original else "start placement"

    def current_plan() -> LocalSearch:
        return LocalSearch(instance, start, original)

    def baseline_plan(solver: Callable[[AssignmentInstance, float | None], Plan]) -> IntArray | None:
        return floor_plan(asked, instance, solver, slice_end(START_SHARE))

    def baseline_start(
        solver: Callable[[AssignmentInstance, float | None], Plan],
    ) -> Callable[[], LocalSearch]:
        # A baseline's plan as a start, so the answer is never worse than that baseline's once its descent has
        # run. The search's own largest-load-first (`shaved`) is budget-aware and fast at scale but not the same
        # walk: on a snapshot whose hot unit sits beside pinned load (150 nodes, 6,000 Zipf units, mixed
        # capacities, no budget) it ended at 1.32 points where no step of the descent helps, while the baseline's
        # plan was 0.86 and its descent 0.32.
        def make() -> LocalSearch:
            plan = baseline_plan(solver)
            return current_plan() if plan is None else LocalSearch(instance, plan, original)

        return make

    def repacked() -> LocalSearch | None:
        # Every movable unit placed anew, largest first (solvers.milp.starts.repacked_plan), then pairs of nodes
        # re-partitioned exactly: number partitioning at scale, where the budget does not bind. Not once the best
        # plan is within FLOOR_CHECK_GAP of the bound (no plan is better by more).
        if best.key[0] - lower <= FLOOR_CHECK_GAP:
            return None
        plan = repacked_plan(instance, start, slice_end(START_SHARE))
        if plan is None:
            return None
        search = LocalSearch(instance, plan, original)
        # The descent first (a millisecond where units are many a node), the pair re-partitions (0.1 ms a pair)
        # only while the plan is not within the gap the call stops at: on 10 x 100 snapshots without a budget they
        # polished 0.013 points to 0.001 for the whole slice, 26 ms a call, where the descent alone reaches 0.003.
        good_enough = lower + max(absolute_gap, OPTIMALITY_TOLERANCE)
        search.descend(slice_end(START_SHARE), DESCENT_STEPS, proven_at)
        if search.key()[0] > good_enough:
            search.pair_balance(slice_end(START_SHARE), good_enough)
        return search

    def pair_balanced() -> LocalSearch:
        # The current plan with pairs of nodes re-partitioned exactly (LocalSearch.pair_balance): number
        # partitioning, where the other starts' single moves and swaps stop early.
        search = LocalSearch(instance, start, original)
        search.pair_balance(slice_end(START_SHARE))
        return search

    # The baselines whose plans the answer is never worse than: the first is always a start, both are checked at a
    # stop on the gap (below).
    floor_baselines = [
        ("largest-load-first baseline start", baselines.largest_load_first),
        ("flux baseline start", baselines.flux),
    ]
    # The first start's descent: 40 % of the time, or an ordinary share where the repacked start comes next
    repacks = repack_fits(instance)
    first_share = START_SHARE if repacks else FIRST_SHARE
    starts: list[tuple[str, Callable[[], LocalSearch | None]]] = [
        # Flux aimed at the bound's threshold: pairs already within it spend no migrations (plain Flux spends the
        # budget on nodes near the mean, where it buys nothing); first, as the plan most often best after its
        # descent on real skew at scale.
        ("flux start", paired(lambda: bound.threshold, first_share)),
        ("largest-load-first start", shaved),
        (floor_baselines[0][0], baseline_start(floor_baselines[0][1])),
        ("bound-built start", bound_built),
        # Flux aimed between the bound and the best plan so far: when the bound is loose, nodes within that
        # need no move either.
        ("aimed flux start", paired(lambda: 0.5 * (bound.threshold + best.key[0]))),
        (start_name, current_plan),
    ]
    if repacks:
        # Second where the budget does not bind, after a flux start whose descent gets an ordinary share (see
        # first_share). First, it was as good on 315 smaller snapshots (geometric mean 0.998) but it answered
        # twice the migrations in the median: a call stops at the first plan within its gap, and the flux start's
        # repairs keep units home. Second after a flux start of 40 % of the time, it came too late at scale
        # (1,000 nodes x 20,000 units piled on the first nodes, no budget: 32 points at 1 s; now 0.46 at 0.5 s).
        starts.insert(1, ("repacked start", repacked))
    if pair_start_pays(instance):
        starts.append(("pair-balanced start", pair_balanced))
    setup = time.perf_counter()
    # The answer if time is out already: the current plan, or where not every unit of the draining nodes fits, the
    # plan that drains what fits (see search_problem).
    best = _Best(LocalSearch(instance, start, original), start_name)
    setup_s = (
        time.perf_counter() - setup
    )  # what one more search state costs (O(units)): no start that cannot pay it
    unfinished: list[tuple[str, LocalSearch]] = []
    # Start states whose descent ran to its end: a start that builds one of them again (e.g. the aimed Flux start
    # making the first start's moves) would repeat the same steps to a plan already offered.
    descended: set[tuple[bytes, bytes, int, float]] = set()
    tried: set[str] = set()  # the starts made

    def floor_check() -> None:
        """A plan not proven optimal, at a stop on the gap or left by a stall, is final only once it is no worse than
        the baselines' own plans (the issue's "never worse than any baseline"): a baseline not made a start whose
        plan is better is descended and offered now. A relative gap of 0.1 % is a whole point where hot units make d
        1,000 points: on 150 nodes with two units of ten nodes' load each the first start stopped 0.21 points above
        the bound that flux and largest-load-first both meet. Under a budget a flux start within the relative gap
        ended 0.0043 points above the plan of largest-load-first, which meets the bound (bench.milp_campaign
        --family skew seed 11342, 16 x 128 K40; and 1 of 400 snapshots of the throughput bench, 10 x 100 K10:
        1.8102 against 1.8028). Without a budget too, however close the stop is to the bound: until 2 Dec a stop
        within FLOOR_CHECK_GAP of it skipped the check (the baselines cost more than the search on 10 x 100), and
        bench.milp_campaign seed 14536 (3 nodes, one draining, 300 units over 8 windows, no budget) answered 0.0022
        points where largest-load-first answers 0.0015. A baseline's plan is compared by its distance before a
        search state is built for it (O(units)), so a check that finds nothing better costs the baselines alone."""
        if meets(lower):
            return
        for name, solver in floor_baselines:
            if name in tried or meets(lower) or time.perf_counter() + 3 * setup_s >= deadline:
                continue
            tried.add(name)
            plan = baseline_plan(solver)
            if plan is None or round(instance.load_distance(plan), 9) > best.key[0]:
                continue
            floor = LocalSearch(instance, plan, original)
            if floor.key() < best.key:
                floor.descend(slice_end(START_SHARE), DESCENT_STEPS, proven_at)
                best.offer(floor, f"{name} + descent")

    done = settled()
    full = int(instance.active.sum()) * int(instance.movable.sum()) <= FULL_MODEL_MOVES
    if not done and not full:
        # The plan packed into the bound's band first: a few ms, and where it meets the bound the call ends here
        # (e.g. 1,000 nodes x 100,000 key groups of flight counts at its bound, 0.409, in 25 ms; every start and
        # 1-5 s of search ended at 0.488 without it). Not where the full model will run (it finds such plans
        # itself, with a proof): on 10 x 100 snapshots the packing costs 0.2-0.9 ms and never met the bound.
        packing = packed_plan(instance, start, bound.threshold, slice_end(START_SHARE))
        # (a search state, O(units) to set up, only for a plan that differs from the current one: the best already)
        packed = LocalSearch(instance, packing, original) if (packing != start).any() else None
        # Only a proof ends the call here: a packed plan merely within the gap still gets the starts' descents.
        if packed is not None and best.offer(packed, "packed bound start"):
            done = proven_at(best.key[0])
    for index, (name, make) in enumerate(starts):
        if time.perf_counter() + 3 * setup_s >= deadline or done:
            break
        made = make()
        tried.add(name)
        if made is None:  # (a start that does not apply here)
            continue
        search = made
        state = search.state_key()
        if state is not None and state in descended:
            continue
        # A descent ends once its plan meets the bound (the plan is optimal in d).
        if not search.descend(
            slice_end(first_share if index == 0 else START_SHARE), DESCENT_STEPS, proven_at
        ):
            unfinished.append((name, search))
        elif state is not None:
            descended.add(state)
        if best.offer(search, f"{name} + descent"):
            done = settled()
    # Descents the time share cut short are finished in turn, the best so far first (the descent is what improves
    # a start most), while FINISH_SHARE of the time is left for the rounds.
    while unfinished and not done:
        if deadline - time.perf_counter() < FINISH_SHARE * (deadline - started):
            break
        unfinished.sort(key=lambda item: item[1].key())
        name, search = unfinished.pop(0)
        if not search.descend(slice_end(START_SHARE), DESCENT_STEPS, proven_at):
            unfinished.append((name, search))
        if best.offer(search, f"{name} + descent"):
            done = settled()

    # No start proven: the bound to full precision before the gap is judged (same tests as before).
    if not done:
        bound = bound.refined(first_quarter)
        lower = max(lower, lattice_bound(bound.value, mean, steps))
        done = settled()
    if done:
        floor_check()
    proven = meets(lower)
    rounds = 0
    if proven:
        notes.append(f"the {best.name} plan meets the lower bound; no solver call needed")
    elif done:
        notes.append(
            f"the {best.name} plan is within {best.key[0] - lower:.2g} points of the lower bound "
            f"(relative_gap {relative_gap}, residual_gap {residual_gap} of the current distance, at most "
            f"{residual_gap_max:g} points); no solver call needed"
        )
    else:
        rounds_run = _Rounds(instance, best, original, lower, deadline, relative_gap, seed, backend)
        rounds_run.setup_s, rounds_run.absolute_gap, rounds_run.bound = setup_s, absolute_gap, bound
        rounds_run.steps = np.zeros(0) if steps is None else steps
        rounds_run.second_chain = second_chain
        rounds_run.run(started, time_limit_s, width, per_node, full=full)
        lower = lattice_bound(rounds_run.lower, mean, steps)
        if not rounds_run.proven:
            floor_check()  # (a stop on the gap or a stall leaves time for it; at the deadline it is skipped)
        rounding, rounds = rounds_run.rounding, rounds_run.model_rounds
        proven = rounds_run.proven or meets(lower)
        if rounds_run.proven:
            notes.append(
                f"the full model is proven optimal ({backend}; integer scaling {2 * rounding:.2g} points)"
            )
        # Walk steps only where there were any: the notes of calls without them read as before.
        walks = f" ({rounds_run.walks} walk steps)" if rounds_run.walks else ""
        if rounds_run.stall_repairs:  # likewise: said only where a stall chose the repair
            walks += f" ({rounds_run.stall_repairs} band repairs in stalls)"
        if rounds_run.full_skipped:
            notes.append(rounds_run.full_skipped)
        if rounds_run.chain is not None:
            notes.append(
                f"a second chain in a child process ran {rounds_run.chain.perturbations} perturbation rounds beside "
                f"them; {rounds_run.chain_wins} of its plans became the best plan"
            )
        notes.append(
            f"{backend}: {rounds} model rounds, {rounds_run.perturbations} perturbation rounds{walks}; "
            f"stopped: {rounds_run.stop_reason}"
        )
        pool = rounds_run.pool
        if pool is not None and pool.recombinations:
            notes.append(
                f"tree recombination: {pool.recombinations} set-partitioning models over {len(pool.trees)} trees "
                f"({pool.seconds:.2g} s); {pool.wins} of their plans became the best plan"
            )
        if backend == "cp-sat" and rounds:
            notes.append(
                "CP-SAT works on utilizations scaled to integers (2^30 steps over the model's range); its rounding "
                f"error is at most {rounding:.2g} points per node (plans are re-evaluated exactly)"
            )
    notes.extend(bottleneck_notes(instance))
    notes.append(f"the plan returned comes from: {best.name}")
    # Units a plan left on draining nodes leave where that costs no balance, as the budget allows (a drained
    # problem's plans leave none there).
    assignment = drained_at_no_cost(
        asked, best.search.assignment, started + time_limit_s * (1 - DEADLINE_MARGIN / 2)
    )
    changed = bool((assignment != asked.current).any())
    status: PlanStatus = "optimal" if proven and changed else ("feasible" if changed else "unchanged")
    # (a bound is valid to OPTIMALITY_TOLERANCE: units of 1e-9 whose moves no step takes set a bound of 2e-9 points
    # where the drain above reaches 0; the bound reported is never above the plan's own distance)
    final_d = (
        best.key[0]
        if assignment is best.search.assignment
        else min(best.key[0], asked.load_distance(assignment))
    )
    return Plan(assignment=assignment, status=status, lower_bound=min(lower, final_d), notes=notes)


def search_problem(
    instance: AssignmentInstance, deadline: float = float("inf")
) -> tuple[AssignmentInstance, IntArray, IntArray]:
    """The problem the search solves, its original plan (the current plan with every unit placed: where units are
    before the plan, what migrations and refunds count from) and the plan its starts begin from (the original,
    except where not every unit of the draining nodes fits, below).

    Without a budget, every movable unit on a draining node leaves it (CONTRACT.md: the plan moves units off a
    draining node as the budget allows; there is none). The problem is then the instance with those units
    unplaced, under the instance's own utilization cap: the start places them like units without a node (largest
    first onto the least utilized staying node with room, one heap), and no step or model can send them back (a
    unit placed anew has no home to return to). Before (29 Nov, bench.milp_campaign seed 2038: 42 of 150 nodes
    draining, loads a lattice of 0.79 points) the search kept 16-17 units on draining nodes, its model letting them
    return home and its packed start leaving what fitted nowhere in the band; and at 4,000 nodes (2,000 draining
    with all 100,000 units) its starts, moving them one step at a time, left 53,000-72,000 there after 2 s.
    Where they do not all fit on the staying nodes, the problem is the snapshot asked (any unit may stay on its
    draining node or go back there; the load left there counts in the load distance through the mean), and the
    starts begin from the plan that keeps the largest of them home, as few as a bisection over how many finds, and
    places the rest as above (as the baselines' drain, which moves what fits). Seen (30 Nov, a hypothesis example):
    a unit of 1e6 that fits nowhere beside one of load 0 on the draining node made the search take the instance as
    it is, and its plan left both there where the baselines moved the second. Raises UnsolvableRequest when a unit
    without a node fits nowhere."""
    current = instance.current
    leaving = instance.movable & instance.on_draining
    if not instance.budgeted and leaving.any():
        largest_first = np.flatnonzero(leaving)
        largest_first = largest_first[np.argsort(-instance.load[largest_first], kind="stable")]

        def drained(kept: int, anew: bool = False) -> tuple[AssignmentInstance, IntArray] | None:
            """The problem and its start with the `kept` largest leaving units left home, or None (one fits
            nowhere, or none leaves). `anew`: the start places every movable unit anew (largest first), so the
            others make room."""
            leave = leaving.copy()
            leave[largest_first[:kept]] = False
            if not leave.any():
                return None
            problem = replace(
                instance,
                current=np.where(leave, UNPLACED, current),
                utilization_cap_override=instance.utilization_cap(),
            )
            placed = (
                replace(problem, current=np.where(instance.movable, UNPLACED, current)) if anew else problem
            )
            try:
                return problem, baselines.placed_start(placed)
            except UnsolvableRequest:
                return None

        attempt_started = time.perf_counter()
        found = drained(0)
        # Each attempt is one placement (0.4 s at 10,000 nodes x 250,000 units, where 18 of them took 7.7 s): the
        # bisection stops once another would end after `deadline`, with what it has found (else the instance as is).
        attempt_s = time.perf_counter() - attempt_started
        if found is None and time.perf_counter() + attempt_s < deadline and _room_for(instance, leaving):
            # The leaving units placed around the others failed; every movable unit placed anew may still empty
            # the draining nodes (a hypothesis example, 30 Nov: 1e6 fits on a staying node under the cap of 1e6 %
            # only once that node's small units go elsewhere; the search kept it home at 333,339 points where the
            # drain that enumeration requires is 666,659).
            found = drained(0, anew=True)
        if found is None:
            # Fewer kept home fit no worse in practice (not always: the placement is greedy), so a bisection finds
            # a count that fits in O(log units) placements; it ends as its interval halves.
            low, high = 0, len(largest_first)  # drained(low) is None; keeping `high` home leaves none
            while high - low > 1 and time.perf_counter() + attempt_s < deadline:
                middle = (low + high) // 2
                attempt = drained(middle)
                if attempt is None:
                    low = middle
                else:
                    high, found = middle, attempt
            if found is not None:
                # Not every leaving unit fits: the problem is then the snapshot asked, where any unit may stay on
                # its draining node or go back there, from the start that keeps the fewest largest home. Keeping
                # exactly those home is one plan of many: a test against enumeration (30 Nov; 2 nodes, units of
                # 1e6 on each, room on the staying one for one of the draining node's 1.0 and 0.45) found the
                # drained problem of the 2 largest kept home "proven optimal" at 1000001.0 where moving the 1.0
                # and keeping the 0.45 home gives 1000000.45, and 14 such false proofs in 150 tight snapshots.
                return (
                    instance,
                    _original(instance, baselines.placed_start(instance, make_room=True)),
                    found[1],
                )
        else:
            return found[0], _original(*found), found[1]
    # (a unit without a node that fits nowhere gets a node where moving a few units makes room, within the budget)
    start = baselines.placed_start(instance, make_room=True)
    return instance, _original(instance, start), start


def _room_for(instance: AssignmentInstance, leaving: BoolArray) -> bool:
    """Whether the staying nodes' room under the cap (with every unit where it is) holds the leaving units' load in
    total: where it does not, no placement empties the draining nodes, and trying one anew costs a placement of
    every unit (0.5 s at 10,000 nodes x 250,000 units, half of them draining at 90 %, where it left the bisection no
    time: 43.4 points at 3 s against 17.7)."""
    staying = instance.active
    node_load = baselines.placed_node_load(instance, np.where(leaving, UNPLACED, instance.current))
    room = instance.utilization_cap() * instance.capacity[staying] / 100.0 - node_load[staying]
    return float(instance.load[leaving].sum()) <= float(np.maximum(room, 0.0).sum()) * (1 + 1e-9)


def _original(problem: AssignmentInstance, start: IntArray) -> IntArray:
    """The original plan of `problem` given a start that places its units without a node: they are where the start
    puts them, every other unit where it is. The start itself (the same object) where it moved nothing else; where it
    did (every movable unit placed anew, or room made for a unit), a new array."""
    original = np.where(problem.current == UNPLACED, start, problem.current)
    return start if (original == start).all() else original


def drained_at_no_cost(instance: AssignmentInstance, assignment: IntArray, deadline: float) -> IntArray:
    """`assignment` with the movable units left on draining nodes moved off where that costs no balance, as the
    budget allows: largest first, each to the staying node of least utilization after it among those it fits on
    within the cap, its resource room and mean + d (so no staying node leaves the band of the plan's load distance
    d), while the budget left by the plan covers the move. Stops at `deadline` (time.perf_counter()) with the moves
    made.

    Why (CONTRACT.md: the plan moves units off a draining node as the budget allows): the search moves a unit only
    for a better plan, and a full model returns any of its optimal plans, so a plan whose load distance is set by
    its most utilized node kept units on draining nodes that could leave for free. Measured on bench.milp_campaign
    seeds 0-399 with a budget and draining nodes (66 snapshots at 0.3 s): 57 of the plans kept such units home, some
    with budget left (seed 391: 2 units, 9 migrations left). Where not every unit fits without a budget
    (search_problem), this is what keeps a plan from leaving units home that its distance does not need there."""
    left = np.flatnonzero(instance.movable & instance.draining[assignment])
    active = np.flatnonzero(instance.active)
    if not len(left) or not len(active):
        return assignment
    d = instance.load_distance(assignment)
    limit = min(instance.utilization_cap() * (1 + 1e-12), instance.mean_utilization + d)
    drained = assignment.copy()
    tracker = baselines.BudgetTracker.of_plan(instance, drained)
    node_load = instance.node_load(drained)[active]
    capacity = instance.capacity[active]
    room = (limit - 100.0 * node_load / capacity) * capacity / 100.0  # load each node can still take
    most_room = float(room.max())
    for unit in left[np.argsort(-instance.load[left], kind="stable")].tolist():
        if tracker.exhausted or time.perf_counter() >= deadline:
            break
        load = instance.load[unit]
        if load > most_room or not tracker.allows(unit):  # (fits on no node, or over the budget: no scan)
            continue
        after = 100.0 * (node_load + load) / capacity
        j = baselines.least_utilized_fitting(after, active, limit, unit, tracker.fits)
        if j >= 0:
            tracker.spend(unit, drained, int(active[j]))
            node_load[j] += load
            room[j] = (limit - 100.0 * node_load[j] / capacity[j]) * capacity[j] / 100.0
            most_room = float(room.max())
    # The plan itself where nothing left (its distance is then the search's own, to the last bit); else the distance
    # recomputed exactly (the sums above round differently): a plan that is worse is not taken.
    if (drained == assignment).all():
        return assignment
    return drained if instance.load_distance(drained) <= d and instance.within_budget(drained) else assignment


def floor_plan(
    asked: AssignmentInstance,
    problem: AssignmentInstance,
    solver: Callable[[AssignmentInstance, float | None], Plan],
    deadline: float,
) -> IntArray | None:
    """A baseline's plan as the service answers with it alone (by `deadline`, time.perf_counter()), as a plan of the
    problem searched (`search_problem(asked)`), when it is one within the budget; else None.

    The baseline runs on the snapshot asked, not on the drained problem: the baselines drain by their own rule
    (`baselines._drain`: each draining node's units to the least utilized node after the move), which can end far
    better than the same baseline given those units without a node (bench.milp_campaign seed 8149: 80 nodes of
    random capacities, 6 draining, no budget: largest-load-first 2.854 points, the bound, against 3.436; milp
    answered 3.106). Its plan is a plan of the drained problem when it leaves no movable unit on a draining node;
    one that does (a unit its greedy found no room for) breaks the drain rule, and the baseline's plan of the
    drained problem stands in."""
    for instance in (asked, problem) if problem is not asked else (problem,):
        try:
            plan = solver(instance, max(0.0, deadline - time.perf_counter()))
        except UnsolvableRequest:
            continue
        assignment = plan.assignment
        if not instance.within_budget(assignment) or (assignment >= instance.n_nodes).any():
            continue
        if instance is problem or not (problem.movable & ~problem.active[assignment]).any():
            return assignment
    return None


def pair_start_pays(instance: AssignmentInstance) -> bool:
    """Whether the pair-balanced start runs: few units a node (a pair's units all re-partitioned, on average) on at
    most PAIR_START_NODES staying nodes (PAIR_START_NODES_UNBUDGETED without a budget), no resource caps."""
    n_active = int(instance.active.sum())
    return (
        not instance.resource_names
        and 2 <= n_active <= (PAIR_START_NODES if instance.budgeted else PAIR_START_NODES_UNBUDGETED)
        and int(instance.movable.sum()) <= PAIR_START_UNITS_PER_NODE * n_active
    )


class _StoppableSolver(cp_model.CpSolver):
    """A CpSolver that a stop asked before its search began ends at once: `stop_search` alone does nothing until
    the search has begun (the model is still being built)."""

    def __init__(self) -> None:
        super().__init__()
        self.stopped = threading.Event()

    def solve(
        self, model: cp_model.CpModel, solution_callback: cp_model.CpSolverSolutionCallback | None = None
    ) -> Any:
        if self.stopped.is_set():
            self.parameters.max_time_in_seconds = 0.0
        # The lowest CPU priority, from here on, for this thread and the workers CP-SAT starts from it (a Linux thread
        # inherits its creator's nice value): the perturbations and other requests keep their cores, the search gets
        # what is idle. Only now, after the model is built: a thread that holds the GIL at the lowest priority would
        # hold up the perturbations on a busy machine (the search itself runs without the GIL). Where threads have
        # no priority of their own (not Linux), the search runs at the process's.
        with contextlib.suppress(AttributeError, OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
        return super().solve(model, solution_callback)

    def stop(self) -> None:
        self.stopped.set()
        self.stop_search()


class _FullModelThread:
    """The full model on CP-SAT in a thread, until the call's deadline (see BACKGROUND_WORKERS). CP-SAT runs outside
    the GIL; only building its model (tens of ms for a few thousand booleans) shares the interpreter."""

    def __init__(self, model: MoveModel, deadline: float, seed: int) -> None:
        self.model = model
        # (held here so that `stop` can end its search from the caller's thread)
        self.solver = _StoppableSolver()
        self.result: BackendResult | None = None
        self.error: BaseException | None = None
        self.collected = False
        # (a margin for the solver's teardown and the hand-over; the call's own margin, DEADLINE_MARGIN, is on top)
        end = deadline - 0.01
        self.thread = threading.Thread(target=self._solve, args=(end, seed), daemon=True)
        self.thread.start()

    def _solve(self, end: float, seed: int) -> None:
        try:
            # No gap limit: as _Rounds._full_round (CP-SAT calls a solution within its gap OPTIMAL).
            self.result = solve_cpsat(
                self.model, end, 0.0, seed, workers=BACKGROUND_WORKERS, solver=self.solver
            )
        except BaseException as exc:  # re-raised in the caller's thread when collected
            self.error = exc

    def running(self) -> bool:
        return self.thread.is_alive()

    def stop(self, deadline: float) -> None:
        """End the search now and wait for the thread, until `deadline` or STOP_GRACE_S from now, whichever is
        later. (A stop that comes between the solver's check and the start of its search is asked again while the
        thread runs; the solve's own time limit ends at the deadline in any case.)"""
        until = max(deadline, time.perf_counter() + STOP_GRACE_S)
        while self.thread.is_alive():
            self.solver.stop()
            wait = min(0.005, until - time.perf_counter())
            if wait <= 0:
                return
            self.thread.join(wait)


class _Rounds:
    """The search after the starts: rounds around the best plan until the deadline, the gap, a proof, or a stall.

    Full model (small problems): each round solves the whole problem (every staying node, every movable unit,
    draining homes as refunds) with the best plan as a hint, in slices that double (the time run so far), so a
    proof can come in milliseconds and an unprovable model does not hold the call to its limit. Otherwise each
    round is an iterated perturbation (a random share of the migrations sent home, then the descent) and one short
    move-model round on a neighbourhood of extreme nodes, random nodes, and the home nodes of migrated units.
    Stall: STALL_ROUNDS rounds without improvement, and at least as long without one as it took to find the best
    plan; a full model's stall (2 rounds) hands the rest of the time to the other rounds.
    """

    def __init__(
        self,
        instance: AssignmentInstance,
        best: _Best,
        start: IntArray,
        lower: float,
        deadline: float,
        relative_gap: float,
        seed: int,
        backend: Backend,
    ) -> None:
        self.instance, self.best, self.start = instance, best, start
        self.lower, self.deadline, self.relative_gap, self.seed = lower, deadline, relative_gap, seed
        self.backend = backend
        self.solve: Callable[[MoveModel, float, float, int], BackendResult] = (
            solve_cpsat if backend == "cp-sat" else solve_highs
        )
        self.proven = False
        self.rounding = 0.0
        self.model_rounds = self.perturbations = 0
        self.stop_reason = ""
        self.full_skipped = ""  # why a small problem's full model was not started, if it was not
        self.last_round_s = 0.0
        self.setup_s = 0.0  # measured cost of a new search state
        self.round_moves = MAX_ROUND_MOVES
        self.absolute_gap = 0.0  # points (residual_gap times the current plan's distance)
        self.perturbation_s = self.model_s = 0.0  # time spent in each kind of round
        self.perturbation_wins = self.model_wins = 0  # rounds of each kind that improved the best plan
        # Time spent in perturbations repaired by fill_band first / by the descent alone, and their improvements.
        self.fill_s = self.plain_s = 0.0
        self.fill_wins = self.plain_wins = 0
        self.by_size: IntArray | None = None  # movable units by load (the band repair's size windows)
        # the staying nodes' utilization steps when loads are counts (empty: they are not), found at the first band
        self.steps: FloatArray | None = None
        self.seen: set[int] = set()  # hashes of the plans the perturbations' descents passed through
        self.counts_for_stall = True
        self.restarts = False  # whether perturbations may restart (RESTART_SHARE): on tiny models
        # Band restarts (RESTART_BAND): under a count budget of at least a migration per staying node, where the band
        # repair applies to the current placement (no movable unit on a draining node: those must leave first, the
        # descent's business), not on tiny models.
        self.band_restarts = (
            instance.max_migrations is not None
            and instance.max_migrations >= int(instance.active.sum())
            and not bool((~instance.active[start[instance.movable]]).any())
        )
        self.restart_s = self.kick_s = 0.0  # perturbation time in band restarts / in the other perturbations
        self.restart_wins = self.kick_wins = 0  # their rounds that improved the best plan
        self.bound: LowerBound | None = None  # its tests prove a plan that meets them
        # The perturbations' current plan (None: the best plan) and their count since a new best or a walk step.
        self.current: LocalSearch | None = None
        self.since_best = 0
        self.walks = 0  # trials accepted unconditionally (WALK_PERTURBATIONS)
        self.since_improved = 0  # perturbations since the last new best plan (FILL_STALL_PERTURBATIONS)
        self.stall_repairs = 0  # band repairs chosen for a stall
        self.background: _FullModelThread | None = None  # the full model beside the perturbations
        self.second_chain = True  # whether a second chain may run (solve_milp's `second_chain`)
        self.chain: SecondChain | None = None  # the second perturbation chain, seen from either process
        self.chain_wins = 0  # (parent) plans of the second chain that became the best plan
        # Pair re-partitions after a perturbation's descent (PAIR_REPAIR_S): without a budget, where the pair start runs.
        self.pair_repair = not instance.budgeted and pair_start_pays(instance)
        # Tree kicks (TREE_KICK): under count budgets without draining nodes, where they were measured to help.
        self.tree_kicks = (
            instance.max_migrations is not None
            and instance.max_migration_cost is None
            and bool(instance.active.all())
        )
        # The trees of the perturbations' plans, recombined (solvers.milp.recombine): where a budget binds, every
        # node stays and every unit is placed.
        self.rounds_began = time.perf_counter()
        recombines = trees_recombine(instance) and deadline - self.rounds_began >= RECOMBINE_MIN_S
        self.pool = TreePool(instance, start, best.search.kernels) if recombines else None
        self.recombine_after = min(RECOMBINE_AFTER_S, RECOMBINE_AFTER_SHARE * (deadline - self.rounds_began))

    def _solve(self, model: MoveModel, seconds: float, relative_gap: float) -> BackendResult:
        # The backend's own clock stops at its deadline, but building and tearing down run on top: give it a
        # share of the slice so the call ends within the slice.
        result = self.solve(model, time.perf_counter() + 0.85 * seconds, relative_gap, self._round_seed())
        self.rounding = max(self.rounding, result.rounding_error)
        return result

    def _round_seed(self) -> int:
        """A new seed for each model round, counted (within CP-SAT's int32: the largest seed, 2**31 - 1, plus a
        round was a 500)."""
        seed = (self.seed + self.model_rounds) % 2**31
        self.model_rounds += 1
        return seed

    def _full_round(self, seconds: float) -> bool:
        model = self._full_model()
        # No gap limit: CP-SAT reports a solution within its gap limit as OPTIMAL, and `optimal` means optimal
        # (the call still stops at relative_gap through the bound it returns).
        return self._take_full_result(model, self._solve(model, seconds, 0.0), "full model")

    def _full_model(self) -> MoveModel:
        inst = self.instance
        nodes = np.arange(inst.n_nodes, dtype=np.int64)
        units = np.flatnonzero(inst.movable).astype(np.int64)
        return build_move_model(inst, nodes, units, self.best.search.assignment, self.start)

    def _take_full_result(self, model: MoveModel, result: BackendResult, name: str) -> bool:
        """A full model's solution offered as the best plan; its proof (the full model is the whole problem) and
        its bound taken."""
        improved = False
        if result.chosen is not None and model.keeps_cap(result.chosen):
            solution = LocalSearch(self.instance, model.assignment_of(result.chosen), self.start)
            improved = self.best.offer(solution, f"milp ({self.backend}) {name}")
            if result.proven_optimal:
                # Optimal in scaled integers: its d, less the scaling's rounding (on the solution and on the true
                # optimum), bounds every plan; the hint was the best plan, so the best is at least as good.
                self.lower = max(self.lower, solution.key()[0] - 2 * self.rounding)
                self.proven = True
        if result.bound_d is not None:
            self.lower = max(self.lower, result.bound_d)
        return improved

    def _perturbation_round(self, rng: np.random.Generator) -> bool:
        """Iterated perturbation: a random share of the current plan's migrations sent home, then the descent;
        the trial becomes the current plan when not worse by LocalSearch.plateau_key (on a lattice of loads: fewer
        nodes at an equal d counts as better), or after a stall (WALK_PERTURBATIONS) whatever it is.
        The repair: the band repair or the descent alone by their improvements per second, the band repair alone
        once FILL_STALL_PERTURBATIONS perturbations have found no new best plan; without a budget, pair
        re-partitions after the descent where they pay (PAIR_REPAIR_S)."""
        inst, best = self.instance, self.best
        current = best.search if self.current is None else self.current
        migrated = np.flatnonzero(current.migrated_mask())
        # A current plan with no migration left (walks can reach the current assignment): back to the best.
        if not len(migrated) and current is not best.search:
            current = best.search
            migrated = np.flatnonzero(current.migrated_mask())
        if not len(migrated) or time.perf_counter() + 3 * self.setup_s >= self.deadline:
            return False
        # At most PERTURBATION_UNITS: the descent that follows takes a step per unit sent home, and a step costs
        # milliseconds at scale (a perturbation must stay a short round).
        levels = self._coarse_levels(current)
        kick = PERTURBATION_SHARE_COARSE if levels else PERTURBATION_SHARE
        size = min(PERTURBATION_UNITS, max(1, round(rng.uniform(*kick) * len(migrated))))
        trial = LocalSearch(inst, current.assignment, self.start)
        kicked = np.zeros(0, dtype=np.int64)
        restart = self.restarts and rng.random() < RESTART_SHARE
        band_restart = not self.restarts and self._band_restart_due()
        # Either restart sends every migration home (RESTART_SHARE: then as many random moves at most; RESTART_BAND:
        # then the band repair from the current placement).
        if restart or band_restart:
            kicked = migrated
        elif self.tree_kicks and rng.random() < TREE_KICK:
            kicked = _tree_kick(current, migrated, size, rng)
        if not len(kicked):
            kicked = rng.choice(migrated, size=size, replace=False)
        trial.send_home(kicked)
        if restart:
            trial.random_moves(int(rng.integers(1, len(migrated) + 1)), rng)
        # The repair: the band repair then the descent, or the descent alone. The band repair's share of the time
        # follows the two kinds' improvements per second (FILL_SHARE counted in advance), within FILL_SHARE_RANGE:
        # when the budget is all that is hard (count budgets near the nodes to fix) it finds most improvements,
        # when time is short for the instance (2,048 key groups under a cost budget, 30 repairs a second) the
        # cheaper descent alone does.
        prior, low = (FILL_SHARE, FILL_SHARE_RANGE[0]) if inst.max_migration_cost is None else FILL_SHARE_COST
        share = _earned_share(
            (self.fill_wins, self.fill_s), (self.plain_wins, self.plain_s), prior, (low, FILL_SHARE_RANGE[1])
        )
        fill = self.fill_s <= share * (self.fill_s + self.plain_s)
        # A stall: the band repair, the repair that leaves local optima (FILL_STALL_PERTURBATIONS).
        stalled = self.since_improved >= FILL_STALL_PERTURBATIONS
        fill |= stalled or band_restart
        # Without a budget there is no forest of migrations to re-partition; and the units sorted by size (once,
        # O(units log units): 30 ms at 250,000) must fit before the deadline.
        fill &= inst.budgeted
        fill &= self.by_size is not None or time.perf_counter() + 20 * self.setup_s < self.deadline
        # Units back on a draining node must leave it first: the descent's business (the band repair only lands
        # staying nodes, and measured with 5 draining nodes it spent the budget elsewhere: 1.80 -> 1.99).
        fill = fill and not bool((~inst.active[trial.assignment[inst.movable]]).any())
        started = time.perf_counter()
        if fill:
            if self.by_size is None:
                units = np.flatnonzero(inst.movable)
                self.by_size = units[np.argsort(inst.load[units], kind="stable")]
            band = (
                best.key[0] * float(np.exp(rng.uniform(*np.log(RESTART_BAND))))
                if band_restart
                else self._fill_band_width(current, levels, rng)
            )
            trial.fill_band(
                band, rng, self.deadline, FILL_STEPS_PER_NODE * len(trial.active_nodes), self.by_size
            )
        trial.descend(self.deadline, DESCENT_STEPS, seen=self.seen)
        if self.pair_repair and trial.key() > best.key:
            trial.pair_balance(min(self.deadline, time.perf_counter() + PAIR_REPAIR_S), best.key[0])
            trial.descend(self.deadline, DESCENT_STEPS, seen=self.seen)
        if self.pool is not None:
            new = self.pool.add(trial.assignment, np.abs(trial.util - trial.mean), best.key[0])
            # the parent recombines both chains' trees
            if new and self.chain is not None and self.chain.in_child:
                self.chain.send_trees([(tree.units, tree.dests) for tree in new])
        name = best.name if "perturbation" in best.name else f"{best.name} + perturbation"
        self.perturbations += 1
        improved = best.offer(trial, name)
        self.since_best = 0 if improved else self.since_best + 1
        self.since_improved = 0 if improved else self.since_improved + 1
        if self.since_best >= WALK_PERTURBATIONS:
            self.current, self.since_best = trial, 0
            self.walks += 1
        elif trial.plateau_key() <= current.plateau_key():
            self.current = trial
        else:
            self.current = current
        spent = time.perf_counter() - started
        if band_restart:
            self.restart_s += spent
            self.restart_wins += int(improved)
            return improved
        self.kick_s += spent
        self.kick_wins += int(improved)
        if fill and stalled:
            # Outside the statistics: their time would hold the band repair back once the search moves again
            # (the share balances time), and escapes from a stall say nothing about the moving search.
            self.stall_repairs += 1
        elif fill:
            self.fill_s += spent
            self.fill_wins += int(improved)
        else:
            self.plain_s += spent
            self.plain_wins += int(improved)
        return improved

    def _band_restart_due(self) -> bool:
        """Whether this perturbation is a band restart (RESTART_BAND): while the restarts have had less than their
        share of the perturbations' time, which follows their improvements per second against the other
        perturbations' (RESTART_PRIOR counted in advance), within RESTART_TIME_SHARE."""
        if not self.band_restarts:
            return False
        share = _earned_share(
            (self.restart_wins, self.restart_s),
            (self.kick_wins, self.kick_s),
            RESTART_PRIOR,
            RESTART_TIME_SHARE,
        )
        return self.restart_s <= share * (self.restart_s + self.kick_s)

    def _coarse_levels(self, current: LocalSearch) -> list[float]:
        """The FILL_LEVELS lattice levels below the plan's distance d, largest first, when loads are counts and the
        next level lies under FILL_BAND's lower end (a coarse lattice: bands and kicks for it), else []."""
        if self.steps is None:  # (solve_milp hands over the steps it found)
            steps = utilization_steps(self.instance)
            self.steps = np.zeros(0) if steps is None else steps
        if not len(self.steps):
            return []
        d = current.key()[0]
        levels = deviation_levels_below(d, current.mean, self.steps, FILL_LEVELS)
        return levels if levels and levels[0] < FILL_BAND[0] * d else []

    def _fill_band_width(self, current: LocalSearch, levels: list[float], rng: np.random.Generator) -> float:
        """The band repair's band: on a coarse lattice (`levels`, see _coarse_levels) drawn between the second and
        the first level below the plan's distance, else the distance times a factor drawn from FILL_BAND."""
        if levels:
            return float(rng.uniform(levels[1] if len(levels) > 1 else 0.0, levels[0]))
        return current.key()[0] * rng.uniform(*FILL_BAND)

    def _model_round(
        self, rng: np.random.Generator, width: int, per_node: int, seconds: float
    ) -> bool | None:
        """A short move-model round on a neighbourhood of extreme nodes, random nodes, and the home nodes of
        migrated units, warm-started from the best plan; its plan is descended. None when none fits any more."""
        inst, best = self.instance, self.best
        improved = False
        # A round costs its model building (Python, per boolean) on top of the solve: start one only when the
        # last one's whole duration still fits, and keep the model within what a round can build.
        round_started = time.perf_counter()
        if round_started + 1.5 * max(self.last_round_s, 2 * seconds) >= self.deadline:
            return None
        extra = rng.choice(np.flatnonzero(inst.active), size=width, replace=False)
        nodes, units = choose_neighbourhood(
            inst, best.search.assignment, self.start, width, per_node, rng, extra
        )
        per_unit = max(1, int(inst.active[nodes].sum()))
        if len(units) * per_unit > self.round_moves:
            units = np.sort(rng.choice(units, size=max(1, self.round_moves // per_unit), replace=False))
        model = build_move_model(inst, nodes, units, best.search.assignment, self.start)
        result = self._solve(model, min(seconds, self.deadline - time.perf_counter()), self.relative_gap)
        self.last_round_s = time.perf_counter() - round_started
        if self.last_round_s > 2 * seconds:  # building dominated: smaller models from now on
            self.round_moves = max(MIN_ROUND_MOVES, self.round_moves // 2)
        if result.chosen is not None and len(result.chosen):
            solution = model.assignment_of(result.chosen)
            if inst.within_budget(solution) and model.keeps_cap(result.chosen):
                trial = LocalSearch(inst, solution, self.start)
                trial.descend(self.deadline, DESCENT_STEPS)
                improved |= best.offer(trial, f"milp ({self.backend}) neighbourhoods")
        return improved

    def _neighbourhood_round(
        self, rng: np.random.Generator, width: int, per_node: int, seconds: float
    ) -> bool:
        """A perturbation or a model round: whichever has had less of the time so far (perturbations take
        milliseconds, model rounds tens of them: both kinds get an equal share of the time, not of the rounds)."""
        started = time.perf_counter()
        self._take_chain_trees()
        if self._recombination_due(started):
            return self._recombine(rng)
        self.counts_for_stall = False
        # The model rounds' share of the time follows their share of the improvements (each kind counts one win
        # in advance), between MODEL_SHARE_MIN and one half: on real skew perturbations find most improvements.
        wins = self.model_wins + 1, self.perturbation_wins + 1
        model_share = float(np.clip(wins[0] / (wins[0] + wins[1]), MODEL_SHARE_MIN, 0.5))
        perturb = self.model_s >= model_share * (self.model_s + self.perturbation_s)
        # Slices too short to pay (MODEL_SLICE_MIN): perturbations take the time, unless they have nothing to send
        # home (then a model round is the only step left).
        perturb |= seconds < MODEL_SLICE_MIN and bool(self.best.search.migrated_mask().any())
        if perturb:
            improved = self._perturbation_round(rng)
            self.perturbation_s += time.perf_counter() - started
            self.perturbation_wins += int(improved)
            return improved
        self.counts_for_stall = True  # a stall counts model rounds (each with its share of perturbations)
        modelled = self._model_round(rng, width, per_node, seconds)
        if modelled is None:  # no model round fits before the deadline any more: perturbations take the rest
            self.model_s = np.inf
            return self._neighbourhood_round(rng, width, per_node, seconds)
        self.model_s += max(time.perf_counter() - started, 1e-6)
        self.model_wins += int(modelled)
        if modelled:  # a new best plan from a model round: the perturbations continue from it
            self.current, self.since_best = None, 0
        return modelled

    def _take_chain_trees(self) -> None:
        """(parent) The trees the second chain has sent since the last round into the pool, checked one by one
        (read every round, so the pipe does not fill)."""
        pool, chain = self.pool, self.chain
        if pool is None or chain is None or chain.in_child:
            return
        below = self.best.key[0]
        for units, dests in chain.take_trees():
            pool.add_tree(units, dests, below)

    def _recombination_due(self, now: float) -> bool:
        """Whether the pool recombines now (the parent's: the child only makes trees): it has grown by
        RECOMBINE_GROWTH since the last time (at least RECOMBINE_NEW_TREES new trees), and the recombinations have
        had no more than their earned share of the rounds' time (RECOMBINE_SHARE)."""
        pool, chain = self.pool, self.chain
        if pool is None or (chain is not None and chain.in_child):
            return False
        share = _earned_share(
            (pool.wins, pool.seconds),
            (self.perturbation_wins, self.perturbation_s),
            RECOMBINE_PRIOR,
            RECOMBINE_SHARE,
        )
        return (
            now - self.rounds_began >= self.recombine_after
            and pool.new >= max(RECOMBINE_NEW_TREES, RECOMBINE_GROWTH * (len(pool.trees) - pool.new))
            and pool.seconds <= share * (now - self.rounds_began)
        )

    def _recombine(self, rng: np.random.Generator) -> bool:
        """The pool's trees recombined below the best plan's distance (solvers.milp.recombine), the plan descended
        and offered; the perturbations go on from it when it is the new best."""
        pool, best, inst = self.pool, self.best, self.instance
        assert pool is not None
        self.counts_for_stall = False
        # (at most half the time left: a model may run a little past its limit, and the call's margin is small)
        now = time.perf_counter()
        plan = pool.recombine(best.key[0], now + min(RECOMBINE_MAX_S, 0.5 * (self.deadline - now)), rng)
        # (the MILP's tolerances could let a cost budget slip by a hair: checked exactly)
        if plan is None or not inst.within_budget(plan):
            return False
        trial = LocalSearch(inst, plan, self.start)
        trial.descend(self.deadline, DESCENT_STEPS)
        name = best.name if "recombined trees" in best.name else f"{best.name} + recombined trees"
        if not best.offer(trial, name):
            return False
        pool.wins += 1
        self.current, self.since_best = None, 0
        return True

    def run(self, started: float, time_limit_s: float, width: int | None, per_node: int, full: bool) -> None:
        try:
            self._run(started, time_limit_s, width, per_node, full)
        finally:
            if self.background is not None:  # stopped, and its plan taken when it has one by then
                self.background.stop(self.deadline)
                self._collect_background()
            if self.chain is not None:  # likewise
                self.chain.stop()
                self._take_chain_plan()

    def _start_chain(self, width: int, per_node: int, model_slice: float) -> None:
        """The second perturbation chain (solvers.milp.second_chain), where a second core and the time allow it;
        with the CP-SAT backend only (HiGHS rounds start processes of their own)."""
        if (
            self.second_chain
            and self.chain is None
            and self.backend == "cp-sat"
            and self.deadline - time.perf_counter() >= SECOND_CHAIN_MIN_S
            and second_chain_available()
        ):
            self.chain = SecondChain.fork(
                self.instance.n_units, lambda chain: self._chain_rounds(chain, width, per_node, model_slice)
            )

    def _chain_rounds(self, chain: SecondChain, width: int, per_node: int, model_slice: float) -> None:
        """The child's rounds: perturbations (and model rounds) from the best plan with a random stream of its own,
        each new best plan offered to the parent, the parent's taken, until the deadline, the parent's stop, or the
        gap."""
        rng = np.random.default_rng([self.seed, 1])
        self.current, self.since_best = None, 0
        self.chain = chain  # (fork calls this before it returns the chain: the child's own is not set yet)
        counted = self.perturbations
        while not chain.stop_asked() and time.perf_counter() < self.deadline - 0.005:
            d = self.best.key[0]
            if d - self.lower <= max(self.relative_gap * d, self.absolute_gap, OPTIMALITY_TOLERANCE):
                return
            self._take_chain_plan()
            if self._neighbourhood_round(rng, width, per_node, model_slice):
                chain.to_parent.write(self.best.search.assignment, self.best.key)
            chain.count(self.perturbations - counted)

    def _take_chain_plan(self) -> bool:
        """The other process's newest plan made the best plan when it is better and keeps the rules (the
        perturbations go on from it): whether it was."""
        chain = self.chain
        if chain is None:
            return False
        taken = (chain.to_child if chain.in_child else chain.to_parent).take()
        if taken is None or taken[1] >= self.best.key:
            return False
        plan = taken[0]
        if not keeps_rules(self.instance, plan, self.start):
            return False
        name = self.best.name if "second chain" in self.best.name else f"{self.best.name} (second chain)"
        if not self.best.offer(LocalSearch(self.instance, plan, self.start), name):
            return False
        self.current, self.since_best = None, 0
        if not chain.in_child:
            self.chain_wins += 1
        return True

    def _start_background(self, n_moves: int, min_s: float = BACKGROUND_MIN_S) -> None:
        """The full model beside the perturbations (BACKGROUND_WORKERS), where it is small enough and at least
        `min_s` is left; once a call."""
        if (
            self.background is None
            and self.backend == "cp-sat"
            and n_moves <= FULL_MODEL_MOVES
            and self.deadline - time.perf_counter() >= min_s
        ):
            self.background = _FullModelThread(self._full_model(), self.deadline, self._round_seed())

    def _collect_background(self) -> bool:
        """The background full model's plan, proof and bound, once it has ended (False until then, and after)."""
        background = self.background
        if background is None or background.collected or background.running():
            return False
        background.collected = True
        if background.error is not None:
            raise background.error
        if background.result is None:
            return False
        self.rounding = max(self.rounding, background.result.rounding_error)
        return self._take_full_result(
            background.model, background.result, "full model beside the perturbations"
        )

    def _run(self, started: float, time_limit_s: float, width: int | None, per_node: int, full: bool) -> None:
        inst = self.instance
        begun = time.perf_counter()
        rng = np.random.default_rng(self.seed)
        n_active = int(inst.active.sum())
        budget_moves = inst.max_migrations if inst.max_migrations is not None else inst.n_units
        width = min(width or int(np.clip(budget_moves // 4, 3, 6)), n_active)
        # Many short rounds: the child process of HiGHS needs ~0.3 s to start, CP-SAT a few milliseconds.
        if self.backend == "highs":
            model_slice = max(0.6, 0.3 * time_limit_s)
        else:
            model_slice = float(np.clip(0.05 * time_limit_s, 0.02, 0.25))
        stall_rounds = 2 if full else STALL_ROUNDS
        n_moves = n_active * int(inst.movable.sum())
        needs_s = FULL_MODEL_S_PER_MOVE * n_moves
        if (
            full
            and self.backend == "cp-sat"
            and n_moves > TINY_MODEL_MOVES
            and self.deadline - begun < needs_s
        ):
            # A plan already proven within NEAR_OPTIMAL (10 %, or 0.05 points) of the bound is the answer then (the
            # throughput bench's 10 x 100 snapshots at time_limit_s 0.2: a few of them are not proven by the starts,
            # and rounds that find nothing would hold each to its limit). Any other plan gets the rounds of large
            # problems (perturbations and neighbourhood models, as after a full model's stall): until 29 Nov the
            # call ended here too, at 0.14 s of a 1 s limit on 30 nodes x 128 key groups under a cost budget
            # (bench.milp_campaign --family skew, seed 9094: 5.44 points, bound 0.28, where the rounds reach 3.92).
            self.full_skipped = (
                f"the full model ({n_moves} booleans) needs about {needs_s:.2g} s for a proof, "
                f"more than the {max(0.0, self.deadline - begun):.2g} s left: not started"
            )
            d = self.best.key[0]
            if d <= max(NEAR_OPTIMAL[0] * self.lower, self.lower + NEAR_OPTIMAL[1]):
                self.stop_reason = (
                    f"within {NEAR_OPTIMAL[0] - 1:.0%} or {NEAR_OPTIMAL[1]:g} points of the bound"
                )
                return
            full, stall_rounds = False, STALL_ROUNDS
        if full and self.backend == "cp-sat" and n_moves <= TINY_MODEL_MOVES:
            # A tiny model: CP-SAT beside the perturbations for the whole call (TINY_MODEL_MOVES), whatever the time
            # left (its presolve takes a few ms); no second chain beside its two workers.
            full, stall_rounds = False, STALL_ROUNDS
            self.restarts = True
            self._start_background(n_moves, min_s=0.0)
        if not full and self.background is None:
            self._start_chain(width, per_node, model_slice)
        since, found_at = 0, begun
        full_until = begun + FULL_PHASE_SHARE * (self.deadline - begun)
        while True:
            now = time.perf_counter()
            if self.proven:
                self.stop_reason = "proven optimal"
                return
            if now >= self.deadline - 0.005:
                self.stop_reason = "time limit"
                return
            d = self.best.key[0]
            if d - self.lower <= max(self.relative_gap * d, self.absolute_gap, OPTIMALITY_TOLERANCE):
                self.stop_reason = (
                    f"gap within relative_gap {self.relative_gap} or {self.absolute_gap:.2g} points"
                )
                return
            if full and ((since >= stall_rounds and now - found_at >= found_at - begun) or now >= full_until):
                # The full model stalls without a proof, or has had its share of the time (FULL_PHASE_SHARE): the
                # rest goes to the rounds of large problems (perturbations and neighbourhood models), which leave
                # local optima the full model's short slices (CP-SAT restarts from its hint each slice) do not.
                full, stall_rounds, since, found_at, begun = False, STALL_ROUNDS, 0, now, now
                self._start_background(n_moves)
            elif since >= stall_rounds and now - found_at >= found_at - begun:
                self.stop_reason = f"no improvement in {since} rounds"
                if self.restarts and self.background is not None and self.background.running():
                    # A tiny model's CP-SAT gets the rest of the call alone, until its proof or the deadline: the
                    # perturbations' stall frees their core. Why: a stall ended the call at 13-22 s of a 30 s call
                    # before CP-SAT's proof (make_snapshot 5 x 6 K 6, seeds 2 and 5), where the tiny model alone
                    # (until 30 Nov) proved both in 9-12 s.
                    self.background.thread.join(max(0.0, self.deadline - 0.005 - time.perf_counter()))
                    self._collect_background()  # (a proof of the unchanged plan improves nothing: read `proven`)
                    if self.proven:
                        self.stop_reason = "proven optimal"
                    else:
                        self.stop_reason += "; the full model alone after it, until the time limit"
                return
            remaining = self.deadline - now
            if full:
                # Doubling slices (CP-SAT restarts from its hint each slice), so that an unprovable model does not
                # hold the call to its limit (tiny models run beside the perturbations instead). They double from
                # the rounds' own start, not the call's: starts that took 0.15 s made every slice long enough to
                # improve a little, the model never stalled, and the perturbations that find the optimum in
                # milliseconds never ran (campaign seed 6034: 7.36 points at 1 s against the optimum 5.05).
                doubling = max(0.01, now - begun)
                # (a doubling slice ends by full_until: no more than FULL_PHASE_SHARE in all)
                slice_s = (
                    max(0.01, min(doubling, full_until - now)) if self.backend == "cp-sat" else remaining
                )
                improved = self._full_round(min(remaining, slice_s))
            else:
                improved = self._neighbourhood_round(rng, width, per_node, model_slice)
                if self._collect_background():  # (a proof ends the loop at its next turn)
                    improved = True
                    self.current, self.since_best = None, 0  # the perturbations go on from its plan
                if improved and self.chain is not None:
                    self.chain.to_child.write(self.best.search.assignment, self.best.key)
                improved |= self._take_chain_plan()
            if improved:
                since, found_at = 0, time.perf_counter()
                d = self.best.key[0] - 0.5 * OPTIMALITY_TOLERANCE
                if self.bound is not None and d > self.lower and self.bound.rules_out(d):
                    self.lower = d
            else:
                since += int(self.counts_for_stall)


def bottleneck_notes(instance: AssignmentInstance) -> list[str]:
    """The paper balances the bottleneck resource: say so when a capped resource is used more than `load`."""
    notes = []
    load_share = float(instance.load.sum() / instance.capacity[instance.active].sum())
    for r, name in enumerate(instance.resource_names):
        capacity = instance.resource_capacity[instance.active, r]
        if np.all(np.isfinite(capacity)) and capacity.sum() > 0:
            share = float(instance.resource_usage[:, r].sum() / capacity.sum())
            if share > load_share:
                notes.append(
                    f"resource {name!r} is the bottleneck ({100 * share:.0f} % used against {100 * load_share:.0f} % "
                    f"for load): send it as `load` to balance it, it is only capped now"
                )
    return notes


def _earned_share(
    first: tuple[int, float], second: tuple[int, float], prior: float, bounds: tuple[float, float]
) -> float:
    """The share of the time one of two kinds of round earns by its improvements per second: each kind's (wins,
    seconds), the first counted `prior` wins in advance and the second 1 - prior, both FILL_PRIOR_S seconds; the
    first kind's share of the two rates, within `bounds`."""
    rate_first = (first[0] + prior) / (first[1] + FILL_PRIOR_S)
    rate_second = (second[0] + 1 - prior) / (second[1] + FILL_PRIOR_S)
    return float(np.clip(rate_first / (rate_first + rate_second), *bounds))


def _tree_kick(current: LocalSearch, migrated: IntArray, size: int, rng: np.random.Generator) -> IntArray:
    """`size` of the `migrated` units, connected in the forest of migrations (nodes joined by the units moved
    between them): breadth first from the limiting node (the staying node farthest from the mean), then from the
    home node of a random migration not taken yet, until `size` are taken (see TREE_KICK).

    A breadth-first order of the *edges*, cut at `size` and restarted at random nodes: scipy's breadth_first_order
    orders the nodes of one tree; with it, the other trees' migrations taken in a random order (not around one
    node) measured worse (flight 4096kg 200n K200: 0.372 against 0.261 after 300 perturbations, 8 seeds).
    Cost: each node looked at is one vectorised scan of the migrations, and at most 2 `size` + 1 are (a node is
    queued through an edge taken, a restart takes an edge), so O(size x migrations) in numpy and O(size) in
    Python: a kick stays a few ms even with a budget of 250,000 migrations."""
    migrated = migrated[rng.permutation(len(migrated))]  # ties in the order broken at random
    src = current.original[migrated]
    dst = current.assignment[migrated]
    deviation = np.abs(current.util[current.active_nodes] - current.mean)
    seed = int(current.active_nodes[int(np.argmax(deviation))])
    if current.kernels is not None:  # the same edges, one compiled pass (~20 us against ~0.3 ms a kick)
        return migrated[current.kernels.tree_edges(src, dst, seed, size, current.inst.n_nodes)]
    return migrated[_tree_edges(src, dst, seed, size)]


def _tree_edges(src: IntArray, dst: IntArray, seed: int, size: int) -> IntArray:
    """`size` of the edges (src[e], dst[e]): breadth first over the forest they form from node `seed`, each node's
    edges in index order, then from the source of the first edge not taken yet (kernels.tree_edges)."""
    taken = np.zeros(len(src), dtype=bool)
    chosen: list[int] = []
    visited: set[int] = set()
    while len(chosen) < size:
        visited.add(seed)
        queue = deque([seed])
        while queue and len(chosen) < size:
            node = queue.popleft()
            for index in np.flatnonzero(((src == node) | (dst == node)) & ~taken).tolist():
                taken[index] = True
                chosen.append(index)
                if len(chosen) >= size:
                    break
                other = int(dst[index]) if src[index] == node else int(src[index])
                if other not in visited:
                    visited.add(other)
                    queue.append(other)
        # Every edge of a finished tree is taken: the first edge not taken lies in a tree not visited yet.
        rest = np.flatnonzero(~taken)
        if not len(rest):
            break
        seed = int(src[rest[0]])
    return np.array(chosen, dtype=np.int64)
