"""The asyncio half of ingestion: a bounded queue feeding one batching worker.

Observations are already durable (in the SQLite inbox) when they are queued; the
worker cuts batches at ``batch_size`` or ``batch_latency_s`` and runs the blocking
processor in threads, so the event loop stays free for producers and searches: while one
batch commits (fusion, indexes), the next one is prepared (extraction, embedding).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Generic, TypeVar

from ..config import IngestConfig
from ..errors import MemFuseError

log = logging.getLogger("memfuse_lite.ingest")

Batch = TypeVar("Batch")


class IngestQueue(Generic[Batch]):
    """Bounded queue + one worker task bound to the running event loop."""

    def __init__(self, prepare: Callable[[Sequence[int]], Batch],
                 commit: Callable[[Batch], int], cfg: IngestConfig,
                 executors: tuple[Executor, Executor] | None = None) -> None:
        """``prepare`` (ids → a batch, no writes) may run while ``commit`` writes the
        previous batch; commits run one at a time, in order. ``executors`` run prepare and
        commit (default: the event loop's default executor)."""
        self._prepare = prepare
        self._commit = commit
        self._preparer: Executor | None = executors[0] if executors else None
        self._committer: Executor | None = executors[1] if executors else None
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
        loop = asyncio.get_running_loop()
        committing: tuple[asyncio.Future[int], list[int]] | None = None
        while True:
            if committing is not None and self._queue.empty():
                await self._settle(*committing)  # nothing to prepare meanwhile
                committing = None
            ids = await self._next_batch()
            try:
                batch = await loop.run_in_executor(self._preparer, self._prepare, ids)
            except Exception as exc:  # keep the worker alive; the rows stay in the inbox
                if committing is not None:
                    await self._settle(*committing)
                    committing = None
                self._failed(ids, exc)
                continue
            if committing is not None:
                await self._settle(*committing)
            committing = (loop.run_in_executor(self._committer, self._commit, batch), ids)

    async def _settle(self, commit: asyncio.Future[int], ids: list[int]) -> None:
        """Wait for a batch's commit and mark its ids done."""
        try:
            await commit
        except Exception as exc:
            self._failed(ids, exc)
        else:
            for _ in ids:
                self._queue.task_done()

    def _failed(self, ids: list[int], exc: BaseException) -> None:
        log.error("ingest batch of %d failed: %r", len(ids), exc)
        self._error = exc
        for _ in ids:
            self._queue.task_done()

    async def close(self) -> None:
        """Stop the worker (call :meth:`join` first to drain)."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
