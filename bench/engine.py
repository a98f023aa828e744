"""Engine benchmark: ingest throughput and search latency per pipeline at N observations.

    python3 -m bench engine --size 10000 [--threads 1] [--batch 64] [--queries 300]

The corpus is real text: the shared LifeBench person in English and Chinese and the
LoCoMo conversations, cycled (with distinct ids) when N is larger than all of them.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memfuse_lite import MemFuse, MemFuseConfig, Observation
from memfuse_lite.config import IngestConfig

from .adapters import (
    lifebench_observations,
    lifebench_questions,
    locomo_conversations,
    locomo_observations,
    locomo_questions,
)
from .common import current_rss_mb, peak_rss_mb, percentiles, write_result

PIPELINES = ("bm25", "dense", "hybrid", "fused", "agentic")


def corpus() -> Iterator[dict[str, Any]]:
    """Real observations, endlessly (later rounds get distinct ids and users)."""
    for round_ in itertools.count():
        suffix = "" if round_ == 0 else f"~{round_}"
        for lang in ("en", "zh"):
            for o in lifebench_observations(lang, user=f"leimingxuan-{lang}{suffix}"):
                yield o
        for i, conv in enumerate(locomo_conversations()):
            for o in locomo_observations(conv):
                yield {**o, "external_id": f"c{i}-{o['external_id']}{suffix}",
                       "user": o["user"] + suffix}


def queries(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """(question, viewer) pairs drawn from both datasets' questions."""
    pool = [(q["text"], f"leimingxuan-{lang}")
            for lang in ("en", "zh") for q in lifebench_questions(lang)]
    for i, conv in enumerate(locomo_conversations()):
        pool.extend((q["text"], q["viewer"]) for q in locomo_questions(conv, i))
    rng = random.Random(seed)
    rng.shuffle(pool)
    return (pool * (n // len(pool) + 1))[:n]


async def ingest_all(mem: MemFuse, items: list[Observation], producers: int) -> float:
    """Ingest with one producer per slice, concurrently; returns seconds until flushed."""
    t0 = time.perf_counter()

    async def producer(part: list[Observation]) -> None:
        for start in range(0, len(part), 32):
            await mem.ingest_many(part[start : start + 32])

    slices = [items[i::producers] for i in range(producers)]
    await asyncio.gather(*(producer(s) for s in slices))
    await mem.flush()
    return time.perf_counter() - t0


def run(size: int, threads: int, batch: int, n_queries: int, keep: Path | None) -> dict[str, Any]:
    """Ingest ``size`` observations, then time searches; returns the figures."""
    items = [Observation.from_json(o) for o in itertools.islice(corpus(), size)]
    workdir = keep or Path(tempfile.mkdtemp(prefix="memfuse-bench-"))
    config = MemFuseConfig(threads=threads, ingest=IngestConfig(batch_size=batch))
    rss_before = current_rss_mb()
    mem = MemFuse(workdir / "mem", config=config)
    rss_open = current_rss_mb()
    seconds = asyncio.run(ingest_all(mem, items, producers=8))
    times = mem.processor.times
    stats = mem.stats()
    result: dict[str, Any] = {
        "size": size,
        "threads": threads,
        "batch_size": batch,
        "ingest": {
            "observations": stats["observations"],
            "seconds": round(seconds, 2),
            "obs_per_s": round(stats["observations"] / seconds, 1),
            "stage_seconds": {k: round(getattr(times, k), 2)
                              for k in ("extract", "embed", "fuse", "commit", "index")},
            "batches": times.batches,
        },
        "search": {},
        "rss_mb": {"before_open": rss_before, "after_open": rss_open, "peak": 0.0},
    }
    qs = queries(n_queries)
    for q, viewer in qs[:10]:  # warm-up
        mem.search(q, viewer=viewer)
    for pipeline in PIPELINES:
        lat = []
        for q, viewer in qs:
            t0 = time.perf_counter()
            mem.search(q, viewer=viewer, pipeline=pipeline)
            lat.append((time.perf_counter() - t0) * 1000.0)
        result["search"][pipeline] = percentiles(lat)
    mem.close()
    t0 = time.perf_counter()
    for name in ("dense.hnsw", "dense.json", "sparse.json"):
        (workdir / "mem" / name).unlink(missing_ok=True)
    mem = MemFuse(workdir / "mem", config=config)
    result["index_rebuild_s"] = round(time.perf_counter() - t0, 2)
    mem.close()
    result["disk_mb"] = round(sum(p.stat().st_size for p in (workdir / "mem").rglob("*")
                                  if p.is_file()) / 1e6, 1)
    result["rss_mb"]["peak"] = peak_rss_mb()
    if keep is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return result


def main(argv: list[str] | None = None) -> None:
    """CLI entry."""
    ap = argparse.ArgumentParser(prog="python3 -m bench engine", description=__doc__)
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--keep", type=Path, help="keep the memory in this directory")
    args = ap.parse_args(argv)
    result = run(args.size, args.threads, args.batch, args.queries, args.keep)
    ing = result["ingest"]
    print(f"ingest {ing['observations']} obs in {ing['seconds']} s = {ing['obs_per_s']} obs/s "
          f"(stages {ing['stage_seconds']})")
    for p, s in result["search"].items():
        print(f"search {p:>7}: p50 {s['p50']} ms  p95 {s['p95']} ms  p99 {s['p99']} ms")
    print(f"index rebuild {result['index_rebuild_s']} s, disk {result['disk_mb']} MB, "
          f"peak RSS {result['rss_mb']['peak']} MB")
    write_result(f"engine-{args.size}", {"command": "python3 -m bench engine "
                                         + " ".join(argv or []), **result})
