"""What forgetting costs: one record, and a whole source, at 10k and 100k observations,
with the index files written again so nothing forgotten stays in them (the default)
beside the old way (hidden from searches only: ``IndexConfig(erase_on_forget=False)``),
each on its own copy of one memory, in one run.

    python3 -m bench forget [--sizes 10000,100000] [--records 5] [--keep DIR]

The memory is the generated household at each size, with the hashing embedder (384-d
vectors: the index costs what e5's do, without a day of embedding). Goal: forgetting one
record at 100k takes at most 2 s (p50).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from memfuse_lite import MemFuse, MemFuseConfig
from memfuse_lite.config import IndexConfig

from .common import HashingEmbedder, write_result
from .engine import ingest_file, prepare_workload

GOAL_ONE_S = 2.0
CONFIG = MemFuseConfig(tz="UTC")


def build(root: Path, size: int) -> Path:
    """The household memory of ``size`` observations under ``root`` (kept between runs)."""
    path = root / f"household-{size}"
    if (path / "memfuse.db").exists():
        return path
    workload = root / f"household-{size}.jsonl"
    prepare_workload(workload, "generated", size, 1)

    async def fill() -> None:
        async with MemFuse(path, config=CONFIG, embedder=HashingEmbedder()) as mem:
            await ingest_file(mem, workload)

    asyncio.run(fill())
    return path


def measure(memory: Path, erase: bool, records: int, seed: int) -> dict[str, Any]:
    """Seconds to forget ``records`` single observations, then the smallest source whole,
    on a copy of ``memory``."""
    config = replace(CONFIG, index=IndexConfig(erase_on_forget=erase))
    with tempfile.TemporaryDirectory(prefix="forget-") as tmp:
        copy = Path(tmp) / "m"
        shutil.copytree(memory, copy, ignore=shutil.ignore_patterns("readers"))
        with MemFuse(copy, config=config, embedder=HashingEmbedder()) as mem:
            store = mem.engine.store
            with store.reading() as db:
                ids = [int(r[0]) for r in db.execute("SELECT id FROM observations")]
                sources = db.execute("SELECT source, count(*) FROM observations GROUP BY 1"
                                     " ORDER BY 2").fetchall()
            one: list[float] = []
            for oid in random.Random(seed).sample(ids, records):
                t0 = time.perf_counter()
                mem.forget(observation=oid)
                one.append(time.perf_counter() - t0)
            source, count = str(sources[0][0]), int(sources[0][1])
            t0 = time.perf_counter()
            result = mem.forget(source=source)
            whole = time.perf_counter() - t0
    return {"one_record_s": [round(x, 3) for x in one],
            "one_record_p50_s": round(statistics.median(one), 3),
            "source": source, "source_observations": count,
            "source_s": round(whole, 3), "source_compacted": result.dense_compacted}


def main(argv: list[str] | None = None) -> None:
    """Measure, print beside the goal and write bench/results/forget.json."""
    ap = argparse.ArgumentParser(prog="python3 -m bench forget", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--records", type=int, default=5, help="single forgets per size")
    ap.add_argument("--keep", type=Path, help="keep the built memories here")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-forget-"))
    root.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    try:
        for size in sizes:
            memory = build(root, size)
            for erase in (True, False):
                row = {"size": size, "erase": erase,
                       **measure(memory, erase, args.records, seed=size)}
                rows.append(row)
                print(f"{size:>7,} erase={'on ' if erase else 'off'} one record p50 "
                      f"{row['one_record_p50_s']:.3f} s (goal <= {GOAL_ONE_S} s at 100k); "
                      f"source {row['source']} ({row['source_observations']:,} obs) "
                      f"{row['source_s']:.2f} s", flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    write_result("forget", {"command": "python3 -m bench forget " + " ".join(argv or []),
                            "goal_one_record_s": GOAL_ONE_S, "rows": rows})


if __name__ == "__main__":
    main()
