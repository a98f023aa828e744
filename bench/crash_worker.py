"""Child process of the crash harness: ingest a generated household from an offset,
forgetting an acknowledged record now and then, printing what was acknowledged, until
killed. ``python3 -m bench.crash_worker DB START SEED DURABILITY``"""

from __future__ import annotations

import asyncio
import random
import sys

from memfuse_lite import MemFuse, MemFuseConfig, Observation
from memfuse_lite.config import IngestConfig

from .common import HashingEmbedder
from .gen import GenConfig, generate

CORPUS = GenConfig(seed=11, size=4000, questions=10)


def corpus() -> list[Observation]:
    """The observations every crash run draws from (deterministic)."""
    return [Observation.from_json(o) for o in generate(CORPUS).observations]


async def main(db: str, start: int, seed: int, durability: str) -> None:
    items = corpus()
    rng = random.Random(seed)
    config = MemFuseConfig(durability=durability,
                           ingest=IngestConfig(batch_size=rng.choice([4, 16, 32]),
                                               batch_latency_s=0.002))
    mem = MemFuse(db, config=config, embedder=HashingEmbedder())
    print("ready", flush=True)
    acked: list[tuple[int, str]] = []
    i = start
    while i < len(items):
        batch = items[i : i + 8]
        results = await mem.ingest_many(batch)
        pairs = [(r.observation_id, o.external_id) for r, o in zip(results, batch, strict=True)]
        print("ack", *(ext for _, ext in pairs), flush=True)
        acked += [p for p, r in zip(pairs, results, strict=True) if r.status == "accepted"]
        i += len(batch)
        if acked and rng.random() < 0.1:
            oid, ext = acked.pop(rng.randrange(len(acked)))
            print("forgetting", ext, flush=True)  # from here on, either outcome is right
            await asyncio.to_thread(mem.forget, observation=oid)
            print("forget", ext, flush=True)
        await asyncio.sleep(rng.random() * 0.005)
    await mem.flush()
    print("done", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]))
