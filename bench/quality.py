"""Retrieval quality on the generated household and the shared real datasets, through
the public API.

    python3 -m bench quality --dataset generated|lifebench-en|lifebench-zh|locomo
                             [--pipelines ...] [--ablations] [--refuse] [--person NAME]

Per question category and pipeline: evidence recall@k (share of the gold evidence
records retrieved), all-evidence-hit@k and any-hit@k for k = 5, 10, 20, and, where
questions carry an answer checklist (generated), context checklist coverage@k (share of
checklist items stated in the top-k records, normalised matching of items and aliases).
Baselines in the same run: ``long-context`` (everything the viewer may see before the
question, newest last, cut to a 4,096-token window; its figures are for the whole
window at every k), ``naive-rag`` (dense top-k over the raw observations: the ``dense``
pipeline, each observation is one event here), ``bm25`` and ``hybrid`` (RRF, no fusion).
Memories are built once under bench/out/ and reused (delete the folder to rebuild).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from memfuse_lite import MemFuse, MemFuseConfig, Observation
from memfuse_lite.config import PAPER_SEED_K, FusionConfig
from memfuse_lite.embed.base import Embedder
from memfuse_lite.prepare.registry import resolve_embedder_dir
from memfuse_lite.timeutil import parse_ts

from .adapters import (
    PERSON,
    check_person,
    lifebench_name,
    lifebench_observations,
    lifebench_questions,
    locomo_conversations,
    locomo_observations,
    locomo_questions,
)
from .baselines import LongContext
from .common import write_result
from .gen.text import contains_item
from .generate import SMALL, load

OUT = Path(__file__).resolve().parent / "out"
DEFAULT_SCORER = FusionConfig().scorer
KS = (5, 10, 20)
PIPELINES = ("long-context", "naive-rag", "bm25", "hybrid", "fused", "agentic")
ALIASES = {"naive-rag": "dense"}
LABELS = {"agentic": "agentic (no LLM: pseudo-relevance feedback)"}
"""How a pipeline's rows are named: without an LLM, ``agentic`` always runs two rounds, the
second a query made of the first round's people and entities."""
PAPER_LAYOUT = {"seed_k": PAPER_SEED_K, "summaries_extra": False, "fused_doc_seeds": True,
                "expansion_relevance": False, "semantic_hops": 1, "dense_phrasings": 3}
"""RetrievalConfig values of the paper's seeds and context layout (an ablation)."""
ABLATIONS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    # name: (RetrievalConfig switches, FusionConfig switches)
    "fused-no-planner": ({"use_planner": False}, {}),
    "fused-no-expansion": ({"use_expansion": False}, {}),
    # following semantic edges (near-duplicate texts) one hop, as the paper does
    "fused-semantic-hops": ({"semantic_hops": 1}, {}),
    # without the hop to the likely episode mates fusion kept in other memories
    "fused-no-related-links": ({"use_related_links": False}, {}),
    "fused-paper-layout": (PAPER_LAYOUT, {}),
    "fused-fusion-off": ({}, {"enabled": False}),  # every event its own memory
    # a retrieved memory's members scaled by their cosine with the question, like what
    # semantic and causal edges reach (the default before members entered as they are)
    "fused-members-by-relevance": ({"member_relevance": True}, {}),
    # without the search among a named user's own records for the rest of the question
    "fused-no-author-queries": ({"author_weight": 0.0}, {}),
    # the candidates in the order seeds and expansion gave them (no fitted ranking stage)
    "fused-no-ranker": ({"use_ranker": False}, {}),
    # every phrasing of the question (its rewrites too) also searched by meaning
    "fused-rewrites-by-meaning": ({"dense_phrasings": 3}, {}),
}

LABELLED = "fused-over-labelled-events"
"""The ``fused`` pipeline over a copy of the memory whose fused memories are the dataset's
labelled life events (at most ``max_members`` each, a longer one continued): what retrieval
would find if fusion recovered the episodes exactly (LifeBench, ``--ablations``)."""


