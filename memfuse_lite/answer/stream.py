"""An answer streamed while the model writes it (``MemFuse.ask_stream``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from ..errors import MemFuseError
from .compose import Answer

Start = Callable[[Callable[[str], None]], Answer]
"""Runs one ``ask`` in a worker thread, passing the model's answer text to its argument
piece by piece; returns the checked answer."""


class AnswerStream:
    """An async iterator of the model's answer text as it is written; once exhausted,
    :attr:`answer` holds the checked :class:`Answer`.

    The pieces are the model's words before the support check: when the check does not keep
    them (``answer.mode == "fallback"``; ``answer.rejected`` says why), ``answer.text`` is the
    extractive answer that stands instead. Without a model, or when the model wrote no
    answer text, the one piece is ``answer.text``."""

    def __init__(self, start: Start) -> None:
        self._start = start
        self._answer: Answer | None = None
        self._used = False

    @property
    def answer(self) -> Answer:
        """The checked answer (after iterating)."""
        if self._answer is None:
            raise MemFuseError("the answer is known once the stream has been read to its end")
        return self._answer

    def __aiter__(self) -> AsyncIterator[str]:
        if self._used:
            raise MemFuseError("an answer stream can be read once")
        self._used = True
        return self._pieces()

    async def _pieces(self) -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | None] = asyncio.Queue()

        def push(piece: str) -> None:
            if piece:
                loop.call_soon_threadsafe(queue.put_nowait, piece)

        task = asyncio.ensure_future(asyncio.to_thread(self._start, push))
        # the thread's pieces are queued before its result: this end marker comes last
        task.add_done_callback(lambda _: queue.put_nowait(None))
        streamed = False
        try:
            while (piece := await queue.get()) is not None:
                streamed = True
                yield piece
        finally:
            if not task.done():  # the reader stopped early: let the answer finish
                await asyncio.wait([task])
        self._answer = await task
        if not streamed:
            yield self._answer.text

    async def text(self) -> str:
        """Read the stream to its end; the checked answer's text."""
        async for _ in self:
            pass
        return self.answer.text
