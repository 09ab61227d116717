"""Splitter policies for the simulator: the real endpoint (LB-adaptive, LB-static), round-robin and Oracle*."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from bench.splitter.simulator import Region, simulate
from solvers.instance import FloatArray, IntArray


class JsonPoster(Protocol):
    def post(self, url: str, *, json: Any) -> Any: ...


def even_weights(n: int, resolution: int = 1000) -> IntArray:
    weights = np.full(n, resolution // n, dtype=np.int64)
    weights[: resolution - int(weights.sum())] += 1
    return weights


def proportional_weights(shares: FloatArray, resolution: int = 1000) -> IntArray:
    """Largest-remainder rounding of `shares` to integers summing to resolution."""
    exact = shares / shares.sum() * resolution
    weights = np.floor(exact).astype(np.int64)
    order = np.argsort(-(exact - weights), kind="stable")
    weights[order[: resolution - int(weights.sum())]] += 1
    return weights


@dataclass
class EndpointPolicy:
    """Drives POST /v1/splitter/weights like an engine would: counters in, weights out, the model kept in between."""

    client: JsonPoster
    ids: list[str]
    exploration_decay: float = 0.1
    clustering: str = "auto"
    resolution: int = 1000
    max_change: int | None = None
    steady_weights: bool = True
    # Report the tuples sent and in flight per connection (optional in the contract; engines have both).
    report_tuples: bool = True
    # Membership: a connection listed here joins the region at that time (before it, it is not in the requests and
    # its weight is 0; it joins at weight 0, as an engine adds a channel).
    joins: dict[str, float] = field(default_factory=dict)
    model: dict[str, Any] | None = None
    clusters: list[list[list[int]]] = field(default_factory=list)
    predicted: list[float] = field(default_factory=list)

    def __call__(
        self,
        time: float,
        weights: IntArray,
        counters: FloatArray,
        changed: bool,
        sent: IntArray,
        in_flight: IntArray,
    ) -> IntArray:
        members = [time >= self.joins.get(cid, float("-inf")) for cid in self.ids]
        tuples = (
            {"tuples_sent": int(s), "tuples_in_flight": int(f)}
            for s, f in zip(sent.tolist(), in_flight.tolist(), strict=True)
        )
        body = {
            "connections": [
                {
                    "id": cid,
                    "weight": int(w),
                    "cumulative_blocking_s": float(c),
                    **(counts if self.report_tuples else {}),
                }
                for cid, w, c, member, counts in zip(
                    self.ids, weights.tolist(), counters.tolist(), members, tuples, strict=True
                )
                if member
            ],
            "observed_at": time,
            "model": self.model,
            "resolution": self.resolution,
            "max_change": self.max_change,
            "exploration_decay": self.exploration_decay,
            "clustering": self.clustering,
            "steady_weights": self.steady_weights,
        }
        response = self.client.post("/v1/splitter/weights", json=body)
        if response.status_code != 200:
            raise RuntimeError(f"splitter endpoint answered {response.status_code}: {response.text[:500]}")
        answer = response.json()
        self.model = answer["model"]
        index = {cid: j for j, cid in enumerate(self.ids)}
        self.clusters.append([[index[cid] for cid in members] for members in answer["clusters"]])
        self.predicted.append(answer["predicted_max_blocking_rate"])
        return np.asarray([answer["weights"].get(cid, 0) for cid in self.ids], dtype=np.int64)


def offline_best_weights(
    region: Region, slowdown: FloatArray, tuples: int, resolution: int = 1000
) -> IntArray:
    """The best static split for one load phase, found offline like the paper's hand-tuned Oracle*: the better of
    weights proportional to the service rates and the same restricted to the unloaded workers, by simulation."""
    rates = 1.0 / (region.service_s * slowdown)
    candidates = [proportional_weights(rates, resolution)]
    fast = slowdown <= slowdown.min()
    if not fast.all():
        candidates.append(proportional_weights(np.where(fast, rates, 0.0), resolution))
    steady = Region(
        region.service_s,
        slowdown,
        splitter_s=region.splitter_s,
        send_buffer=region.send_buffer,
        merge_buffer=region.merge_buffer,
    )
    results = [simulate(steady, tuples, w).final_throughput for w in candidates]
    return candidates[int(np.argmax(results))]


@dataclass
class OraclePolicy:
    """Oracle*: the offline best split for each load phase, switched as soon as the load changes."""

    before: IntArray
    after: IntArray

    def __call__(
        self,
        time: float,
        weights: IntArray,
        counters: FloatArray,
        changed: bool,
        sent: IntArray,
        in_flight: IntArray,
    ) -> IntArray:
        return self.after if changed else self.before
