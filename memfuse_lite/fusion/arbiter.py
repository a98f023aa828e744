"""LLM arbitration of ambiguous fusion decisions (tokens counted under ``fuse``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..errors import LLMError
from ..llm.base import LLM
from ..prompts import fuse
from .model import EventView

log = logging.getLogger("memfuse_lite.fusion")


def _meta(e: EventView) -> str:
    when = e.local(e.when).strftime("%Y-%m-%d %H:%M")
    return f"{e.source}, {e.user}, {when}"


class LLMArbiter:
    """Asks the local LLM whether a new event belongs with its best candidates."""

    def __init__(self, llm: LLM, max_tokens: int = 12) -> None:
        self.llm = llm
        self.max_tokens = max_tokens

    def __call__(self, event: EventView, peers: Sequence[EventView]) -> bool:
        msgs = fuse.messages(event.text, _meta(event), [(p.text, _meta(p)) for p in peers])
        try:
            value, _ = self.llm.complete_json(msgs, fuse.SCHEMA, max_tokens=self.max_tokens,
                                              operation="fuse")
        except LLMError as exc:  # an unusable answer is "not the same": start a new memory
            log.warning("fusion arbitration failed: %s", exc)
            return False
        return bool(value.get("same_episode"))
