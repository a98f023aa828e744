"""Isolation check: every question asked as every user, through every pipeline, ``show``
and ``ask``; counts anything the viewer may not see that reached them or the LLM.

The LLM here is a fake at the model boundary (``FakeRecordingLLM``): it answers with
schema-valid JSON and keeps every prompt, so a private record's text reaching the model
is caught verbatim.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memfuse_lite import MemFuse, NotFound
from memfuse_lite.llm.base import LLM, Completion, Message, Usage
from memfuse_lite.records import can_see
from memfuse_lite.timeutil import parse_ts

PIPELINES = ("dense", "bm25", "hybrid", "fused", "agentic")
RECORDER_CONFIG = {"answer_llm": "fake-recorder", "summary_llm": "fake-recorder",
                   "plan_llm": "fake-recorder"}
"""MemFuseConfig fields that route every LLM task through the recorder."""


class FakeRecordingLLM(LLM):
    """Fake LLM: returns the smallest JSON its schema allows and records every prompt."""

    model_id = "fake-recorder"
    n_ctx = 4096

    def __init__(self) -> None:
        super().__init__()
        self.prompts: list[str] = []

    def _complete(self, messages: Sequence[Message], *, max_tokens: int,
                  schema: Mapping[str, Any] | None, temperature: float) -> Completion:
        self.prompts.append("\n".join(m["content"] for m in messages))
        value: dict[str, Any] = {}
        for key, spec in ((schema or {}).get("properties") or {}).items():
            kind = spec.get("type")
            if isinstance(kind, list):  # ["string", "null"]: take the first
                kind = kind[0]
            value[key] = {"string": "", "array": [], "boolean": False, "integer": 0,
                          "number": 0.0, "object": {}}.get(kind)
        return Completion(json.dumps(value), Usage(1, 1, 1), 0.0)


def recorder_llms() -> dict[str, LLM]:
    """The ``llms=`` to open a memory with for :func:`check` (with ``RECORDER_CONFIG``)."""
    return {FakeRecordingLLM.model_id: FakeRecordingLLM()}


@dataclass
class LeakReport:
    """Searches, asks and shows run, and what leaked (every count must stay 0)."""

    searches: int = 0
    asks: int = 0
    shows: int = 0
    hit_leaks: int = 0
    fused_leaks: int = 0
    show_leaks: int = 0
    prompt_leaks: int = 0
    examples: list[str] = field(default_factory=list)

    @property
    def leaks(self) -> int:
        """All leaks."""
        return self.hit_leaks + self.fused_leaks + self.show_leaks + self.prompt_leaks


def private_texts(mem: MemFuse) -> list[tuple[str, tuple[str, ...]]]:
    """(text, audience) of every event not visible to the whole household."""
    with mem.engine.store.reading() as db:
        rows = db.execute("SELECT text, audience FROM events WHERE audience IS NOT NULL"
                          ).fetchall()
    return [(t, tuple(json.loads(a))) for t, a in rows if len(t) >= 20]


def check(mem: MemFuse, questions: Iterable[dict[str, Any]], users: Sequence[str],
          pipelines: Sequence[str] = PIPELINES, ask: bool = True) -> LeakReport:
    """Run every question as every user; count leaks."""
    report = LeakReport()
    secrets = private_texts(mem)
    with mem.engine.store.reading() as db:
        rows = db.execute("SELECT text, audience FROM events").fetchall()
    hidden_from = {}
    for viewer in users:
        seen = {t for t, a in rows if a is None or viewer in json.loads(a)}
        hidden_from[viewer] = [t for t, aud in secrets if viewer not in aud and t not in seen]
    recorder = FakeRecordingLLM()
    if ask:
        given = mem.engine.llms.optional(mem.config.answer_llm)
        if mem.config.answer_llm != recorder.model_id or not isinstance(given,
                                                                         FakeRecordingLLM):
            raise ValueError(f"open the memory with config fields {RECORDER_CONFIG} and "
                             "llms=recorder_llms() to check the LLM's input")
        recorder = given

    def leak(kind: str, what: str) -> None:
        setattr(report, kind, getattr(report, kind) + 1)
        if len(report.examples) < 10:
            report.examples.append(what)

    for q in questions:
        now = parse_ts(q["now"]) if q.get("now") else None
        for viewer in users:
            hidden = hidden_from[viewer]
            for pipeline in pipelines:
                result = mem.search(q["text"], viewer=viewer, now=now, pipeline=pipeline)
                report.searches += 1
                for hit in result.hits:
                    event = mem.engine.store.get_events([hit.event_id])[hit.event_id]
                    if not can_see(viewer, event.audience):
                        leak("hit_leaks", f"{viewer} saw event {hit.event_id} via {pipeline}")
                for fused in result.fused:
                    if any(t in fused.summary for t in hidden):
                        leak("fused_leaks", f"{viewer} saw fused {fused.id} summary: "
                             f"{next(t for t in hidden if t in fused.summary)}")
                for fid in {h.fused_id for h in result.hits if h.fused_id is not None}:
                    report.shows += 1
                    try:
                        _, members, _ = mem.timeline(fid, viewer=viewer)
                    except NotFound:
                        continue
                    if any(not can_see(viewer, e.audience) for e in members):
                        leak("show_leaks", f"{viewer} was shown a member of fused {fid}")
            if ask:
                asyncio.run(mem.ask(q["text"], viewer=viewer, now=now))
                report.asks += 1
            if ask:  # searches above also prompted the planner and the summariser
                for prompt in recorder.prompts:
                    if any(t[:140] in prompt for t in hidden):
                        leak("prompt_leaks", f"the LLM got another user's text for {viewer}: "
                             f"{next(t for t in hidden if t[:140] in prompt)}")
                recorder.prompts.clear()
    return report