def labelled_memories(path: Path, lang: str, into: Path, person: str = PERSON) -> MemFuse:
    """Open a copy of the memory at ``path`` with its cluster layer replaced by the
    labelled events of LifeBench ``person`` in ``lang`` (edges kept; fused documents
    rewritten at open)."""
    from memfuse_lite.fusion.runtime import mark_documents_stale
    from memfuse_lite.store import fused as fused_sql

    from .fusion_eval import gold_labels, labelled_chunks, records

    shutil.copytree(path, into)
    mem = MemFuse(into)
    chunks = labelled_chunks(records(mem), gold_labels(lang, person),
                             mem.config.fusion.max_members)
    with mem.engine.store.atomic() as db:
        fused_sql.clear(db, edges=False)
        mark_documents_stale(db)
        for episode in chunks:
            previous = None
            for members in episode:
                previous = fused_sql.new_fused(db, continues=previous)
                for eid in members:
                    fused_sql.add_member(db, previous, eid)
    mem.close()
    return MemFuse(into)


def build(path: Path, observations: Iterable[dict[str, Any]],
          config: MemFuseConfig | None = None, embedder: Embedder | None = None) -> MemFuse:
    """Open the memory at ``path``, ingesting the observations if it is new."""
    mem = MemFuse(path, config=config, embedder=embedder)
    if mem.stats()["observations"] == 0:
        items = [Observation.from_json(o) for o in observations]

        async def run() -> None:
            for start in tqdm(range(0, len(items), 256), desc=f"ingest {path.name}",
                              unit="×256"):
                await mem.ingest_many(items[start : start + 256])
            await mem.flush()
            await mem.aclose()

        asyncio.run(run())
        mem = MemFuse(path, config=config, embedder=embedder)
    return mem


def score(mem: MemFuse, questions: Iterable[dict[str, Any]], pipelines: Iterable[str],
          acc: dict[tuple[str, str], list[dict[str, Any]]], label: str | None = None,
          long_context: LongContext | None = None) -> None:
    """Run every question through every pipeline; append per-question scores to ``acc``."""
    for q in questions:
        gold = {tuple(e) for e in q["evidence"]}
        if not gold:
            continue
        now = parse_ts(q["now"]) if q.get("now") else None
        for pipeline in pipelines:
            if pipeline == "long-context":
                if long_context is None:
                    continue
                window = long_context.context(q["viewer"], now)
                found = [{(o["source"], o["external_id"])} for o in window]
                texts = [f"{o['user']}: {o['text']}" for o in window]
                ks = {k: len(window) for k in KS}  # the whole window at every k
            else:
                hits = mem.search(q["text"][:4000], viewer=q["viewer"], k=max(KS), now=now,
                                  pipeline=ALIASES.get(pipeline, pipeline)).hits
                found = [{(p.source, p.external_id) for p in h.provenance} for h in hits]
                texts = [f"{h.provenance[0].user if h.provenance else ''}: {h.text}"
                         for h in hits]
                ks = {k: k for k in KS}
            name = label or LABELS.get(pipeline, pipeline)
            row: dict[str, Any] = {"recall": {}, "all_hit": {}, "any_hit": {}, "coverage": {}}
            for k in KS:
                got = set().union(*found[: ks[k]]) & gold if found else set()
                row["recall"][k] = len(got) / len(gold)
                row["all_hit"][k] = float(len(got) == len(gold))
                row["any_hit"][k] = float(bool(got))
                if q.get("checklist"):
                    context = "\n".join(texts[: ks[k]])
                    row["coverage"][k] = sum(contains_item(context, item)
                                             for item in q["checklist"]) / len(q["checklist"])
            acc[(q["category"], name)].append(row)
            acc[("all", name)].append(row)


