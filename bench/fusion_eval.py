"""Fusion quality on the shared LifeBench person: B-cubed precision/recall of fused
memories against the records' ``event_id`` (ground truth, never ingested), beside two
baselines in the same run: every record alone, and same day + cosine above a threshold.

    python3 -m bench fusion --lang en [--person NAME] [--llm qwen2.5-coder-0.5b]
    python3 -m bench fusion --dataset generated

``--person`` reads another LifeBench person laid out as the shared one (under the shared
data's lifebench/LANG/, or ``MEMFUSE_SHARED_DATA``'s); its memory and result are named
``lifebench-LANG-NAME``. The memory is built once (bench/out/lifebench-LANG, shared with
the quality benchmark); each setting re-runs fusion over the stored events
(``MemFuse.rebuild_fusion``), so embedding is not repeated. Records labelled ``event_id``
0 belong to no event and count as singletons. The last row ingests the same observations
into a new memory as an app would (batches of 256, fused as they arrive; the stored
vectors stand in for the embedder), where a batch's events are not yet in the dense index.
``--dataset generated`` scores the generated household against its scenes instead.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from memfuse_lite import MemFuse, MemFuseConfig
from memfuse_lite.embed.base import Embedder, Role
from memfuse_lite.fusion.model import load_views

from .adapters import (
    PERSON,
    check_person,
    lifebench_event_labels,
    lifebench_name,
    lifebench_observations,
    lifebench_questions,
)
from .common import write_result
from .generate import SMALL, load
from .quality import OUT, build


def bcubed(pred: dict[str, str], gold: dict[str, str]) -> dict[str, float]:
    """B-cubed precision, recall and F1 over the items both mappings share."""
    items = [i for i in gold if i in pred]
    by_pred: dict[str, set[str]] = defaultdict(set)
    by_gold: dict[str, set[str]] = defaultdict(set)
    for i in items:
        by_pred[pred[i]].add(i)
        by_gold[gold[i]].add(i)
    p = r = 0.0
    for i in items:
        same = len(by_pred[pred[i]] & by_gold[gold[i]])
        p += same / len(by_pred[pred[i]])
        r += same / len(by_gold[gold[i]])
    p, r = p / len(items), r / len(items)
    return {"precision": round(p, 4), "recall": round(r, 4),
            "f1": round(2 * p * r / (p + r), 4) if p + r else 0.0}


def records(mem: MemFuse) -> dict[int, str]:
    """event id → "source:external_id"."""
    with mem.engine.store.reading() as db:
        return {int(e): f"{s}:{x}" for e, s, x in db.execute(
            "SELECT es.event_id, o.source, o.external_id FROM event_sources es"
            " JOIN observations o ON o.id = es.observation_id")}


def fused_assignment(mem: MemFuse, rec: dict[int, str]) -> dict[str, str]:
    with mem.engine.store.reading() as db:
        rows = db.execute("SELECT event_id, fused_id FROM fused_members").fetchall()
    return {rec[int(e)]: f"f{f}" for e, f in rows}


def same_day_cosine(mem: MemFuse, rec: dict[int, str], threshold: float) -> dict[str, str]:
    """Connected components of same-day event pairs with cosine >= threshold."""
    with mem.engine.store.reading() as db:
        ids = [int(r[0]) for r in db.execute("SELECT id FROM events ORDER BY id")]
        views = load_views(db, ids)
    parent = {i: i for i in ids}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    by_day: dict[object, list[int]] = defaultdict(list)
    for i in ids:
        by_day[datetime.fromtimestamp(views[i].when, tz=UTC).date()].append(i)
    for day_ids in by_day.values():
        vecs = np.stack([views[i].vec for i in day_ids])
        sims = vecs @ vecs.T
        for a in range(len(day_ids)):
            for b in range(a + 1, len(day_ids)):
                if sims[a, b] >= threshold:
                    parent[find(day_ids[a])] = find(day_ids[b])
    return {rec[i]: f"c{find(i)}" for i in ids}


def gold_labels(lang: str, person: str = PERSON) -> dict[str, str]:
    labels = {}
    for (source, ext), event in lifebench_event_labels(lang, person).items():
        key = f"{source}:{ext}"
        labels[key] = key if event in ("0", "", "None") else f"e{event}"
    return labels


def evidence_cohesion(assign: dict[str, str], lang: str, person: str = PERSON) -> float:
    """Mean over questions (>= 2 evidence records) of the largest share of the question's
    evidence that sits in one fused memory."""
    return cohesion(assign, [[f"{s}:{x}" for s, x in q["evidence"]]
                             for q in lifebench_questions(lang, person=person)])


def cohesion(assign: dict[str, str], evidence: list[list[str]]) -> float:
    """Mean share of a question's evidence records (>= 2 of them) inside the one memory
    holding most of them; ``evidence`` lists "source:external_id" per question."""
    shares = []
    for ev in evidence:
        ev = [e for e in ev if e in assign]
        if len(ev) < 2:
            continue
        counts: dict[str, int] = defaultdict(int)
        for e in ev:
            counts[assign[e]] += 1
        shares.append(max(counts.values()) / len(ev))
    return round(float(np.mean(shares)), 4) if shares else 0.0


class StoredVectors(Embedder):
    """The vectors a built memory holds, by text: ingesting the same observations again
    without the model (a text it does not hold is an error)."""

    def __init__(self, mem: MemFuse) -> None:
        self.info = mem.embedder.info
        with mem.engine.store.reading() as db:
            self.vectors = {str(t): np.frombuffer(b, dtype=np.float32)
                            for t, b in db.execute("SELECT text, embedding FROM events")}

    def embed_batch(self, texts: Sequence[str], role: Role) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts])


def online_assignment(path: Path, observations: Iterable[dict[str, Any]]
                      ) -> dict[str, str]:
    """Record → fused memory of a new memory that ingested the observations as the one at
    ``path`` was (:func:`bench.quality.build`), with that memory's vectors."""
    with MemFuse(path) as built:
        embedder = StoredVectors(built)
        config = built.config
    workdir = Path(tempfile.mkdtemp(prefix="memfuse-fusion-online-"))
    try:
        mem = build(workdir / "mem", observations, config=config, embedder=embedder)
        try:
            return fused_assignment(mem, records(mem))
        finally:
            mem.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def labelled_chunks(rec: dict[int, str], gold: dict[str, str], cap: int
                    ) -> list[list[list[int]]]:
    """The labelled episodes as fusion would hold them if it recovered them exactly: each
    episode's event ids in order, ``cap`` to a memory (a longer one continues in the next,
    as fusion's member cap makes it); episodes ordered by their first event."""
    episodes: dict[str, list[int]] = defaultdict(list)
    for eid, record in sorted(rec.items()):
        episodes[gold.get(record, record)].append(eid)
    return [[members[i : i + cap] for i in range(0, len(members), cap)]
            for members in sorted(episodes.values())]


