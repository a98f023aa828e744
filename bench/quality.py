"""Retrieval quality on the shared real datasets, through the public API.

    python3 -m bench quality --dataset lifebench-en|lifebench-zh|locomo [--pipelines ...]

Per question category and pipeline: evidence recall@k (share of the gold evidence
records retrieved), all-evidence-hit@k and any-hit@k for k = 5, 10, 20. Memories are
built once under bench/out/ and reused (delete the folder to rebuild).
"""

from __future__ import annotations

import argparse
import asyncio
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from memfuse_lite import MemFuse, MemFuseConfig, Observation
from memfuse_lite.timeutil import parse_ts

from .adapters import (
    lifebench_observations,
    lifebench_questions,
    locomo_conversations,
    locomo_observations,
    locomo_questions,
)
from .common import write_result

OUT = Path(__file__).resolve().parent / "out"
KS = (5, 10, 20)
PIPELINES = ("bm25", "dense", "hybrid", "fused", "agentic")
ABLATIONS = {
    "fused-no-planner": {"use_planner": False},
    "fused-no-expansion": {"use_expansion": False},
    "fused-no-summaries": {"use_fused_summaries": False},
}


def build(path: Path, observations: Iterable[dict[str, Any]],
          config: MemFuseConfig | None = None) -> MemFuse:
    """Open the memory at ``path``, ingesting the observations if it is new."""
    mem = MemFuse(path, config=config)
    if mem.stats()["observations"] == 0:
        items = [Observation.from_json(o) for o in observations]

        async def run() -> None:
            for start in tqdm(range(0, len(items), 256), desc=f"ingest {path.name}",
                              unit="×256"):
                await mem.ingest_many(items[start : start + 256])
            await mem.flush()
            await mem.aclose()

        asyncio.run(run())
        mem = MemFuse(path, config=config)
    return mem


def score(mem: MemFuse, questions: Iterable[dict[str, Any]], pipelines: Iterable[str],
          acc: dict[tuple[str, str], list[dict[str, Any]]], label: str | None = None) -> None:
    """Run every question through every pipeline; append per-question scores to ``acc``."""
    for q in questions:
        gold = {tuple(e) for e in q["evidence"]}
        if not gold:
            continue
        now = parse_ts(q["now"]) if q.get("now") else None
        for pipeline in pipelines:
            hits = mem.search(q["text"][:4000], viewer=q["viewer"], k=max(KS), now=now,
                              pipeline=pipeline).hits
            pipeline = label or pipeline
            found = [{(p.source, p.external_id) for p in h.provenance} for h in hits]
            row: dict[str, Any] = {"recall": {}, "all_hit": {}, "any_hit": {}}
            for k in KS:
                got = set().union(*found[:k]) & gold if found else set()
                row["recall"][k] = len(got) / len(gold)
                row["all_hit"][k] = float(len(got) == len(gold))
                row["any_hit"][k] = float(bool(got))
            acc[(q["category"], pipeline)].append(row)
            acc[("all", pipeline)].append(row)


def summarise(acc: dict[tuple[str, str], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Mean of each metric per (category, pipeline)."""
    rows = []
    for (category, pipeline), items in sorted(acc.items(), key=lambda kv: (kv[0][0] == "all",
                                                                         kv[0])):
        rows.append({
            "category": category, "pipeline": pipeline, "questions": len(items),
            **{m: {str(k): round(sum(i[m][k] for i in items) / len(items), 4) for k in KS}
               for m in ("recall", "all_hit", "any_hit")},
        })
    return rows


def main(argv: list[str] | None = None) -> None:
    """CLI entry."""
    ap = argparse.ArgumentParser(prog="python3 -m bench quality", description=__doc__)
    ap.add_argument("--dataset", required=True,
                    choices=("lifebench-en", "lifebench-zh", "locomo"))
    ap.add_argument("--pipelines", nargs="+", default=list(PIPELINES))
    ap.add_argument("--ablations", action="store_true",
                    help="also run the fused pipeline without planner / expansion / summaries")
    ap.add_argument("--refuse", action="store_true",
                    help="re-run fusion over the stored events first (after fusion changes)")
    args = ap.parse_args(argv)
    acc: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    if args.dataset.startswith("lifebench"):
        lang = args.dataset.split("-")[1]
        runs = [(OUT / args.dataset, lambda: lifebench_observations(lang),
                 lambda: lifebench_questions(lang))]
    else:
        convs = locomo_conversations()
        runs = [(OUT / f"locomo-{i}", lambda c=c: locomo_observations(c),
                 lambda c=c, i=i: locomo_questions(c, i)) for i, c in enumerate(convs)]
    for path, observations, questions in runs:
        mem = build(path, observations())
        if args.refuse:
            mem.rebuild_fusion()
        score(mem, questions(), args.pipelines, acc)
        base = mem.config
        mem.close()
        if args.ablations:
            for label, switches in ABLATIONS.items():
                mem = MemFuse(path, config=replace(base, retrieval=replace(base.retrieval,
                                                                           **switches)))
                score(mem, questions(), ["fused"], acc, label=label)
                mem.close()
    rows = summarise(acc)
    for r in rows:
        print(f"{r['category']:<32} {r['pipeline']:<7} n={r['questions']:<4} "
              + " ".join(f"R@{k}={r['recall'][str(k)]:.3f}" for k in KS) + "  "
              + " ".join(f"all@{k}={r['all_hit'][str(k)]:.3f}" for k in KS))
    write_result(f"quality-{args.dataset}", {
        "command": "python3 -m bench quality " + " ".join(argv or []),
        "dataset": args.dataset, "ks": list(KS), "rows": rows})
