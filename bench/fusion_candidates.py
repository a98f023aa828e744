"""Where fusion loses episodes: candidate recall and the ranking of true episode mates.

    python3 -m bench fusion-candidates [--dataset lifebench-en|lifebench-zh|generated]

For every event that has an earlier record of the same labelled episode, in ingestion
order: whether one of those records is among fusion's candidates (the learned scorer's
candidate set, as ``bench fusion-fit`` reads it), whether it is the top-scored candidate
under the shipped pair model, and how precise a top-1 join is at several probabilities.
It tells candidate recall (which records fusion could ever join) from ranking (which of them
it prefers) — the two things fusion improvements act on.
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from typing import Any

import numpy as np

from memfuse_lite.fusion.pairs import PairModel

from .common import write_result
from .fusion_fit import DATASETS, collect, dataset
from .quality import OUT


def analyse(name: str) -> dict[str, Any]:
    """The figures for one dataset."""
    data = dataset(name, OUT)
    pairs = collect(data)
    model = PairModel.load()
    prob = model.probabilities(pairs.X)
    label = {e: data.gold.get(pairs.rec[e]) for e in pairs.ids}
    seen: Counter[str] = Counter()
    has_mate = set()
    for e in pairs.ids:
        g = label[e]
        if g is not None and g != pairs.rec[e] and seen[g]:
            has_mate.add(e)
        if g is not None:
            seen[g] += 1
    cands: dict[int, list[tuple[float, int, float]]] = defaultdict(list)
    for (e, c), p, y in zip(pairs.links, prob, pairs.y, strict=True):
        cands[e].append((float(p), c, float(y)))
    ranked = {e: sorted(cs, reverse=True) for e, cs in cands.items()}
    mate_rank: list[int | None] = []
    for e in has_mate:
        cs = ranked.get(e, [])
        mate_rank.append(next((i for i, (_, _, y) in enumerate(cs) if y), None))
    gold_p = [float(p) for p, y in zip(prob, pairs.y, strict=True) if y]
    top = [(cs[0][0], cs[0][2]) for cs in ranked.values() if cs]
    joins = {}
    for t in sorted({0.05, 0.1, 0.2, 0.3, 0.4, model.threshold}):
        chosen = [y for p, y in top if p >= t]
        joins[str(t)] = {"joins": len(chosen), "correct": int(sum(chosen)),
                         "precision": round(sum(chosen) / len(chosen), 3) if chosen else None}
    n = len(has_mate)
    return {
        "dataset": name, "events": len(pairs.ids), "events_with_earlier_mate": n,
        "mate_among_candidates": round(sum(r is not None for r in mate_rank) / max(n, 1), 3),
        "mate_is_top_candidate": round(sum(r == 0 for r in mate_rank) / max(n, 1), 3),
        "candidates_per_event": round(float(np.mean([len(cands[e]) for e in pairs.ids])), 1),
        "gold_pair_probability_quartiles": [round(float(q), 3) for q in
                                            np.quantile(gold_p, [0.25, 0.5, 0.75])],
        "top1_join": joins, "shipped_threshold": model.threshold,
    }


def main(argv: list[str] | None = None) -> None:
    """CLI entry."""
    ap = argparse.ArgumentParser(prog="python3 -m bench fusion-candidates",
                                 description=__doc__)
    ap.add_argument("--dataset", choices=DATASETS, default="lifebench-en")
    args = ap.parse_args(argv)
    r = analyse(args.dataset)
    print(f"{r['dataset']}: {r['events_with_earlier_mate']} of {r['events']} events have an "
          f"earlier record of their episode; it is a candidate for "
          f"{r['mate_among_candidates']:.0%} of them and the top candidate for "
          f"{r['mate_is_top_candidate']:.0%} ({r['candidates_per_event']} candidates per "
          f"event)")
    print(f"  probability of true pairs, quartiles: {r['gold_pair_probability_quartiles']}")
    for t, j in r["top1_join"].items():
        print(f"  top-1 join at p >= {t}: {j['joins']} joins, precision {j['precision']}")
    write_result(f"fusion-candidates-{args.dataset}", {
        "command": "python3 -m bench fusion-candidates " + " ".join(argv or []), **r})


if __name__ == "__main__":
    main()
