"""Causal and supersedes edges against the generated household's ground-truth links.

    python3 -m bench edges [--fusion rules|learned]

Each scene of the generated household lists its causal links (the flight-delay message →
the chat that moves the meeting → the cancelled dinner; the payment → the shop's push) and
its supersedes links (a moved appointment → the plan it replaces), by observation. The
memory's edges are compared with them by event: precision (share of the memory's edges of
a kind that are gold links of that kind) and recall (share of gold links found), directed
and undirected. Four edge sets are scored side by side: the explicit-cue causal edges
("because", "so", 因为 …), those from the news that announced a change to the report of it
that replaced the plan (the clinic's "has to be rebooked" → "my appointment is now
Saturday"), the order edges within a fused memory (each event → the member recorded
before it that it matches best; the naive baseline a reader would draw), and supersedes
edges.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from dataclasses import replace
from typing import Any

from memfuse_lite import MemFuse, MemFuseConfig
from memfuse_lite.config import FusionConfig
from memfuse_lite.fusion.graph import ANNOUNCED_CHANGE, STATED_CAUSE

from .common import write_result
from .fusion_eval import records
from .generate import SMALL, load
from .quality import OUT, build

Link = tuple[int, int]


def _event_of(rec: dict[int, str]) -> tuple[dict[str, str], dict[str, int]]:
    """Observation external id → record key, and record key → event id."""
    by_ext = {obs["external_id"]: f"{obs['source']}:{obs['external_id']}"
              for obs in load(SMALL, "observations.jsonl")}
    return by_ext, {key: eid for eid, key in rec.items()}


def scene_of(rec: dict[int, str]) -> dict[int, str]:
    """Event id → the id of the scene its observation belongs to (chatter has none)."""
    by_ext, event_of = _event_of(rec)
    out: dict[int, str] = {}
    for scene in load(SMALL, "scenes.jsonl"):
        for ext in scene["observations"]:
            eid = event_of.get(by_ext.get(ext, ""))
            if eid is not None:
                out[eid] = scene["id"]
    return out


def gold_links(rec: dict[int, str]) -> dict[str, set[Link]]:
    """Gold links by kind, as (cause or newer event, effect or older event) pairs."""
    by_ext, event_of = _event_of(rec)
    out: dict[str, set[Link]] = defaultdict(set)
    for scene in load(SMALL, "scenes.jsonl"):
        for a, b, kind in scene["links"]:
            ea, eb = event_of.get(by_ext.get(a, "")), event_of.get(by_ext.get(b, ""))
            if ea is not None and eb is not None:
                # scenes write supersedes as (newer, older) like the memory's edges
                out[kind].add((ea, eb))
    return out


def memory_edges(mem: MemFuse) -> dict[str, set[Link]]:
    """The memory's edges by kind; causal split into explicit cues, news of a change and
    episode order."""
    out: dict[str, set[Link]] = defaultdict(set)
    with mem.engine.store.reading() as db:
        for kind, src, dst, reason in db.execute("SELECT kind, src, dst, reason FROM edges"):
            if kind == "causal":
                kind = {STATED_CAUSE: "causal (explicit cue)",
                        ANNOUNCED_CHANGE: "causal (news of a change)"}.get(
                    str(reason), "causal (episode order)")
            out[str(kind)].add((int(src), int(dst)))
    return out


def score(predicted: set[Link], gold: set[Link], scenes: dict[int, str] | None = None
          ) -> dict[str, Any]:
    """Directed and undirected precision and recall, and with ``scenes`` (event id →
    scene id) the share of predicted links within one scene."""
    undirected = {frozenset(p) for p in gold}
    hit_d = len(predicted & gold)
    hit_u = sum(1 for p in predicted if frozenset(p) in undirected)
    found_u = sum(1 for g in gold if g in predicted or (g[1], g[0]) in predicted)
    out = {"count": len(predicted), "gold": len(gold),
           "precision": round(hit_d / len(predicted), 3) if predicted else None,
           "recall": round(hit_d / len(gold), 3) if gold else None,
           "precision_undirected": round(hit_u / len(predicted), 3) if predicted else None,
           "recall_undirected": round(found_u / len(gold), 3) if gold else None}
    if scenes is not None:
        within = sum(1 for a, b in predicted if scenes.get(a) is not None
                     and scenes.get(a) == scenes.get(b))
        out["precision_same_scene"] = round(within / len(predicted), 3) if predicted else None
    return out


def main(argv: list[str] | None = None) -> None:
    """CLI entry."""
    ap = argparse.ArgumentParser(prog="python3 -m bench edges", description=__doc__)
    ap.add_argument("--fusion", choices=("rules", "learned", "both"), default="both")
    args = ap.parse_args(argv)
    path = OUT / "generated-s7"
    build(path, load(SMALL, "observations.jsonl")).close()
    scorers = ("rules", "learned") if args.fusion == "both" else (args.fusion,)
    rows: list[dict[str, Any]] = []
    for scorer in scorers:
        config = replace(MemFuseConfig(), fusion=FusionConfig(scorer=scorer))
        mem = MemFuse(path, config=config)
        try:
            mem.rebuild_fusion()
            rec = records(mem)
            gold = gold_links(rec)
            scenes = scene_of(rec)
            edges = memory_edges(mem)
        finally:
            mem.close()
        causal = ("causal (explicit cue)", "causal (news of a change)", "causal (episode order)")
        for kind, gold_kind in (*((k, "causal") for k in causal), ("supersedes", "supersedes")):
            rows.append({"scorer": scorer, "edges": kind, "against": gold_kind,
                         **score(edges.get(kind, set()), gold.get(gold_kind, set()), scenes)})
        both = set().union(*(edges.get(kind, set()) for kind in causal))
        rows.append({"scorer": scorer, "edges": "causal (either)", "against": "causal",
                     **score(both, gold.get("causal", set()), scenes)})
    if args.fusion == "both":  # the shared memory stays fused as the other benchmarks expect
        mem = MemFuse(path)
        mem.rebuild_fusion()
        mem.close()
    for r in rows:
        print(f"{r['scorer']:<8} {r['edges']:<24} {r['count']:>5} edges vs {r['gold']:>4} gold "
              f"{r['against']:<10}  P {r['precision']}  R {r['recall']}  (undirected P "
              f"{r['precision_undirected']}  R {r['recall_undirected']}; within one scene "
              f"{r['precision_same_scene']})")
    write_result("edges-generated", {"command": "python3 -m bench edges " + " ".join(argv or []),
                                     "dataset": "generated", "rows": rows})


if __name__ == "__main__":
    main()
