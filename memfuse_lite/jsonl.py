"""The public JSONL formats: observations in, queries in, results out."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .answer import Answer
from .errors import InvalidObservation, InvalidQuery
from .records import AtomicEvent, Edge, FusedMemory, Observation, Rejected, SearchResult
from .timeutil import parse_ts


def read_observations(path: Path) -> Iterator[Observation | Rejected]:
    """Each line as an Observation, or a Rejected saying why it was rejected."""
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw.decode("utf-8"))
                yield Observation.from_json(obj)
            except UnicodeDecodeError:
                yield Rejected(str(path), str(number), "line is not valid UTF-8")
            except (ValueError, RecursionError) as exc:
                yield Rejected(str(path), str(number), f"not JSON: {str(exc)[:120]}")
            except InvalidObservation as exc:
                yield Rejected(str(path), str(number), str(exc))


@dataclass(frozen=True, slots=True)
class Query:
    """One line of a query file: ``{"id", "text", "viewer", "now"}``."""

    id: str
    text: str
    viewer: str
    now: datetime | None


def read_queries(path: Path) -> Iterator[Query]:
    """Queries from a JSONL file; a malformed line raises InvalidQuery naming the line."""
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                if not isinstance(obj, dict):
                    raise ValueError("not an object")
                now = parse_ts(obj["now"]) if obj.get("now") else None
                yield Query(str(obj["id"]), str(obj["text"]), str(obj["viewer"]), now)
            except (ValueError, KeyError, TypeError) as exc:
                raise InvalidQuery(f"{path}:{number}: bad query line ({exc})") from exc


def result_line(query_id: str, result: SearchResult) -> dict[str, Any]:
    """One output line of ``memfuse search --queries``."""
    return {
        "id": query_id,
        "hits": [h.to_json() for h in result.hits],
        "latency_ms": round(result.latency_ms, 3),
    }


def answer_json(answer: Answer) -> dict[str, Any]:
    """An answer with its citations and evidence (``memfuse ask --json``, MCP ``ask``)."""
    return {"question": answer.question, "answer": answer.text, "known": answer.known,
            "mode": answer.mode, "choice": answer.choice,
            "rejected": None if answer.rejected is None else {
                "answer": answer.rejected.text, "reason": answer.rejected.reason,
                "choice": answer.rejected.choice},
            "citations": [{"event_id": c.event_id,
                           "provenance": [p.to_json() for p in c.provenance]}
                          for c in answer.citations],
            "evidence": [h.to_json() for h in answer.evidence],
            "rounds": answer.rounds, "pipeline": answer.pipeline,
            "tokens": {"prompt": answer.usage.prompt_tokens,
                       "completion": answer.usage.completion_tokens},
            "latency_ms": round(answer.latency_ms, 1)}


def event_json(ev: AtomicEvent, fused_id: int | None) -> dict[str, Any]:
    """One event with its source trail (``memfuse show --json``, MCP ``show``)."""
    return {"event_id": ev.id, "text": ev.text, "user": ev.user, "source": ev.source,
            "ts": ev.ts, "event_start": ev.event_start, "event_end": ev.event_end,
            "actors": list(ev.actors), "place": ev.place, "fused_id": fused_id,
            "visibility": list(ev.audience) if ev.audience else "household",
            "provenance": [p.to_json() for p in ev.provenance]}


def timeline_json(fused: FusedMemory, members: Sequence[AtomicEvent],
                  edges: Sequence[Edge]) -> dict[str, Any]:
    """A fused memory, its members in time order and the edges among them."""
    return {"fused_id": fused.id, "summary": fused.summary, "start": fused.start,
            "end": fused.end, "participants": list(fused.participants),
            "sources": list(fused.sources), "users": list(fused.users),
            "members": [{"event_id": m.id, "text": m.text, "source": m.source,
                         "user": m.user, "ts": m.ts, "event_start": m.event_start,
                         "provenance": [p.to_json() for p in m.provenance]}
                        for m in members],
            "edges": [{"kind": e.kind, "src": e.src, "dst": e.dst, "weight": e.weight,
                       "reason": e.reason} for e in edges]}
