"""Where the resident memory of an open memory goes, component by component.

    python3 -m bench memory --size 10000 [--embedder hashing|e5]

A memory of ``size`` generated observations is built once (hashing vectors, so building
is quick; the 384-d vectors take the same room as e5's), then opened in a fresh process
that adds one component at a time and reads its resident set (``/proc/self/statm``) after
each: the SQLite store, the dense index (hnswlib graph), the text index (tantivy, with its
writer), the catch-up check (which fills the dense index's filter arrays), fusion (graph
and accumulation zone), jieba's dictionary (which the first Chinese text loads), the
embedder (e5 int8: ONNX session + tokenizer) and its first batch. Each figure is a
difference of resident sets, so it includes what the component's libraries allocate
natively. Other fresh processes give the headline, a real open by ``MemFuse`` (no
embedder) and each pipeline's first query; a cold BM25 process (open + one query); and the
Python objects of an opened memory, counted with ``tracemalloc`` (tracing allocations
costs memory of its own, so it runs apart).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

from memfuse_lite import MemFuse, MemFuseConfig

from .common import HashingEmbedder, current_rss_mb, write_result
from .engine import ingest_file, prepare_workload

TARGETS_MB = {"index + store + graph per 100k events": 250.0, "embedder": 250.0,
              "total at 100k with the embedder": 600.0}
"""The on-device targets these figures are read against."""


def build(path: Path, size: int) -> None:
    """A memory of ``size`` generated observations (hashing vectors)."""
    path.mkdir(parents=True, exist_ok=True)
    workload = path.parent / "workload.jsonl"
    prepare_workload(workload, "generated", size, 1)
    mem = MemFuse(path, embedder=HashingEmbedder())
    asyncio.run(ingest_file(mem, workload, producers=4))
    mem.close()
    workload.unlink()


def profile(path: Path, embedder: str, trace: bool = False) -> dict[str, Any]:
    """Open ``path`` step by step, reading the resident set after each component; with
    ``trace``, count the Python objects of the opened memory instead."""
    from memfuse_lite.derived import catch_up
    from memfuse_lite.engine import DB_FILE, lock_directory
    from memfuse_lite.fusion.runtime import FusionRuntime
    from memfuse_lite.index.factory import DENSE_BACKENDS, TEXT_BACKENDS, Indexes
    from memfuse_lite.store.sqlite import Store

    if trace:
        tracemalloc.start()
    config = MemFuseConfig()
    steps: list[dict[str, Any]] = []
    last = current_rss_mb()

    def step(name: str) -> None:
        nonlocal last
        now = current_rss_mb()
        steps.append({"component": name, "mb": round(now - last, 1), "rss_mb": now})
        last = now

    step("python + memfuse_lite imported")
    lock = lock_directory(path)
    store = Store(path / DB_FILE)
    counts = store.counts()
    step("SQLite store")
    hashing = HashingEmbedder()
    dense = DENSE_BACKENDS[config.index.dense_backend](path, hashing.info.dims,
                                                        hashing.info.key(), config.index)
    step("dense index (hnswlib graph)")
    text = TEXT_BACKENDS[config.index.text_backend](path, config.index)
    step("text index (tantivy reader + writer)")
    indexes = Indexes(dense, text)
    catch_up(store, indexes)
    step("catch-up check (fills the dense index's filter arrays)")
    fusion = FusionRuntime.open(store, config.fusion, indexes.dense)
    fusion.graph.counts()  # the stored edges are read at the graph's first use
    step("fusion (graph + accumulation zone)")
    if trace:  # counting Python objects, not resident memory (tracing costs memory too)
        snapshot = tracemalloc.take_snapshot()
        tracemalloc.stop()
        stats = snapshot.statistics("filename")
        return {"python_objects_top": [
                    {"file": str(s.traceback[0].filename).split("site-packages/")[-1]
                     .split("memfuse_lite/")[-1], "mb": round(s.size / 1e6, 2)}
                    for s in stats[:8]],
                "python_objects_mb": round(sum(s.size for s in stats) / 1e6, 1)}
    from memfuse_lite.text.tokens import tokenize

    tokenize("牙医预约改到周四上午十点")
    step("jieba dictionary (loaded at the first Chinese text)")
    if embedder == "e5":
        from memfuse_lite.engine import load_default_embedder

        model = load_default_embedder(config)
        model.load()
        step("embedder (e5 int8: ONNX session + tokenizer)")
        model.embed(["warm-up: the dentist appointment moved to Thursday"] * 32)
        step("embedder first batch (activations)")
    for index in indexes:
        index.close()
    store.close()
    lock.close()
    del fusion
    return {"events": counts["events"], "fused_memories": counts["fused_memories"],
            "edges": counts["edges"], "steps": steps}


def _child(embedder: str, mode: str, path: Path) -> Any:
    """Run one measurement in a fresh process (nothing else resident)."""
    done = subprocess.run([sys.executable, "-m", "bench", "memory", "--embedder", embedder,
                           mode, str(path)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def queries_step(path: Path, embedder: str) -> dict[str, float]:
    """Resident memory after opening the whole memory and after each pipeline's first
    query (the embedder loads at the first query that needs it)."""
    out: dict[str, float] = {"before opening": current_rss_mb()}
    mem = MemFuse(path, embedder=HashingEmbedder() if embedder == "hashing" else None,
                  create=False)
    out["opened"] = current_rss_mb()
    for pipeline in ("bm25", "dense", "hybrid", "fused", "agentic"):
        mem.search("dentist appointment moved", viewer="ana", pipeline=pipeline)
        out[pipeline] = current_rss_mb()
    mem.close()
    return out


def bm25_cold(path: Path) -> dict[str, float]:
    """Seconds to open the memory and answer a first BM25 query, in this fresh process
    (``memfuse search --pipeline bm25`` loads no model)."""
    import time

    t0 = time.perf_counter()
    mem = MemFuse(path, embedder=HashingEmbedder(), create=False)
    opened = time.perf_counter()
    mem.search("dentist appointment moved", viewer="ana", pipeline="bm25")
    done = time.perf_counter()
    # the first Chinese query also loads jieba's dictionary
    mem.search("牙医预约改到周四", viewer="ana", pipeline="bm25")
    chinese = time.perf_counter()
    mem.close()
    return {"open_s": round(opened - t0, 3), "first_query_s": round(done - opened, 3),
            "first_chinese_query_s": round(chinese - done, 3), "rss_mb": current_rss_mb()}


def bm25_cold_process(path: Path) -> dict[str, float]:
    """:func:`bm25_cold` in a fresh interpreter, with the process's whole wall time
    (interpreter start and imports included)."""
    import time

    t0 = time.perf_counter()
    result = _child("hashing", "--bm25-only", path)
    return {**result, "process_s": round(time.perf_counter() - t0, 3)}


def main(argv: list[str] | None = None) -> None:
    """CLI entry: build (or reuse with --keep), then profile in a fresh process."""
    ap = argparse.ArgumentParser(prog="python3 -m bench memory", description=__doc__)
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--embedder", choices=("hashing", "e5"), default="e5")
    ap.add_argument("--keep", type=Path, help="build (or reuse) the memory here")
    ap.add_argument("--profile-only", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--queries-only", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--bm25-only", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--objects-only", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.profile_only:  # a child process: nothing loaded before measuring
        print(json.dumps(profile(args.profile_only, args.embedder)))
        return
    if args.objects_only:
        print(json.dumps(profile(args.objects_only, args.embedder, trace=True)))
        return
    if args.bm25_only:
        print(json.dumps(bm25_cold(args.bm25_only)))
        return
    if args.queries_only:
        print(json.dumps(queries_step(args.queries_only, args.embedder)))
        return
    work = args.keep or Path(tempfile.mkdtemp(prefix="memfuse-memory-"))
    path = work / "mem"
    if not (path / "memfuse.db").exists():
        build(path, args.size)
    result = _child(args.embedder, "--profile-only", path)
    result["after_queries_rss_mb"] = _child("hashing", "--queries-only", path)
    result["bm25_cold"] = bm25_cold_process(path)
    result.update(_child("hashing", "--objects-only", path))
    disk = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    result["disk_mb"] = round(disk / 1e6, 1)
    result["size"] = args.size
    # The headline is a real open (MemFuse, no embedder) in a fresh process, after a query
    # of every pipeline (the graph's edges are read at the first fused one); the steps
    # attribute it (their sum also holds what each step allocated and freed).
    opened = result["after_queries_rss_mb"]
    engine = round(max(opened.values()) - opened["before opening"], 1)
    result["opened_and_queried_mb"] = engine
    result["steps_sum_mb"] = round(sum(s["mb"] for s in result["steps"][1:6]), 1)
    result["index_store_graph_mb_per_100k"] = round(engine * 100_000 / max(1, result["events"]),
                                                    1)
    for s in result["steps"]:
        print(f"{s['component']:<48} +{s['mb']:>7.1f} MB  (resident {s['rss_mb']} MB)")
    print(f"index + store + graph (a memory opened by MemFuse and queried, no embedder): "
          f"{engine:.1f} MB "
          f"(the steps above sum to {result['steps_sum_mb']} MB) for {result['events']} events = "
          f"{result['index_store_graph_mb_per_100k']} MB per 100k events "
          f"(target <= {TARGETS_MB['index + store + graph per 100k events']:.0f})")
    print(f"Python objects after opening: {result['python_objects_mb']} MB; top: "
          + ", ".join(f"{t['file']} {t['mb']}" for t in result["python_objects_top"][:5]))
    cold = result["bm25_cold"]
    print(f"fresh process, open + first BM25 query: {cold['process_s']} s in all (open "
          f"{cold['open_s']} s, query {cold['first_query_s']} s, then a first Chinese query "
          f"{cold['first_chinese_query_s']} s; target <= 1 s at 100k; the OS file cache is "
          f"warm), resident {cold['rss_mb']} MB")
    print("resident after opening and after each pipeline's first query (hashing vectors): "
          + ", ".join(f"{k} {v}" for k, v in result["after_queries_rss_mb"].items()))
    write_result(f"memory-{args.size}-{args.embedder}", {
        "command": "python3 -m bench memory " + " ".join(argv or []), **result})


if __name__ == "__main__":
    main()
