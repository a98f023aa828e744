"""The public JSONL formats: observations in, queries in, results out."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .errors import InvalidObservation, InvalidQuery
from .records import Observation, SearchResult
from .timeutil import parse_ts


@dataclass(frozen=True, slots=True)
class LineError:
    """A rejected input line and why."""

    path: str
    line: int
    reason: str


def read_observations(path: Path) -> Iterator[Observation | LineError]:
    """Each line as an Observation, or a LineError saying why it was rejected."""
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw.decode("utf-8"))
                yield Observation.from_json(obj)
            except UnicodeDecodeError:
                yield LineError(str(path), number, "line is not valid UTF-8")
            except (ValueError, RecursionError) as exc:
                yield LineError(str(path), number, f"not JSON: {str(exc)[:120]}")
            except InvalidObservation as exc:
                yield LineError(str(path), number, str(exc))


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
