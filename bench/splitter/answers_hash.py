"""Hash of the splitter's answers over chains of calls (weights, clusters, predicted rate, notes and the model; `solve_ms` aside), so
that a change meant to keep the answers (a faster model format, a faster solver) can be checked against an older
tree: run `python -m bench.splitter.answers_hash` in both trees (e.g. `PYTHONPATH=/tmp/base` from /tmp/base) and
compare the lines. Notes about migrating an older model format are left out of the hash."""

from __future__ import annotations

import hashlib
import json

import numpy as np
from fastapi.testclient import TestClient

from service.main import create_app
from service.settings import Settings

# (connections, calls, clustering, seed, tuple counts, other request fields)
CHAINS: list[tuple[int, int, str, int, bool, dict[str, object]]] = [
    (64, 1000, "auto", 1, False, {}),
    (20, 500, "on", 2, True, {}),
    (16, 300, "off", 3, False, {}),
    (40, 300, "auto", 4, True, {}),
    (64, 300, "auto", 5, False, {"max_change": 20}),
    (32, 300, "on", 6, False, {"steady_weights": False}),
    (48, 200, "auto", 7, True, {"exploration_decay": 0.0}),
    (5, 200, "auto", 8, False, {"resolution": 100}),
]


def chain_hash(
    client: TestClient, n: int, calls: int, clustering: str, seed: int, tuples: bool, extra: dict[str, object]
) -> str:
    """Workers of random speeds; a connection blocks in proportion to how far its weight exceeds its speed's share,
    with noise; the answers' weights and model are fed back, and the intervals include ones too short to measure."""
    rng = np.random.default_rng(seed)
    ids = [f"c{j}" for j in range(n)]
    resolution = int(extra.get("resolution", 1000))  # type: ignore[call-overload]
    weights = {cid: resolution // n + (1 if j < resolution % n else 0) for j, cid in enumerate(ids)}
    counters = dict.fromkeys(ids, 0.0)
    sent = dict.fromkeys(ids, 0)
    speed = rng.uniform(0.5, 2.0, n)
    model = None
    digest = hashlib.sha256()
    at = 0.0
    for _ in range(calls):
        at += float(rng.choice([1.0, 1.0, 0.5, 2.0, 1e-4]))
        for j, cid in enumerate(ids):
            over = weights[cid] / resolution - speed[j] / speed.sum()
            counters[cid] += max(0.0, over * 5 + float(rng.normal(0, 0.02)))
            sent[cid] += int(rng.integers(0, 1000))
        connections: list[dict[str, object]] = [
            {"id": cid, "weight": weights[cid], "cumulative_blocking_s": counters[cid]} for cid in ids
        ]
        if tuples:
            for connection, cid in zip(connections, ids, strict=True):
                connection.update(tuples_sent=sent[cid], tuples_in_flight=sent[cid] // 10)
        body = {
            "connections": connections,
            "observed_at": at,
            "model": model,
            "clustering": clustering,
            **extra,
        }
        response = client.post("/v1/splitter/weights", json=body)
        assert response.status_code == 200, response.text
        answer = response.json()
        model, weights = answer["model"], answer["weights"]
        notes = [note for note in answer["notes"] if "migrated" not in note]
        digest.update(
            json.dumps(
                [answer["weights"], answer["clusters"], answer["predicted_max_blocking_rate"], notes, model]
            ).encode()
        )
    return digest.hexdigest()


def main() -> None:
    with TestClient(create_app(Settings())) as client:
        for chain in CHAINS:
            print(*chain[:5], chain[5] or "", chain_hash(client, *chain), flush=True)


if __name__ == "__main__":
    main()
