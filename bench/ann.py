"""HNSW recall and latency on e5 vectors, grown to a million.

    python3 -m bench ann [--sizes 100000,300000,1000000] [--queries 200] [--threads 2]
                         [--m M] [--ef-construction N] [--point-per-record]

``bench scale`` grows a whole memory to a million observations with hashing vectors (an
hour rather than a day), whose ties make HNSW recall meaningless there; this benchmark
measures the dense index alone on the real embedder's vectors. The generated household's
texts (seed 11, as ``bench engine`` and ``bench scale``) are embedded once with the
default embedder, each distinct text once, in chunks cached under the user cache
(``$XDG_CACHE_HOME/memfuse_lite/bench-ann``), so a rerun or a run stopped half-way costs
only what is missing. The index is built as the library builds its own (hnswlib, cosine
space, ``IndexConfig``'s M and ef_construction, one point per distinct text standing for
all its records; ``--point-per-record`` gives each record a point of its own, as the
library did before) and grown through the sizes; at each size,
for the household's questions embedded as queries: recall@20 against exact search over the
same vectors, per ef_search, with the latency of one single-threaded query. Recall counts
records: a point found stands for its records (as a search returns them), and a record at
the exact 20th's distance counts as found (the household repeats texts, such as a call
log's "Outgoing call to HomeCare Repairs, 5 min"); the plain id-set recall (of distinct
texts, with a point per text) is given beside it.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import hnswlib
import numpy as np

from memfuse_lite import MemFuseConfig
from memfuse_lite.embed.base import Embedder
from memfuse_lite.engine import load_default_embedder

from .common import write_result
from .engine import EF_CURVE, recall_curve
from .gen import GenConfig, generate

K = 20
CURVE = (*EF_CURVE, 512, 768)
"""ef_search values measured at each size (the engine's curve and two wider ones)."""
CHUNK = 20_000
"""Distinct texts per cached block of vectors."""


def cache_dir() -> Path:
    """Where embedded blocks are kept between runs (outside the repository)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "memfuse_lite" / "bench-ann"


def household_texts(size: int, n_queries: int) -> tuple[list[str], list[str]]:
    """The first ``size`` observation texts of the seed-11 household and its questions."""
    gen = generate(GenConfig(seed=11, size=size, questions=min(n_queries, 600)))
    texts = [str(o["text"]) for o in gen.observations[:size]]
    return texts, [str(q["text"]) for q in gen.questions][:n_queries]


def texts_in_child(size: int, n_queries: int) -> tuple[list[str], list[str]]:
    """:func:`household_texts` in a child process (generating a million observations
    leaves a large heap behind)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(household_texts, (size, n_queries))  # type: ignore[no-any-return]


def embed_distinct(embedder: Embedder, distinct: list[str]) -> np.ndarray:
    """Vectors of ``distinct`` texts (passage role), block by block from the cache."""
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    out = np.empty((len(distinct), embedder.info.dims), dtype=np.float32)
    t0, embedded = time.perf_counter(), 0
    for start in range(0, len(distinct), CHUNK):
        block = distinct[start:start + CHUNK]
        digest = hashlib.sha256("\n".join([embedder.info.model_id, *block]).encode()).hexdigest()
        path = folder / f"{digest[:24]}.npy"
        if path.exists():
            out[start:start + len(block)] = np.load(path)
            continue
        vecs = embedder.embed(block)
        np.save(path, vecs)
        out[start:start + len(block)] = vecs
        embedded += len(block)
        rate = embedded / (time.perf_counter() - t0)
        left = (len(distinct) - start - len(block)) / max(rate, 1e-9)
        print(f"  embedded {start + len(block):,} / {len(distinct):,} distinct texts "
              f"({rate:.0f}/s, about {left / 60:.0f} min left)", flush=True)
    return out


def exact_truth(vecs: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per query: the ids of the exact top K and the K-th smallest cosine distance."""
    sims = queries @ vecs.T
    top = np.argpartition(-sims, K, axis=1)[:, :K]
    kth = 1.0 - np.take_along_axis(sims, top, axis=1).min(axis=1)
    return top, kth


def index_mb(index: hnswlib.Index) -> float:
    """The index's size as hnswlib writes it (vectors, links and labels)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "index.bin"
        index.save_index(str(path))
        return round(path.stat().st_size / 1e6, 1)


def run(sizes: list[int], n_queries: int, threads: int, m: int | None = None,
        ef_construction: int | None = None, one_per_text: bool = True) -> dict[str, Any]:
    """Embed (or load) the household's texts and grow one index through ``sizes``
    (``m`` and ``ef_construction`` replace the library's defaults, to compare settings;
    ``one_per_text`` indexes each distinct text once, standing for all its records)."""
    config = MemFuseConfig(threads=threads)
    config = replace(config, index=replace(
        config.index, hnsw_m=m or config.index.hnsw_m,
        hnsw_ef_construction=ef_construction or config.index.hnsw_ef_construction))
    print(f"generating {max(sizes):,} observations", flush=True)
    texts, questions = texts_in_child(max(sizes), n_queries)
    distinct = list(dict.fromkeys(texts))
    position = {t: i for i, t in enumerate(distinct)}
    rows = np.fromiter((position[t] for t in texts), dtype=np.int64, count=len(texts))
    del texts, position
    embedder = load_default_embedder(config)
    print(f"{len(distinct):,} distinct texts of {len(rows):,}", flush=True)
    unique_vecs = embed_distinct(embedder, distinct)
    qvecs = embedder.embed(questions, role="query")
    embedder.close()
    cfg = config.index
    index = hnswlib.Index(space="cosine", dim=unique_vecs.shape[1])
    index.init_index(max_elements=max(sizes), ef_construction=cfg.hnsw_ef_construction,
                     M=cfg.hnsw_m)
    steps, done, build_s = [], 0, 0.0
    for size in sorted(sizes):
        # distinct texts are numbered in order of first appearance: the first `size`
        # observations hold texts 0 .. `points` - 1
        distinct = int(rows[:size].max()) + 1
        points = distinct if one_per_text else size
        t0 = time.perf_counter()
        for start in range(done, points, 50_000):
            stop = min(points, start + 50_000)
            vecs = unique_vecs[start:stop] if one_per_text else unique_vecs[rows[start:stop]]
            index.add_items(vecs, np.arange(start, stop), num_threads=threads)
            print(f"  indexed {stop:,}", flush=True)
        build_s += time.perf_counter() - t0
        done = points
        top, kth = exact_truth(unique_vecs[rows[:size]], qvecs)
        truths = [set(t.tolist()) for t in top]
        copies = None
        if one_per_text:  # the plain recall compares distinct texts
            truths = [set(t.tolist()) for t in exact_truth(unique_vecs[:points], qvecs)[0]]
            copies = np.bincount(rows[:size], minlength=points)
        curve = recall_curve(index, qvecs, truths, kth.tolist(), CURVE, K, copies)
        steps.append({"size": size, "distinct": distinct,
                      "build_seconds": round(build_s, 1), "index_mb": index_mb(index),
                      "curve": curve})
        best = next((p for p in curve if p["recall_ties_counted"] >= 0.98), None)
        print(f"{size:,}: built in {build_s:.0f} s; recall >= 0.98 at ef_search "
              f"{best['ef_search'] if best else '-'}; at the default "
              f"{cfg.hnsw_ef_search}: " + next(
                  (f"{p['recall_ties_counted']} ({p['ms']['p50']} / {p['ms']['p95']} ms)"
                   for p in curve if p["ef_search"] == cfg.hnsw_ef_search), "-"), flush=True)
    return {"embedder": embedder.info.model_id, "k": K, "queries": len(questions),
            "threads": threads, "m": cfg.hnsw_m, "ef_construction": cfg.hnsw_ef_construction,
            "one_per_text": one_per_text,
            "default_ef_search": cfg.hnsw_ef_search, "steps": steps}


def main(argv: list[str] | None = None) -> None:
    """Parse options, run, write bench/results/ann-e5.json."""
    parser = argparse.ArgumentParser(prog="python3 -m bench ann", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000,300000,1000000",
                        help="comma-separated observation counts (default 100k, 300k, 1M)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2,
                        help="threads for embedding and index building (queries use one)")
    parser.add_argument("--m", type=int, default=None, help="HNSW M (default: the library's)")
    parser.add_argument("--ef-construction", type=int, default=None,
                        help="HNSW ef_construction (default: the library's)")
    parser.add_argument("--point-per-record", action="store_true",
                        help="a point per record, equal texts included (default: one point "
                             "per distinct text, as the library indexes)")
    args = parser.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    if not sizes or sizes[0] <= K:
        parser.error(f"--sizes must be counts above {K}")
    command = "python3 -m bench ann " + " ".join(argv if argv is not None else [])
    result = run(sizes, args.queries, args.threads, args.m, args.ef_construction,
                 not args.point_per_record)
    suffix = "".join(f"-{k}{v}" for k, v in (("m", args.m), ("efc", args.ef_construction)) if v)
    suffix += "-per-record" if args.point_per_record else ""
    write_result(f"ann-e5{suffix}", {"command": command, **result})