def labelled_episodes(rec: dict[int, str], gold: dict[str, str], cap: int) -> dict[str, str]:
    """Record → memory of :func:`labelled_chunks`."""
    return {rec[eid]: f"l{n}.{k}" for n, chunks in enumerate(labelled_chunks(rec, gold, cap))
            for k, chunk in enumerate(chunks) for eid in chunk}


def summary(assign: dict[str, str]) -> dict[str, float]:
    sizes: dict[str, int] = defaultdict(int)
    for c in assign.values():
        sizes[c] += 1
    return {"clusters": len(sizes), "mean_members": round(len(assign) / max(len(sizes), 1), 3),
            "multi_member_clusters": sum(1 for s in sizes.values() if s > 1)}


def main(argv: list[str] | None = None) -> None:
    """CLI entry."""
    ap = argparse.ArgumentParser(prog="python3 -m bench fusion", description=__doc__)
    ap.add_argument("--lang", choices=("en", "zh"), default="en")
    ap.add_argument("--dataset", choices=("lifebench", "generated"), default="lifebench",
                    help="generated: the generated household against its scenes")
    ap.add_argument("--person", default=PERSON,
                    help="the LifeBench person (a folder of the shared data's lifebench/LANG)")
    ap.add_argument("--llm", help="also run with this GGUF arbitrating ambiguous decisions")
    ap.add_argument("--cosine", type=float, default=0.9, help="same-day baseline threshold")
    args = ap.parse_args(argv)
    if args.dataset == "generated":
        from .fusion_fit import dataset  # it imports this module

        labelled = dataset("generated", OUT)
        path, gold, dataset_name = labelled.path, labelled.gold, "generated"
        observations = list(load(SMALL, "observations.jsonl"))

        def evidence_share(assign: dict[str, str]) -> float:
            return cohesion(assign, labelled.evidence)
    else:
        check_person(ap, args.lang, args.person)
        dataset_name = lifebench_name(args.lang, args.person)
        path, gold = OUT / dataset_name, gold_labels(args.lang, args.person)
        observations = list(lifebench_observations(args.lang, person=args.person))

        def evidence_share(assign: dict[str, str]) -> float:
            return evidence_cohesion(assign, args.lang, args.person)
    build(path, observations).close()
    rows: list[dict[str, Any]] = []

    mem = MemFuse(path)
    rec = records(mem)
    n_obs = len(rec)
    singles = {r: r for r in rec.values()}
    rows.append({"setting": "singletons", **bcubed(singles, gold), **summary(singles),
                 "evidence_cohesion": evidence_share(singles)})
    episodes = labelled_episodes(rec, gold, mem.config.fusion.max_members)
    rows.append({"setting": f"labelled episodes (<= {mem.config.fusion.max_members} "
                            "records a memory)", **bcubed(episodes, gold), **summary(episodes),
                 "evidence_cohesion": evidence_share(episodes)})
    day = same_day_cosine(mem, rec, args.cosine)
    rows.append({"setting": f"same day + cosine >= {args.cosine}", **bcubed(day, gold),
                 **summary(day), "evidence_cohesion": evidence_share(day)})
    rules = replace(mem.config, fusion=replace(mem.config.fusion, scorer="rules"))
    learned = replace(mem.config, fusion=replace(mem.config.fusion, scorer="learned"))
    settings: list[tuple[str, MemFuseConfig]] = [("memfuse rule-based", rules),
                                                 ("memfuse learned (shipped model)", learned)]
    if args.llm:
        settings.append((f"memfuse (default) + {args.llm} arbitration",
                         replace(mem.config, fusion_llm=args.llm)))
    mem.close()
    default = mem.config
    for name, config in settings:
        mem = MemFuse(path, config=config)
        t0 = time.perf_counter()
        mem.rebuild_fusion()
        seconds = time.perf_counter() - t0
        assign = fused_assignment(mem, rec)
        tokens = sum(u.total_tokens for u in mem.llm_usage().values())
        rows.append({"setting": name, **bcubed(assign, gold), **summary(assign),
                     "evidence_cohesion": evidence_share(assign),
                     "fusion_obs_per_s": round(n_obs / seconds, 1),
                     "llm_calls": mem.engine.fusion.llm_calls if mem.engine.fusion else 0,
                     "llm_tokens_per_obs": round(tokens / n_obs, 2),
                     "edges": mem.engine.fusion.graph.counts() if mem.engine.fusion else {}})
        mem.close()
    if settings[-1][1] != default:  # leave the memory fused as the other benchmarks expect
        with MemFuse(path) as mem:
            mem.rebuild_fusion()
    online = online_assignment(path, observations)
    rows.append({"setting": "memfuse learned, ingested online", **bcubed(online, gold),
                 **summary(online), "evidence_cohesion": evidence_share(online)})
    for r in rows:
        print(f"{r['setting']:<40} P {r['precision']:.3f} R {r['recall']:.3f} "
              f"F1 {r['f1']:.3f}  clusters {r['clusters']} (mean {r['mean_members']})  "
              f"evidence-in-one-memory {r['evidence_cohesion']:.3f}"
              + (f"  {r['fusion_obs_per_s']} obs/s, {r['llm_tokens_per_obs']} LLM tok/obs"
                 if "fusion_obs_per_s" in r else ""))
    write_result(f"fusion-{dataset_name}", {
        "command": "python3 -m bench fusion " + " ".join(argv or []),
        "dataset": dataset_name, "observations": n_obs, "rows": rows})
