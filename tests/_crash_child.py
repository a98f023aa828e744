"""Run by test_ingest: ingest forever, printing each acknowledged external id, until killed."""

from __future__ import annotations

import asyncio
import sys

from memfuse_lite import MemFuse, MemFuseConfig, Observation
from memfuse_lite.config import IngestConfig


async def main(db: str, start: int) -> None:
    config = MemFuseConfig(ingest=IngestConfig(batch_size=8, batch_latency_s=0.005))
    mem = MemFuse(db, config=config)
    n = start
    while True:
        batch = [
            Observation(source="sms", user="ana", ts=f"2025-01-01T{(i // 60) % 24:02d}:{i % 60:02d}",
                        text=f"message number {i} about errand {i % 17}", external_id=f"m{i}")
            for i in range(n, n + 3)
        ]
        await mem.ingest_many(batch)
        for o in batch:
            print(o.external_id, flush=True)
        n += 3
        await asyncio.sleep(0)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
