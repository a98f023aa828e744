"""Where the evidence that ``fused`` leaves out of its context sits in the fusion graph.

    python3 -m bench misses [--datasets lifebench-en lifebench-zh generated] [--k 20]

For every question with two or more evidence records whose top ``k`` hits of ``fused``
do not hold all of them, each missing record is placed against the evidence that was
found: nothing of the question's evidence was found; in the same fused memory as a found
record; reached from one by an edge (by kind); or in no memory or edge with them, then
split by whether its labelled episode (LifeBench ``event_id``, the household's scenes) is
one a found record belongs to. Memories with their members in the context but below
``k`` show as "same memory"; episodes fusion did not assemble as "no link, same
episode"; questions spanning several episodes ("what did he do in January") as "no
link, other episode". Memories are those of bench/out (built as ``bench quality`` does).
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from typing import Any

from memfuse_lite import MemFuse
from memfuse_lite.timeutil import parse_ts

from .adapters import lifebench_questions
from .common import write_result
from .fusion_eval import records
from .fusion_fit import DATASETS, dataset
from .generate import SMALL, load
from .quality import OUT

PLACES = ("nothing found", "same memory", "edge", "no link, same episode",
          "no link, other episode")


def questions(name: str) -> list[dict[str, Any]]:
    """The dataset's questions."""
    return (load(SMALL, "questions.jsonl") if name == "generated"
            else list(lifebench_questions(name.split("-")[1])))


def graph_of(mem: MemFuse) -> tuple[dict[str, int], dict[int, int], dict[tuple[int, int], set[str]]]:
    """Record ("source:external_id") → event, event → fused memory, and the edge kinds
    between two events (both directions)."""
    edges: dict[tuple[int, int], set[str]] = defaultdict(set)
    with mem.engine.store.reading() as db:
        memory_of = {int(e): int(f) for e, f in db.execute(
            "SELECT event_id, fused_id FROM fused_members")}
        for kind, src, dst in db.execute("SELECT kind, src, dst FROM edges"):
            edges[(int(src), int(dst))].add(str(kind))
            edges[(int(dst), int(src))].add(str(kind))
    return {r: e for e, r in records(mem).items()}, memory_of, edges


def place_of(record: str, found: list[str], event_of: dict[str, int],
             memory_of: dict[int, int], edges: dict[tuple[int, int], set[str]],
             gold: dict[str, str]) -> tuple[str, set[str]]:
    """Where a missing evidence record sits against the ``found`` ones (one of
    :data:`PLACES`), and the kinds of the edges joining it to them."""
    if not found:
        return "nothing found", set()
    e, near = event_of[record], [event_of[r] for r in found]
    if memory_of.get(e) is not None and any(memory_of.get(e) == memory_of.get(f) for f in near):
        return "same memory", set()
    linked: set[str] = set().union(*(edges.get((e, f), set()) for f in near))
    if linked:
        return "edge", linked
    if any(gold.get(record, record) == gold.get(r, r) for r in found):
        return "no link, same episode", set()
    return "no link, other episode", set()


def run(name: str, k: int) -> dict[str, Any]:
    """The row of one dataset."""
    gold = dataset(name, OUT).gold
    mem = MemFuse(OUT / ("generated-s7" if name == "generated" else name))
    try:
        event_of, memory_of, edges = graph_of(mem)
        places: Counter[str] = Counter()
        kinds: Counter[str] = Counter()
        sources: dict[str, Counter[str]] = defaultdict(Counter)
        asked = missed = 0
        for q in questions(name):
            evidence = [f"{s}:{x}" for s, x in q["evidence"]]
            evidence = [r for r in evidence if r in event_of]
            if len(evidence) < 2:
                continue
            asked += 1
            hits = mem.search(q["text"][:4000], viewer=q["viewer"], k=k, pipeline="fused",
                              now=parse_ts(q["now"]) if q.get("now") else None).hits
            found_records = {f"{p.source}:{p.external_id}" for h in hits for p in h.provenance}
            found = [r for r in evidence if r in found_records]
            missing = [r for r in evidence if r not in found_records]
            missed += bool(missing)
            for record in missing:
                place, linked = place_of(record, found, event_of, memory_of, edges, gold)
                kinds.update(linked)
                places[place] += 1
                sources[place][record.split(":", 1)[0]] += 1
        total = sum(places.values()) or 1
        return {"dataset": name, "questions": asked, "all_evidence_in_top_k": asked - missed,
                "missing_records": sum(places.values()),
                "places": {p: {"records": places[p], "share": round(places[p] / total, 3),
                               "sources": dict(sources[p].most_common(4))} for p in PLACES},
                "edge_kinds": dict(kinds.most_common())}
    finally:
        mem.close()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python3 -m bench misses", description=__doc__)
    ap.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS))
    ap.add_argument("--k", type=int, default=20)
    args = ap.parse_args(argv)
    rows = []
    for name in args.datasets:
        row = run(name, args.k)
        rows.append(row)
        print(f"{name}: {row['questions']} questions with >= 2 evidence records, all in the "
              f"top {args.k} for {row['all_evidence_in_top_k']}; "
              f"{row['missing_records']} records missing: " + ", ".join(
                  f"{p} {v['share']}" for p, v in row["places"].items()), flush=True)
    write_result("misses", {"command": "python3 -m bench misses", "k": args.k, "rows": rows})
