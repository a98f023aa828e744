"""Cost against size: one memory grown step by step (by default to 100k, 300k and 1M
observations), measured at each step.

    python3 -m bench scale [--sizes 100000,300000,1000000] [--embedder hashing|e5]
                           [--queries 100] [--keep DIR]

The generated household's observations are written to a JSONL file once and streamed in
chunks of 20,000, so the process holds little besides the memory; with ``--keep``, a later
run with the same largest size and query count reads that file again (generating a million
observations takes about 8 minutes on a 2-core machine). ``--embedder hashing``
(the default) builds vectors without the model: the 384-d vectors cost the index what
e5's do, and a million observations ingest in an hour rather than a day; HNSW recall
depends on the vectors, so the recall column is the hashing vectors' (e5's is in
``bench engine``), given both as id sets and counting a neighbour tied in distance with
the exact k-th as found (bag-of-words vectors tie often). At each size: the step's ingest throughput, search p50/p95/p99 per
pipeline with and without the query embedding, HNSW recall@20 against exact search,
the resident set (current, and the highest sampled every 0.2 s while ingesting) and the
disk. How each cost grows is printed as the exponent b of cost ∝ size^b between steps.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import math
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memfuse_lite import MemFuse, MemFuseConfig, Observation
from memfuse_lite.engine import load_default_embedder

from .common import HashingEmbedder, RssSampler, TimedEmbedder, current_rss_mb, write_result
from .engine import ann_check, chunks, ingest_all, prepare_workload, timed_searches


def growth(steps: list[dict[str, Any]]) -> dict[str, list[float]]:
    """The exponent b of cost ∝ size^b between consecutive steps, per cost."""
    costs = {
        "ingest seconds per observation": lambda s: s["ingest_seconds"] / s["added"],
        "hybrid p50 without query embedding": lambda s: s["search_excluding_query_embedding"]
        ["hybrid"]["p50"],
        "fused p50 without query embedding": lambda s: s["search_excluding_query_embedding"]
        ["fused"]["p50"],
        "bm25 p50": lambda s: s["search"]["bm25"]["p50"],
        "resident MB (memory only)": lambda s: s["rss_mb"]["memory"],
        "disk MB": lambda s: s["disk_mb"],
    }
    out: dict[str, list[float]] = {}
    for name, cost in costs.items():
        out[name] = [round(math.log(max(cost(b), 1e-9) / max(cost(a), 1e-9))
                           / math.log(b["size"] / a["size"]), 2)
                     for a, b in itertools.pairwise(steps)]
    return out


def run(sizes: list[int], embedder_name: str, n_queries: int, threads: int,
        keep: Path | None, save: Callable[[dict[str, Any]], None] = lambda _r: None
        ) -> dict[str, Any]:
    """Grow one memory through ``sizes``, measuring at each (``save`` receives the result
    so far after each step: a long run that stops early keeps what it measured)."""
    work = keep or Path(tempfile.mkdtemp(prefix="memfuse-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    workload = work / "workload.jsonl"
    qs = prepare_workload(workload, "generated", max(sizes), n_queries)
    config = MemFuseConfig(threads=threads)
    embedder = TimedEmbedder(HashingEmbedder() if embedder_name == "hashing"
                             else load_default_embedder(config))
    rss_before = current_rss_mb()
    mem = MemFuse(work / "mem", config=config, embedder=embedder)
    steps: list[dict[str, Any]] = []
    stream = chunks(workload)
    done = 0
    pending: list[Observation] = []
    for size in sizes:
        seconds = 0.0
        with RssSampler() as rss:
            while done < size:
                if not pending:
                    pending = next(stream, [])
                    if not pending:
                        break
                take, pending = pending[: size - done], pending[size - done :]
                seconds += asyncio.run(ingest_all(mem, take, producers=8))
                done += len(take)
        step: dict[str, Any] = {"size": done, "added": done - (steps[-1]["size"] if steps else 0),
                                "ingest_seconds": round(seconds, 1)}
        step["obs_per_s"] = round(step["added"] / seconds, 1)
        now = current_rss_mb()
        step["rss_mb"] = {"process": now, "peak_ingesting": rss.peak,
                          "memory": round(now - rss_before, 1),
                          "before_opening": rss_before}
        step.update(timed_searches(mem, embedder, qs))
        step["ann"] = ann_check(mem, [q for q, _, _ in qs], curve=False)
        step["disk_mb"] = round(sum(p.stat().st_size for p in (work / "mem").rglob("*")
                                    if p.is_file()) / 1e6, 1)
        step["stats"] = {k: v for k, v in mem.stats().items() if isinstance(v, int)}
        steps.append(step)
        _print_step(step)
        result = {"embedder": embedder.info.model_id, "threads": threads, "queries": len(qs),
                  "sizes": sizes, "complete": len(steps) == len(sizes), "steps": steps,
                  "growth": growth(steps)}
        save(result)
    mem.close()
    if keep is None:
        shutil.rmtree(work, ignore_errors=True)
    return result


def _print_step(s: dict[str, Any]) -> None:
    print(f"{s['size']:>9,} observations: +{s['added']:,} in {s['ingest_seconds']} s "
          f"({s['obs_per_s']} obs/s); RSS {s['rss_mb']['process']} MB (peak while ingesting "
          f"{s['rss_mb']['peak_ingesting']}); disk {s['disk_mb']} MB; HNSW recall@20 "
          f"{s['ann']['hnsw_recall']} ({s['ann']['hnsw_recall_ties_counted']} counting ties)",
          flush=True)
    for p, lat in s["search"].items():
        w = s["search_excluding_query_embedding"][p]
        print(f"    {p:>7}: p50 {lat['p50']} p95 {lat['p95']} p99 {lat['p99']} ms "
              f"(without query embedding {w['p50']} / {w['p95']} / {w['p99']})", flush=True)


def main(argv: list[str] | None = None) -> None:
    """CLI entry."""
    ap = argparse.ArgumentParser(prog="python3 -m bench scale", description=__doc__)
    ap.add_argument("--sizes", default="100000,300000,1000000",
                    help="comma-separated, increasing")
    ap.add_argument("--embedder", choices=("hashing", "e5"), default="hashing")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--keep", type=Path, help="keep the workload and memory in this directory")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    if sizes != sorted(set(sizes)) or sizes[0] <= 0:
        ap.error("--sizes must be positive and increasing")
    command = "python3 -m bench scale " + " ".join(argv or [])
    result = run(sizes, args.embedder, args.queries, args.threads, args.keep,
                 lambda r: write_result(f"scale-{args.embedder}", {"command": command, **r}))
    for name, exps in result["growth"].items():
        print(f"growth of {name}: exponent " + ", ".join(f"{b:+.2f}" for b in exps))


if __name__ == "__main__":
    main()
