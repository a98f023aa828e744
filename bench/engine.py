"""Engine benchmark: ingest throughput and search latency per pipeline at N observations.

    python3 -m bench engine --size 10000 [--corpus real|generated] [--embedder e5|hashing]
                            [--threads 1] [--batch 64] [--queries 300] [--keep DIR]
                            [--ef-construction N]
    python3 -m bench engine --size N --keep DIR --searches-only [--ef-filtered 96]

``real``: the shared LifeBench person in English and Chinese and the LoCoMo
conversations, cycled (with distinct ids) when N is larger than all of them.
``generated``: a household from the Scene-to-Sensor generator at N observations, asked
its own questions. ``--embedder hashing`` swaps the ONNX model for a hashing
bag-of-words vectoriser to show the engine's cost without the embedder. After the
pipelines, HNSW top-20 is compared with exact search (numpy over the index's own vectors) and
timed beside a numpy brute-force scan over the same vectors, and the filtered graph walks
the fused and dense pipelines make are compared with exact search over the points that
pass, per ef. ``--searches-only`` times searches and the ANN checks again on the memory an
earlier ``--keep`` run left (search settings compared without ingesting again).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import multiprocessing
import random
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import hnswlib
import numpy as np
from tqdm import tqdm

from memfuse_lite import MemFuse, MemFuseConfig, Observation
from memfuse_lite.config import IngestConfig
from memfuse_lite.engine import load_default_embedder
from memfuse_lite.index.dense import HnswIndex
from memfuse_lite.timeutil import parse_ts

from .adapters import (
    lifebench_observations,
    lifebench_questions,
    locomo_conversations,
    locomo_observations,
    locomo_questions,
)
from .common import (
    HashingEmbedder,
    RssSampler,
    TimedEmbedder,
    current_rss_mb,
    outside_embedding,
    peak_rss_mb,
    percentiles,
    stage_overhead,
    write_result,
)
from .gen import GenConfig, generate

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


Query = tuple[str, str, str | None]


def queries(n: int, seed: int = 0) -> list[Query]:
    """(question, viewer, now) triples drawn from both datasets' questions."""
    pool: list[Query] = [(q["text"], f"leimingxuan-{lang}", None)
                         for lang in ("en", "zh") for q in lifebench_questions(lang)]
    for i, conv in enumerate(locomo_conversations()):
        pool.extend((q["text"], q["viewer"], None) for q in locomo_questions(conv, i))
    rng = random.Random(seed)
    rng.shuffle(pool)
    return (pool * (n // len(pool) + 1))[:n]


async def ingest_all(mem: MemFuse, items: list[Observation], producers: int) -> float:
    """Ingest with one producer per slice, concurrently; returns seconds until flushed."""
    t0 = time.perf_counter()

    async def producer(part: list[Observation]) -> None:
        for start in range(0, len(part), 32):
            await mem.ingest_many(part[start : start + 32])
            bar.update(min(32, len(part) - start))

    with tqdm(total=len(items), desc="ingest", unit="obs", mininterval=5) as bar:
        slices = [items[i::producers] for i in range(producers)]
        await asyncio.gather(*(producer(s) for s in slices))
        await mem.flush()
    return time.perf_counter() - t0


EF_CURVE = (32, 64, 96, 128, 192, 256, 384)
"""ef_search values of the recall/latency curve."""


def ann_check(mem: MemFuse, texts: list[str], k: int = 20, curve: bool = True
              ) -> dict[str, Any]:
    """HNSW recall@k against exact search, and HNSW vs numpy brute-force latency (and,
    with ``curve``, recall and latency over :data:`EF_CURVE`)."""
    dense = hnsw_of(mem)
    ids, counts, vecs = point_vectors(dense)
    copies = np.zeros(int(ids.max()) + 1 if len(ids) else 0, dtype=np.int64)
    copies[ids] = counts
    qvecs = mem.embedder.embed(texts, role="query")
    qvecs = qvecs / np.maximum(np.linalg.norm(qvecs, axis=1, keepdims=True), 1e-12)
    dense.index.set_ef(max(mem.config.index.hnsw_ef_search, k))
    truths, kth = [], []
    for q in qvecs:
        sims = vecs @ q
        top = np.argpartition(-sims, k)[:k] if len(sims) > k else np.arange(len(sims))
        truths.append(set(ids[top].tolist()))
        # the k-th nearest event: the nearest points, each standing for its events
        ranked = top[np.argsort(-sims[top])]
        kth.append(float(1.0 - np.repeat(sims[ranked], counts[ranked])[:k].min()))
    recall, tied, t_hnsw, t_numpy = [], [], [], []
    for q, truth, limit in zip(qvecs, truths, kth, strict=True):
        t0 = time.perf_counter()
        got, dist = dense.index.knn_query(q.reshape(1, -1), k=k)
        t_hnsw.append((time.perf_counter() - t0) * 1000.0)
        # Counted by distance too: a vector tied with the exact k-th is as good a
        # neighbour (bag-of-words vectors tie often; e5's almost never do); a point
        # counts once per event it stands for.
        tied.append(float(np.mean(records_found(got[0], dist[0], copies, k) <= limit + 1e-6)))
        t0 = time.perf_counter()
        sims = vecs @ q
        top = np.argpartition(-sims, k)[:k]
        top = top[np.argsort(-sims[top])]
        t_numpy.append((time.perf_counter() - t0) * 1000.0)
        recall.append(len(set(got[0].tolist()) & truth) / k)
    points = recall_curve(dense.index, qvecs, truths, kth, EF_CURVE if curve else (), k,
                          copies)
    dense.index.set_ef(mem.config.index.hnsw_ef_search)
    return {"k": k, "queries": len(texts), "vectors": len(ids), "events": int(counts.sum()),
            "hnsw_recall": round(float(np.mean(recall)), 4),
            "hnsw_recall_ties_counted": round(float(np.mean(tied)), 4),
            "hnsw_ms": percentiles(t_hnsw), "numpy_bruteforce_ms": percentiles(t_numpy),
            "ef_search": mem.config.index.hnsw_ef_search, "curve": points}


def hnsw_of(mem: MemFuse) -> HnswIndex:
    """The memory's hnswlib index (the ANN checks read it directly)."""
    dense = mem.engine.dense
    if not isinstance(dense, HnswIndex):
        raise SystemExit(f"the ANN check reads hnswlib directly; this memory's dense index "
                         f"is {type(dense).__name__}")
    return dense


def point_vectors(dense: HnswIndex) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The graph's live points (events of one text share one), the events each stands
    for, and one copy of their vectors (unit length, as hnswlib stores them), read a
    block at a time."""
    ids, counts = dense.points()
    vecs = np.empty((len(ids), dense.dims), dtype=np.float32)
    done = 0
    for _, block in dense.vector_blocks(ids):
        vecs[done:done + len(block)] = block
        done += len(block)
    return ids, counts, vecs


EF_FILTERED_CURVE = (20, 48, 64, 96, 128, 192, 384)
"""ef values of the filtered-walk recall/latency curve."""


def filtered_check(mem: MemFuse, qs: list[Query], efs: Sequence[int] = EF_FILTERED_CURVE
                   ) -> dict[str, Any]:
    """Recall and latency of the filtered graph walks the fused and dense pipelines make
    for ``qs`` (a viewer's records, a time window, a user: the filter passes few points),
    against exact search over the points that pass, per ef in ``efs``."""
    dense = hnsw_of(mem)
    walks: list[tuple[np.ndarray, np.ndarray, int]] = []
    plain_walk = dense.walk

    def recording(query: np.ndarray, points: np.ndarray | None, k: int,
                  ef: int | None = None) -> list[tuple[int, float]] | None:
        if points is not None:
            walks.append((query.copy(), points.copy(), k))
        return plain_walk(query, points, k, ef)

    dense.walk = recording  # type: ignore[method-assign]
    try:
        for pipeline in ("fused", "dense"):
            for q, viewer, now in qs:
                mem.search(q, viewer=viewer, pipeline=pipeline,
                           now=parse_ts(now) if now else None)
    finally:
        del dense.walk
    if not walks:
        return {"walks": 0, "curve": []}
    ids, _, vecs = point_vectors(dense)
    row = np.full(len(walks[0][1]), -1, dtype=np.int64)
    row[ids] = np.arange(len(ids))
    truths, limits, shares = [], [], []
    for query, points, k in walks:
        passing = np.flatnonzero(points[:len(row)] & (row[:len(points)] >= 0))
        sims = vecs[row[passing]] @ (query / max(float(np.linalg.norm(query)), 1e-12))
        top = np.argpartition(-sims, k - 1)[:k] if len(sims) > k else np.arange(len(sims))
        truths.append(set(passing[top].tolist()))
        limits.append(float(sims[top].min()))
        shares.append(len(passing) / len(ids))
    curve = []
    for ef in efs:
        plain, tied, times = [], [], []
        for (query, points, k), truth, limit in zip(walks, truths, limits, strict=True):
            t0 = time.perf_counter()
            found = dense.walk(query, points, k, ef) or []
            times.append((time.perf_counter() - t0) * 1000.0)
            plain.append(len({p for p, _ in found} & truth) / k)
            tied.append(sum(sim >= limit - 1e-6 for _, sim in found) / k)
        curve.append({"ef": ef, "recall": round(float(np.mean(plain)), 4),
                      "recall_ties_counted": round(float(np.mean(tied)), 4),
                      "ms": percentiles(times)})
    return {"walks": len(walks), "queries": len(qs),
            "share_passing": {"p50": round(float(np.median(shares)), 4),
                              "min": round(float(min(shares)), 4)},
            "ef_filtered": mem.config.index.hnsw_ef_filtered, "curve": curve}


def records_found(labels: np.ndarray, dists: np.ndarray, copies: np.ndarray | None,
                  k: int) -> np.ndarray:
    """The distances of the first k records the labels found stand for (with ``copies``,
    records per label; without, a record per label)."""
    return dists if copies is None else np.repeat(dists, copies[labels])[:k]


def recall_curve(index: hnswlib.Index, queries: np.ndarray, truths: Sequence[set[int]],
                 limits: Sequence[float], efs: Sequence[int], k: int,
                 copies: np.ndarray | None = None) -> list[dict[str, Any]]:
    """Per ef_search: recall@k against the exact ``truths`` (id sets), the same counting a
    neighbour within the exact k-th's distance (``limits``) as found, and the latency of
    one single-threaded query. With ``copies`` (records per label, for an index holding
    one vector per distinct text) each label found stands for that many records: the
    first k of them are counted against the records' exact k-th distance."""
    points = []
    for ef in efs:
        index.set_ef(max(ef, k))
        plain, tied, times = [], [], []
        for q, truth, limit in zip(queries, truths, limits, strict=True):
            t0 = time.perf_counter()
            got, dist = index.knn_query(q.reshape(1, -1), k=k, num_threads=1)
            times.append((time.perf_counter() - t0) * 1000.0)
            plain.append(len(set(got[0].tolist()) & truth) / k)
            tied.append(float(np.mean(records_found(got[0], dist[0], copies, k)
                                      <= limit + 1e-6)))
        points.append({"ef_search": ef, "recall": round(float(np.mean(plain)), 4),
                       "recall_ties_counted": round(float(np.mean(tied)), 4),
                       "ms": percentiles(times)})
    return points


RAW_SAMPLE = 10_000
"""Texts the raw embedder is timed on (the first ones ingested)."""


def raw_embedder(mem: MemFuse, path: Path, batch: int) -> dict[str, float]:
    """The embedder alone on the first ingested texts, in batches of the ingest size: the
    ceiling of ingest throughput (the same process, after ingesting). Ingest embeds each
    distinct text once, so the same texts less repeats are timed too: observations per
    second if only those were embedded."""
    texts = [o.text for o in next(chunks(path, RAW_SAMPLE), [])]

    def seconds_for(some: list[str]) -> float:
        t0 = time.perf_counter()
        for i in range(0, len(some), batch):
            mem.embedder.embed(some[i : i + batch])
        return time.perf_counter() - t0

    seconds = seconds_for(texts)
    distinct = list(dict.fromkeys(texts))
    distinct_seconds = seconds_for(distinct)
    return {"texts": len(texts), "seconds": round(seconds, 2),
            "obs_per_s": round(len(texts) / seconds, 1),
            "distinct_texts": len(distinct), "distinct_seconds": round(distinct_seconds, 2),
            "distinct_obs_per_s": round(len(texts) / distinct_seconds, 1)}


CHUNK = 20_000
"""Observations read back from the workload file and ingested at a time."""


def write_workload(path: Path, corpus_name: str, size: int, n_queries: int) -> list[Query]:
    """Write the chosen corpus's first ``size`` observations to ``path`` (JSONL) and
    return its queries. Ingestion streams the file in chunks, so the benchmark holds no
    copy of the workload beside the memory it measures."""
    qs: list[Query]
    if corpus_name == "generated":
        gen = generate(GenConfig(seed=11, size=size, questions=min(n_queries, 600)))
        records: Iterable[dict[str, Any]] = gen.observations[:size]
        pool = [(q["text"], q["viewer"], q["now"]) for q in gen.questions]
        qs = (pool * (n_queries // max(1, len(pool)) + 1))[:n_queries]
    else:
        records = itertools.islice(corpus(), size)
        qs = queries(n_queries)
    with path.open("w", encoding="utf-8") as f:
        for o in records:
            f.write(json.dumps(o, ensure_ascii=False) + "\n")
    return qs


def prepare_workload(path: Path, corpus_name: str, size: int, n_queries: int) -> list[Query]:
    """:func:`write_workload` in a child process: generating a large corpus leaves freed
    memory in the heap that would otherwise count as the measured memory's. A workload
    file that a run with the same corpus, size and query count left beside its record
    (``<path>.json``, written after the file) is read again instead: the corpora are
    deterministic, and generating a million household observations takes minutes."""
    record = path.with_suffix(".json")
    wanted = {"corpus": corpus_name, "size": size, "queries_asked": n_queries}
    if path.exists() and record.exists():
        kept = json.loads(record.read_text(encoding="utf-8"))
        if {k: kept.get(k) for k in wanted} == wanted:
            return [(q[0], q[1], q[2]) for q in kept["queries"]]
    record.unlink(missing_ok=True)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        qs: list[Query] = [(q[0], q[1], q[2]) for q in pool.apply(
            write_workload, (path, corpus_name, size, n_queries))]
    record.write_text(json.dumps({**wanted, "queries": qs}, ensure_ascii=False),
                      encoding="utf-8")
    return qs


def chunks(path: Path, size: int = CHUNK) -> Iterator[list[Observation]]:
    """The workload file in chunks of ``size`` observations."""
    with path.open(encoding="utf-8") as f:
        while batch := list(itertools.islice(f, size)):
            yield [Observation.from_json(json.loads(line)) for line in batch]


async def ingest_file(mem: MemFuse, path: Path, producers: int = 8) -> float:
    """Ingest the workload file chunk by chunk; returns the seconds spent."""
    return sum([await ingest_all(mem, chunk, producers) for chunk in chunks(path)])


def run(size: int, threads: int, batch: int, n_queries: int, keep: Path | None,
        corpus_name: str = "real", embedder_name: str = "e5",
        ef_construction: int | None = None) -> dict[str, Any]:
    """Ingest ``size`` observations, then time searches; returns the figures
    (``ef_construction`` overrides ``IndexConfig.hnsw_ef_construction``)."""
    workdir = keep or Path(tempfile.mkdtemp(prefix="memfuse-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    workload_file = workdir / "workload.jsonl"
    qs = prepare_workload(workload_file, corpus_name, size, n_queries)
    config = MemFuseConfig(threads=threads, ingest=IngestConfig(batch_size=batch))
    if ef_construction is not None:
        config = replace(config, index=replace(config.index,
                                               hnsw_ef_construction=ef_construction))
    embedder = TimedEmbedder(HashingEmbedder() if embedder_name == "hashing"
                             else load_default_embedder(config))
    rss_before = current_rss_mb()
    mem = MemFuse(workdir / "mem", config=config, embedder=embedder)
    rss_open = current_rss_mb()
    with RssSampler() as sampled:
        seconds = asyncio.run(ingest_file(mem, workload_file))
    times = mem.ingest_times()
    stats = mem.stats()
    result: dict[str, Any] = {
        "size": size,
        "corpus": corpus_name,
        "embedder": mem.embedder.info.model_id,
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
        "rss_mb": {"before_open": rss_before, "after_open": rss_open,
                   "peak_ingesting": sampled.peak, "peak": 0.0},
    }
    result.update(timed_searches(mem, embedder, qs))
    result["ann"] = ann_check(mem, [q for q, _, _ in qs[:200]])
    result["ann"]["filtered"] = filtered_check(mem, qs[:200])
    result["ingest"]["raw_embedder"] = raw_embedder(mem, workload_file, batch)
    mem.close()
    t0 = time.perf_counter()
    for name in ("dense.hnsw", "dense.json", "sparse.json"):
        (workdir / "mem" / name).unlink(missing_ok=True)
    mem = MemFuse(workdir / "mem", config=config, embedder=embedder)
    result["index_rebuild_s"] = round(time.perf_counter() - t0, 2)
    mem.close()
    result["disk_mb"] = round(sum(p.stat().st_size for p in (workdir / "mem").rglob("*")
                                  if p.is_file()) / 1e6, 1)
    result["rss_mb"]["peak"] = peak_rss_mb()
    if keep is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return result


def searches_only(keep: Path, size: int, threads: int, n_queries: int,
                  corpus_name: str, embedder_name: str, ef_filtered: int | None = None
                  ) -> dict[str, Any]:
    """Search latency and the ANN checks on the memory an earlier ``--keep`` run of the
    same size, corpus and embedder left in ``keep`` (search settings compared without
    ingesting again; ``ef_filtered`` overrides ``IndexConfig.hnsw_ef_filtered``)."""
    if not (keep / "mem").is_dir():
        raise SystemExit(f"{keep / 'mem'} holds no memory: run with --keep {keep} first")
    qs = prepare_workload(keep / "workload.jsonl", corpus_name, size, n_queries)
    config = MemFuseConfig(threads=threads)
    if ef_filtered is not None:
        config = replace(config, index=replace(config.index, hnsw_ef_filtered=ef_filtered))
    embedder = TimedEmbedder(HashingEmbedder() if embedder_name == "hashing"
                             else load_default_embedder(config))
    mem = MemFuse(keep / "mem", config=config, embedder=embedder)
    try:
        if mem.stats()["observations"] != size:
            raise SystemExit(f"{keep / 'mem'} holds {mem.stats()['observations']} "
                             f"observations, not {size}")
        result: dict[str, Any] = {"size": size, "corpus": corpus_name,
                                  "embedder": mem.embedder.info.model_id, "threads": threads}
        result.update(timed_searches(mem, embedder, qs))
        result["ann"] = ann_check(mem, [q for q, _, _ in qs[:200]])
        result["ann"]["filtered"] = filtered_check(mem, qs[:200])
    finally:
        mem.close()
    return result


NO_RANKER = "fused-no-ranker"
"""The fused pipeline timed again with its ranking stage off (``use_ranker=False``)."""


def timed_searches(mem: MemFuse, embedder: TimedEmbedder, qs: list[Query]) -> dict[str, Any]:
    """Latency per pipeline over ``qs``, with and without the query embedding (the time
    ``embedder`` spent on queries inside each search); the fused pipeline also without
    its ranking stage, each question asked both ways in turn (in alternating order)."""
    out: dict[str, Any] = {"search": {}, "search_excluding_query_embedding": {}}
    for q, viewer, _ in qs[:10]:  # warm-up
        mem.search(q, viewer=viewer)
    mem.warm_up().join()  # warm: the graph's edges in memory, not being read meanwhile
    embedding: list[float] = []
    ranked = mem.engine.config
    plain = replace(ranked, retrieval=replace(ranked.retrieval, use_ranker=False))
    for pipeline in PIPELINES:
        variants = [(pipeline, ranked)] + ([(NO_RANKER, plain)] if pipeline == "fused" else [])
        lat: dict[str, list[float]] = {name: [] for name, _ in variants}
        without: dict[str, list[float]] = {name: [] for name, _ in variants}
        for n, (q, viewer, now) in enumerate(tqdm(qs, desc=f"search {pipeline}",
                                                  mininterval=5)):
            # which variant goes first alternates: the first search of a question also
            # embeds it, which leaves the CPU's caches cold for the search after it
            for name, config in variants if n % 2 == 0 else variants[::-1]:
                mem.engine.config = config  # the stage reads it at each search
                before = embedder.query_seconds
                t0 = time.perf_counter()
                mem.search(q, viewer=viewer, pipeline=pipeline,
                           now=parse_ts(now) if now else None)
                ms = (time.perf_counter() - t0) * 1000.0
                embed_ms = (embedder.query_seconds - before) * 1000.0
                lat[name].append(ms)
                without[name].append(ms - embed_ms)
                if embed_ms > 0:
                    embedding.append(embed_ms)
        mem.engine.config = ranked
        for name, _ in variants:
            out["search"][name] = percentiles(lat[name])
            out["search_excluding_query_embedding"][name] = percentiles(without[name])
    out["query_embedding_ms"] = percentiles(embedding)
    return out


def target_lines(result: dict[str, Any]) -> list[str]:
    """Each on-device target beside what this run measured (the goals are for 100k
    events; smaller runs show the trend)."""
    ing, ann = result.get("ingest"), result["ann"]
    without = result["search_excluding_query_embedding"]
    rows = []
    if ing is not None:
        rows += [("peak RSS while ingesting",
                  f"{result['rss_mb'].get('peak_ingesting', '-')} MB", "<= 600 MB at 100k"),
                 ("fusion + index + commit, summed stage time",
                  f"{stage_overhead(ing['stage_seconds']):.0%}",
                  "<= 25% (stages overlap)"),
                 ("ingest wall time outside the embed stage", f"{outside_embedding(ing):.0%}",
                  "<= 25% (the same, read with the overlap)")]
    rows += [
        ("fused p50 / p95 without query embedding",
         f"{without['fused']['p50']} / {without['fused']['p95']} ms", "<= 15 / 30 ms"),
        *([("fused ranking stage, p50 cost without query embedding",
            f"{without['fused']['p50'] - without[NO_RANKER]['p50']:+.2f} ms", "<= +3 ms")]
          if NO_RANKER in without else []),
        ("hybrid p50 / p95 without query embedding",
         f"{without['hybrid']['p50']} / {without['hybrid']['p95']} ms", "<= 5 / 10 ms"),
        (f"HNSW recall@{ann['k']} vs exact", str(ann["hnsw_recall"]), ">= 0.98"),
    ]
    filtered = ann.get("filtered", {})
    at = [p for p in filtered.get("curve", []) if p["ef"] == filtered.get("ef_filtered")]
    if at:
        rows.append((f"filtered-walk recall vs exact (ef {at[0]['ef']})",
                     str(at[0]["recall"]), ">= 0.98"))
    if ing is not None and "raw_embedder" in ing:
        ratio = ing["obs_per_s"] / ing["raw_embedder"]["obs_per_s"]
        rows.insert(1, ("ingest throughput / raw embedder", f"{ratio:.2f}x", ">= 0.8x"))
        if "distinct_obs_per_s" in ing["raw_embedder"]:
            ratio = ing["obs_per_s"] / ing["raw_embedder"]["distinct_obs_per_s"]
            rows.insert(2, ("  / raw embedder on the distinct texts", f"{ratio:.2f}x",
                            "(what ingest embeds)"))
    out = [f"targets at {result['size']:,} observations ({result['embedder']}):"]
    out += [f"  {name:<42} {value:>18}   goal {goal}" for name, value, goal in rows]
    return out


def main(argv: list[str] | None = None) -> None:
    """CLI entry."""
    ap = argparse.ArgumentParser(prog="python3 -m bench engine", description=__doc__)
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--corpus", choices=("real", "generated"), default="real")
    ap.add_argument("--embedder", choices=("e5", "hashing"), default="e5")
    ap.add_argument("--keep", type=Path, help="keep the memory in this directory")
    ap.add_argument("--searches-only", action="store_true",
                    help="no ingest: time searches and the ANN checks on the memory an "
                         "earlier run with the same --keep, --size, --corpus and "
                         "--embedder left there")
    ap.add_argument("--ef-filtered", type=int,
                    help="with --searches-only: IndexConfig.hnsw_ef_filtered for this run")
    ap.add_argument("--ef-construction", type=int,
                    help="IndexConfig.hnsw_ef_construction of the memory ingested")
    args = ap.parse_args(argv)
    suffix = "" if args.corpus == "real" else f"-{args.corpus}"
    suffix += "" if args.embedder == "e5" else f"-{args.embedder}"
    if args.searches_only:
        if args.keep is None:
            ap.error("--searches-only needs --keep DIR")
        if args.ef_construction is not None:
            ap.error("--ef-construction applies to an ingest, not to --searches-only")
        result = searches_only(args.keep, args.size, args.threads, args.queries,
                               args.corpus, args.embedder, args.ef_filtered)
        suffix += "-searches" + (f"-ef{args.ef_filtered}" if args.ef_filtered else "")
    else:
        result = run(args.size, args.threads, args.batch, args.queries, args.keep,
                     args.corpus, args.embedder, args.ef_construction)
        suffix += f"-efc{args.ef_construction}" if args.ef_construction else ""
    print_result(result)
    write_result(f"engine-{args.size}{suffix}", {"command": "python3 -m bench engine "
                                         + " ".join(argv or []), **result})


def print_result(result: dict[str, Any]) -> None:
    """What :func:`run` or :func:`searches_only` measured, targets last."""
    ing = result.get("ingest")
    if ing is not None:
        print(f"ingest {ing['observations']} obs in {ing['seconds']} s = "
              f"{ing['obs_per_s']} obs/s (stages {ing['stage_seconds']})")
    for p, s in result["search"].items():
        w = result["search_excluding_query_embedding"][p]
        print(f"search {p:>7}: p50 {s['p50']} ms  p95 {s['p95']} ms  p99 {s['p99']} ms  "
              f"(without query embedding {w['p50']} / {w['p95']} / {w['p99']} ms)")
    e = result["query_embedding_ms"]
    print(f"query embedding: p50 {e['p50']} ms  p95 {e['p95']} ms")
    ann = result["ann"]
    print(f"HNSW recall@{ann['k']} vs exact {ann['hnsw_recall']}; p50 HNSW "
          f"{ann['hnsw_ms']['p50']} ms vs numpy brute force {ann['numpy_bruteforce_ms']['p50']} ms")
    for point in ann["curve"]:
        print(f"  ef_search {point['ef_search']:>4}: recall@{ann['k']} {point['recall']:.4f}, "
              f"p50 {point['ms']['p50']} ms, p95 {point['ms']['p95']} ms")
    filtered = ann["filtered"]
    if filtered["walks"]:
        print(f"filtered walks: {filtered['walks']} for {filtered['queries']} questions searched "
              f"by fused and dense, median share of points passing "
              f"{filtered['share_passing']['p50']}")
    for point in filtered["curve"]:
        print(f"  ef {point['ef']:>4}: recall {point['recall']:.4f} (ties counted "
              f"{point['recall_ties_counted']:.4f}), p50 {point['ms']['p50']} ms, "
              f"p95 {point['ms']['p95']} ms")
    if ing is not None:
        print(f"index rebuild {result['index_rebuild_s']} s, disk {result['disk_mb']} MB, "
              f"peak RSS {result['rss_mb']['peak']} MB (while ingesting "
              f"{result['rss_mb']['peak_ingesting']} MB)")
    for line in target_lines(result):
        print(line)
