"""Fuzzed input through the public API: observations, JSONL lines and queries built by
hypothesis (invalid UTF-8, NUL and control characters, huge texts, deep meta, odd
timestamps, SQL and query-syntax metacharacters, emoji, mixed scripts)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import warnings
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memfuse_lite import InvalidObservation, InvalidQuery, MemFuse, Observation
from memfuse_lite.jsonl import read_observations
from memfuse_lite.records import Rejected

NASTY = ["'; DROP TABLE observations; --", "text:foo AND (bar OR", "\"unterminated", "*?~^",
         "field:[a TO z]", "\x00", "\x1b[31m", "🦷📅", "牙医 dentist ру́сский", "\ud800", "+-!(){}",
         "<script>", "%s%n", "\u202e", "a" * 70_000, "NULL", "1e309", "0x7fffffff"]
texts = st.one_of(st.text(max_size=400), st.sampled_from(NASTY),
                  st.lists(st.sampled_from(NASTY) | st.text(max_size=20), max_size=6)
                  .map(" ".join))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8),
                                                                       children, max_size=4),
    max_leaves=40)
timestamps = st.one_of(
    st.just("2025-03-04T12:00"), st.sampled_from(["2025-03-04T12:00", "2025-03-04", "0001-01-01T00:00", "9999-12-31T23:59",
                     "2025-13-45T99:99", "yesterday", "1700000000", "", "2025-03-04T12:00+14:00",
                     "2025-03-04T12:00:00.123456Z"]),
    st.integers(min_value=-2**63, max_value=2**63), st.floats(allow_nan=True), texts, st.none())
names = st.one_of(st.sampled_from(["sms", "chat", "calendar", "ana", "ben", "photo"]),
                  st.sampled_from(["sms", "ana"]), texts)
visibilities = st.one_of(st.just("household"), st.just("private"), st.lists(names, max_size=3),
                         st.sampled_from(["household", "private", "public", ""]),
                         st.lists(texts, max_size=3), json_values)
metas = st.one_of(st.just({}), st.dictionaries(st.text(max_size=8), json_values, max_size=4),
                  json_values)


def deep(n: int) -> dict[str, Any]:
    """A meta object nested n levels."""
    out: dict[str, Any] = {}
    for _ in range(n):
        out = {"x": out}
    return out


def fuzz(mem: MemFuse, work: Path, examples: int) -> dict[str, Any]:
    """Push fuzzed observations, lines and queries through the memory; count outcomes."""
    stats = {"observations": 0, "rejected": 0, "accepted": 0, "lines": 0, "line_errors": 0,
             "queries": 0, "query_errors": 0, "crashes": 0, "crash_examples": []}
    valid: list[Observation] = []

    def crash(kind: str, exc: BaseException) -> None:
        stats["crashes"] += 1
        if len(stats["crash_examples"]) < 5:
            stats["crash_examples"].append(f"{kind}: {exc!r}"[:300])

    quick = settings(max_examples=examples, deadline=None, database=None,
                     suppress_health_check=list(HealthCheck))

    @quick
    @given(source=names, user=names, text=texts, ts=timestamps, meta=metas,
           visibility=visibilities, depth=st.integers(0, 60))
    def observations(source: Any, user: Any, text: Any, ts: Any, meta: Any, visibility: Any,
                     depth: int) -> None:
        stats["observations"] += 1
        if depth > 40:
            meta = deep(depth)
        try:
            valid.append(Observation(source=source, user=user, text=text, ts=ts, meta=meta,
                                     visibility=visibility, external_id=f"f{stats['observations']}"))
        except InvalidObservation:
            stats["rejected"] += 1
        except Exception as exc:  # noqa: BLE001 - a crash is what we count
            crash("observation", exc)

    @quick
    @given(line=st.one_of(st.binary(max_size=300), json_values.map(
        lambda v: json.dumps(v, ensure_ascii=False).encode("utf-8", "surrogatepass")),
        st.fixed_dictionaries({"source": names, "user": names, "ts": timestamps, "text": texts},
                              optional={"meta": metas, "visibility": visibilities,
                                        "extra": json_values}).map(
            lambda v: json.dumps(v, ensure_ascii=False).encode("utf-8", "surrogatepass"))))
    def lines(line: bytes) -> None:
        path = work / "fuzz.jsonl"
        path.write_bytes(line.replace(b"\n", b" ") + b"\n")
        try:
            for item in read_observations(path):
                stats["lines"] += 1
                stats["line_errors"] += isinstance(item, Rejected)
        except Exception as exc:  # noqa: BLE001
            crash("jsonl", exc)

    @quick
    @given(query=texts, pipeline=st.sampled_from(["bm25", "dense", "hybrid", "fused"]))
    def queries(query: Any, pipeline: str) -> None:
        stats["queries"] += 1
        try:
            mem.search(query, viewer="ana", pipeline=pipeline)
        except InvalidQuery:
            stats["query_errors"] += 1
        except Exception as exc:  # noqa: BLE001
            crash("query", exc)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # hypothesis warns about the 70 kB example's repr
        observations()
        lines()

    async def ingest() -> None:
        for start in range(0, len(valid), 64):
            results = await mem.ingest_many(valid[start : start + 64])
            stats["accepted"] += sum(r.status == "accepted" for r in results)
        await asyncio.wait_for(mem.flush(), timeout=600)  # the worker is alive

    try:
        asyncio.run(ingest())
    except Exception as exc:  # noqa: BLE001
        crash("ingest", exc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        queries()
    with mem.engine.store.reading() as db:
        stats["half_written"] = int(db.execute(
            "SELECT count(*) FROM observations o WHERE NOT EXISTS (SELECT 1 FROM event_sources"
            " s WHERE s.observation_id = o.id) AND NOT EXISTS (SELECT 1 FROM dead_letters d"
            " WHERE d.observation_id = o.id) AND NOT EXISTS (SELECT 1 FROM inbox i WHERE"
            " i.observation_id = o.id)").fetchone()[0])
        stats["dead_letters"] = int(db.execute("SELECT count(*) FROM dead_letters"
                                               ).fetchone()[0])
        stats["inbox_left"] = int(db.execute("SELECT count(*) FROM inbox").fetchone()[0])
    with contextlib.suppress(Exception):
        (work / "fuzz.jsonl").unlink()
    return stats
