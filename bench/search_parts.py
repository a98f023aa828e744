"""Where a search's time goes, stage by stage, for questions as they are asked.

    python3 -m bench search-parts --db DIR --queries FILE [--pipeline fused] [--rounds 2]
                                  [--dense-phrasings N]

``FILE``: JSON lines with ``text``, ``viewer`` and ``now``, as ``memfuse search
--queries`` reads them. Every question is searched once per round (warm: the graph is
read into memory first); the figures come from the last round. The stages are timed
around the engine's parts: the query embedding, the BM25 and dense searches, and the
fused pipeline's planner, expansion, ranking stage and context. Printed: the whole
call's p50 / p95, each stage's mean over every question and over the slowest tenth, the
query embedding's tokens per search (p50 / p95, over the phrasings it embeds), and how
many of the planner's phrasings share their BM25 terms with another phrasing of the
same question (those ask BM25 once).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from memfuse_lite import MemFuse, MemFuseConfig
from memfuse_lite.retrieve import fused
from memfuse_lite.timeutil import parse_ts

from .common import percentiles, write_result


def _timed(owner: Any, name: str, label: str, spent: Counter[str]) -> None:
    """Wrap ``owner.name`` so that its time adds to ``spent[label]``."""
    inner: Callable[..., Any] = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - start

    setattr(owner, name, timed)


def main(argv: list[str] | None = None) -> None:
    """CLI entry."""
    ap = argparse.ArgumentParser(prog="python3 -m bench search-parts", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True, type=Path)
    ap.add_argument("--queries", required=True, type=Path)
    ap.add_argument("--pipeline", default="fused")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--dense-phrasings", type=int,
                    help="RetrievalConfig.dense_phrasings (default: the library's)")
    args = ap.parse_args(argv)
    asked = [json.loads(line) for line in args.queries.read_text().splitlines() if line]
    config = MemFuseConfig()
    if args.dense_phrasings:
        config = replace(config, retrieval=replace(config.retrieval,
                                                   dense_phrasings=args.dense_phrasings))
    mem = MemFuse(args.db, config=config)
    engine = mem.engine
    retriever = fused.FusedRetriever(engine)
    plans = [retriever.plan(q["text"], None) for q in asked]
    phrasings = [p.rewrites for p in plans]
    embedder: Any = engine.embedder
    prefix = getattr(embedder, "query_prefix", "")
    dense = config.retrieval.dense_phrasings
    tokens = [sum(len(embedder.tokenizer.encode(prefix + p).ids)
                  for p in fused.by_meaning(plan.rewrites, plan.question, dense))
              for plan in plans] if hasattr(embedder, "tokenizer") else []
    repeated = sum(len(ps) - len({engine.text.terms_of(p) for p in ps}) for ps in phrasings)
    spent: Counter[str] = Counter()
    _timed(engine.embedder, "embed", "query embedding", spent)
    _timed(engine.text, "search", "bm25", spent)
    _timed(engine.dense, "search", "dense", spent)
    for name, label in (("plan", "planner"), ("_rank", "ranking stage"),
                        ("_context", "context")):
        _timed(fused.FusedRetriever, name, label, spent)
    _timed(fused, "expand", "expansion", spent)
    if engine.graph is not None:
        engine.graph.read_all()
    rows: list[tuple[float, dict[str, float]]] = []
    for _ in range(args.rounds):
        rows = []
        for q in asked:
            spent.clear()
            start = time.perf_counter()
            mem.search(q["text"], viewer=q.get("viewer") or "me", pipeline=args.pipeline,
                       now=parse_ts(q["now"]) if q.get("now") else None)
            rows.append(((time.perf_counter() - start) * 1000.0,
                         {k: v * 1000.0 for k, v in spent.items()}))
    mem.close()
    calls = [ms for ms, _ in rows]
    slow = sorted(rows, key=lambda r: r[0])[int(0.9 * len(rows)):]
    stages = sorted({k for _, parts in rows for k in parts})
    result = {
        "command": "python3 -m bench search-parts " + " ".join(argv or []),
        "questions": len(rows), "pipeline": args.pipeline,
        "dense_phrasings": config.retrieval.dense_phrasings, "call_ms": percentiles(calls),
        "stage_mean_ms": {k: round(statistics.fmean(p.get(k, 0.0) for _, p in rows), 2)
                          for k in stages},
        "stage_mean_ms_slowest_tenth": {
            k: round(statistics.fmean(p.get(k, 0.0) for _, p in slow), 2) for k in stages},
        "embedded_tokens": percentiles([float(t) for t in tokens]) if tokens else None,
        "phrasings": sum(len(ps) for ps in phrasings), "phrasings_sharing_terms": repeated,
    }
    c = result["call_ms"]
    print(f"{len(rows)} questions, {args.pipeline}: whole call p50 {c['p50']} ms, "
          f"p95 {c['p95']} ms")
    for k in stages:
        print(f"  {k:<16} mean {result['stage_mean_ms'][k]:6.2f} ms   slowest tenth "
              f"{result['stage_mean_ms_slowest_tenth'][k]:6.2f} ms")
    if tokens:
        t = result["embedded_tokens"]
        print(f"query embedding tokens per search: p50 {t['p50']}, p95 {t['p95']}")
    print(f"phrasings sharing their BM25 terms with another: {repeated} of "
          f"{result['phrasings']}")
    suffix = "" if args.dense_phrasings is None else f"-dense{args.dense_phrasings}"
    write_result(f"search-parts-{args.db.name}-{args.pipeline}{suffix}", result)