def summarise(acc: dict[tuple[str, str], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Mean of each metric per (category, pipeline)."""
    rows = []
    for (category, pipeline), items in sorted(acc.items(), key=lambda kv: (kv[0][0] == "all",
                                                                         kv[0])):
        rows.append({
            "category": category, "pipeline": pipeline, "questions": len(items),
            **{m: {str(k): round(sum(i[m][k] for i in items) / len(items), 4) for k in KS}
               for m in ("recall", "all_hit", "any_hit")},
            **({"coverage": {str(k): round(sum(i["coverage"][k] for i in items) / len(items), 4)
                             for k in KS}} if items[0]["coverage"] else {}),
        })
    return rows


def main(argv: list[str] | None = None) -> None:
    """CLI entry."""
    ap = argparse.ArgumentParser(prog="python3 -m bench quality", description=__doc__)
    ap.add_argument("--dataset", required=True,
                    choices=("generated", "lifebench-en", "lifebench-zh", "locomo"))
    ap.add_argument("--person", default=PERSON,
                    help="with a LifeBench dataset: the person (a folder of the shared data's "
                         "lifebench/LANG); results are named lifebench-LANG-NAME")
    ap.add_argument("--pipelines", nargs="+", default=list(PIPELINES))
    ap.add_argument("--ablations", action="store_true",
                    help="also run fused without planner or expansion, with semantic hops, with the "
                         "paper layout, with fusion off, with members scaled by relevance and "
                         "(LifeBench) over the labelled life events as memories")
    ap.add_argument("--refuse", action="store_true",
                    help="re-run fusion over the stored events first (after fusion changes)")
    ap.add_argument("--fusion", choices=("rules", "learned"), default=DEFAULT_SCORER,
                    help="the fusion scorer (another than the default: fusion is re-run with "
                         "it first, and with the default scorer again afterwards)")
    ap.add_argument("--pair-model", help="with --fusion learned: this pair model file instead of "
                    "the shipped one (e.g. bench/out/pair-model-all.json, written by "
                    "`bench fusion-fit`, to measure a model that never saw the dataset)")
    args = ap.parse_args(argv)
    config = MemFuseConfig(fusion=FusionConfig(scorer=args.fusion, pair_model=args.pair_model))
    acc: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    dataset = args.dataset  # another LifeBench person's: lifebench-LANG-NAME
    if args.dataset == "generated":
        runs = [(OUT / "generated-s7", lambda: load(SMALL, "observations.jsonl"),
                 lambda: load(SMALL, "questions.jsonl"))]
    elif args.dataset.startswith("lifebench"):
        lang = args.dataset.split("-")[1]
        check_person(ap, lang, args.person)
        dataset = lifebench_name(lang, args.person)
        runs = [(OUT / dataset, lambda: lifebench_observations(lang, person=args.person),
                 lambda: lifebench_questions(lang, person=args.person))]
    else:
        convs = locomo_conversations()
        runs = [(OUT / f"locomo-{i}", lambda c=c: locomo_observations(c),
                 lambda c=c, i=i: locomo_questions(c, i)) for i, c in enumerate(convs)]
    tokenizer_dir = resolve_embedder_dir(MemFuseConfig().embedder, MemFuseConfig().model_dir)
    for path, observations, questions in runs:
        mem = build(path, observations(), config)
        if args.refuse or args.fusion != DEFAULT_SCORER or args.pair_model:
            mem.rebuild_fusion()
        long_context = LongContext(observations(), tokenizer_dir) \
            if "long-context" in args.pipelines else None
        score(mem, questions(), args.pipelines, acc, long_context=long_context)
        base = mem.config
        mem.close()
        if args.ablations:
            for label, (retrieval, fusion) in ABLATIONS.items():
                mem = MemFuse(path, config=replace(
                    base, retrieval=replace(base.retrieval, **retrieval),
                    fusion=replace(base.fusion, **fusion)))
                score(mem, questions(), ["fused"], acc, label=label)
                mem.close()
        if args.ablations and args.dataset.startswith("lifebench"):
            with tempfile.TemporaryDirectory() as tmp:
                mem = labelled_memories(path, lang, Path(tmp) / "m", args.person)
                score(mem, questions(), ["fused"], acc, label=LABELLED)
                mem.close()
        if args.fusion != DEFAULT_SCORER or args.pair_model:
            # leave the shared memory as the other benchmarks expect
            mem = MemFuse(path)
            mem.rebuild_fusion()
            mem.close()
    rows = summarise(acc)
    for r in rows:
        print(f"{r['category']:<32} {r['pipeline']:<12} n={r['questions']:<4} "
              + " ".join(f"R@{k}={r['recall'][str(k)]:.3f}" for k in KS) + "  "
              + " ".join(f"all@{k}={r['all_hit'][str(k)]:.3f}" for k in KS)
              + ("  cov@20={:.3f}".format(r["coverage"]["20"]) if "coverage" in r else ""))
    suffix = "" if args.fusion == DEFAULT_SCORER else f"-{args.fusion}-fusion"
    suffix += "-held-out-model" if args.pair_model else ""
    write_result(f"quality-{dataset}{suffix}", {
        "command": "python3 -m bench quality " + " ".join(argv or []),
        "dataset": dataset, "fusion": args.fusion,
        "pair_model": Path(args.pair_model).name if args.pair_model else None,
        "ks": list(KS), "rows": rows})
