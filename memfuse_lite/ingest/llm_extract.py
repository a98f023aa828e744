"""Optional LLM refinement of extracted events (tokens counted under ``extract``).

The rule-based draft stays authoritative where the model's answer is unusable: an
unparseable time, an empty field or an error leaves the rule-based value in place.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from ..errors import LLMError
from ..event import EventRecord
from ..llm.base import LLM
from ..prompts import extract
from ..timeutil import parse_ts, to_iso

log = logging.getLogger("memfuse_lite.ingest")


class LLMExtractor:
    """Asks the local LLM for event time, actors and place; merges over the draft."""

    def __init__(self, llm: LLM, max_tokens: int = 120) -> None:
        self.llm = llm
        self.max_tokens = max_tokens

    def refine(self, draft: EventRecord) -> EventRecord:
        """The draft with the model's fields where they are usable."""
        msgs = extract.messages(draft.source, draft.user, draft.ts, draft.text)
        try:
            value, _ = self.llm.complete_json(msgs, extract.SCHEMA, max_tokens=self.max_tokens,
                                              operation="extract")
        except LLMError as exc:
            log.warning("LLM extraction failed for observation %s: %s", draft.observation_ids,
                        exc)
            return draft
        start = _iso(value.get("event_start")) or draft.event_start
        end = _iso(value.get("event_end")) or (start if start != draft.event_start
                                                else draft.event_end)
        actors = tuple(dict.fromkeys([*draft.actors, *[a.strip() for a in
                                                       value.get("actors") or []
                                                       if isinstance(a, str) and a.strip()]]))
        place = value.get("place") if isinstance(value.get("place"), str) else None
        return replace(draft, event_start=start, event_end=end, actors=actors[:8],
                       place=draft.place or (place.strip() or None if place else None))


def _iso(value: object) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return to_iso(parse_ts(value))
    except ValueError:
        return None
