"""The asyncio half of ingestion: a bounded queue feeding one batching worker.

Observations are already durable (in the SQLite inbox) when they are queued; the
worker cuts batches at ``batch_size`` or ``batch_latency_s`` and runs the blocking
processor in a thread, so the event loop stays free for producers and searches.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence

from ..config import IngestConfig
from ..errors import MemFuseError

log = logging.getLogger("memfuse_lite.ingest")


class IngestQueue:
    """Bounded queue + one worker task bound to the running event loop."""

    def __init__(self, process: Callable[[Sequence[int]], int], cfg: IngestConfig) -> None:
        self._process = process
        self._cfg = cfg
        self._queue: asyncio.Queue[int] = asyncio.Queue(cfg.queue_size)
        self._task = asyncio.get_running_loop().create_task(self._run(), name="memfuse-ingest")
        self.loop = asyncio.get_running_loop()
        self._error: BaseException | None = None

    async def put(self, ids: Sequence[int]) -> None:
        """Queue ids (waits while the queue is full: back-pressure on producers)."""
        for i in ids:
            await self._queue.put(i)

    async def join(self) -> None:
        """Wait until every queued id has been processed; re-raise a worker failure."""
        await self._queue.join()
        if self._error is not None:
            err, self._error = self._error, None
            raise MemFuseError(
                f"a batch could not be processed ({err!r}); its observations stay in the "
                "inbox and are retried when the memory is reopened"
            ) from err

    async def _next_batch(self) -> list[int]:
        batch = [await self._queue.get()]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._cfg.batch_latency_s
        while len(batch) < self._cfg.batch_size:
            if not self._queue.empty():
                batch.append(self._queue.get_nowait())
                continue
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            try:
                batch.append(await asyncio.wait_for(self._queue.get(), remaining))
            except TimeoutError:
                break
        return batch

    async def _run(self) -> None:
        while True:
            batch = await self._next_batch()
            try:
                await asyncio.to_thread(self._process, batch)
            except Exception as exc:  # keep the worker alive; the rows stay in the inbox
                log.error("ingest batch of %d failed: %r", len(batch), exc)
                self._error = exc
            finally:
                for _ in batch:
                    self._queue.task_done()

    async def close(self) -> None:
        """Stop the worker (call :meth:`join` first to drain)."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
