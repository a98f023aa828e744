"""The memory as a Model Context Protocol server (stdio), for assistants that speak MCP.

Tools: ``remember`` (store one observation), ``search``, ``ask``, ``show`` (an event or a
fused memory with its source trail) and ``forget``. The viewer is fixed when the server
starts (``memfuse mcp --viewer U``) and never taken from a tool call, so every tool sees
exactly what that user may see, and ``forget`` deletes only that user's own records.
Needs the ``mcp`` extra (the official SDK).
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any, Literal

from .clock import zone_of
from .errors import MemFuseError
from .jsonl import answer_json, event_json, timeline_json
from .memory import MemFuse, parse_ref
from .records import Observation
from .retrieve.registry import PIPELINES
from .timeutil import parse_ts

INSTRUCTIONS = ("Personal memory of {viewer}: records from their apps and their household's, "
                "fused into episodes. Use `search` or `ask` before answering questions about "
                "their life; cite the returned source records. `remember` stores something "
                "they tell you; `forget` deletes their own records.")


def build_server(mem: MemFuse, viewer: str) -> Any:
    """An ``MCPServer`` whose tools read and write ``mem`` as ``viewer``."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    app = MCPServer("memfuse", instructions=INSTRUCTIONS.format(viewer=viewer))

    def fail(exc: Exception) -> ToolError:
        return ToolError(f"{type(exc).__name__}: {exc}")

    def when(value: str | None) -> datetime | None:
        try:
            return parse_ts(value) if value else None
        except ValueError as exc:
            raise fail(exc) from exc

    @app.tool()
    async def remember(text: str, source: str = "assistant", ts: str | None = None,
                       visibility: Literal["household", "private"] = "household",
                       meta: dict[str, Any] | None = None) -> dict[str, Any]:
        """Store one observation of the user's (what they told you, a note, a plan).
        ``ts``: when it was recorded (ISO 8601; default now). Returns its id and events."""
        try:
            obs = Observation(source=source, user=viewer, ts=when(ts) or datetime.now(
                              zone_of(mem.tz)).replace(microsecond=0), text=text,
                              meta=meta or {}, visibility=visibility)
            result = await mem.ingest(obs)
            await mem.flush()
        except MemFuseError as exc:
            raise fail(exc) from exc
        return {"status": result.status, "observation_id": result.observation_id,
                "event_ids": mem.events_of_observation(result.observation_id)}

    @app.tool()
    async def search(query: str, k: int = 10, pipeline: str = "fused",
                     now: str | None = None) -> dict[str, Any]:
        """Events from memory that match ``query``, best first, each with its source
        records. ``pipeline``: fused (default), hybrid, bm25, dense or agentic; ``now``:
        when the question is asked (ISO 8601), so later records are left out."""
        if pipeline not in PIPELINES:
            raise fail(ValueError(f"pipeline must be one of {', '.join(PIPELINES)}"))
        try:
            res = await asyncio.to_thread(mem.search, query, viewer=viewer, k=k,
                                          now=when(now), pipeline=pipeline)
        except MemFuseError as exc:
            raise fail(exc) from exc
        return {"hits": [h.to_json() for h in res.hits],
                "fused": [{"fused_id": f.id, "summary": f.summary, "start": f.start,
                           "end": f.end, "member_ids": list(f.member_ids)} for f in res.fused]}

    @app.tool()
    async def ask(question: str, now: str | None = None) -> dict[str, Any]:
        """An answer from memory with citations to the exact source records (an
        "I don't know" answer when nothing in memory supports one)."""
        try:
            answer = await mem.ask(question, viewer=viewer, now=when(now))
        except MemFuseError as exc:
            raise fail(exc) from exc
        return answer_json(answer)

    @app.tool()
    async def show(id: str) -> dict[str, Any]:
        """One record with its source trail: ``event:ID`` (or a bare ID), ``obs:ID`` (the
        events of an observation) or ``fused:ID`` (a fused memory as a timeline)."""
        try:
            kind, ident = parse_ref(id)
            if kind == "fused":
                return timeline_json(*mem.timeline(ident, viewer=viewer))
            return {"events": [event_json(ev, mem.fused_of(ev.id))
                               for ev in mem.events_of_ref(kind, ident, viewer=viewer)]}
        except MemFuseError as exc:
            raise fail(exc) from exc

    @app.tool()
    async def forget(observation_ids: list[int] | None = None, source: str | None = None,
                     before: str | None = None) -> dict[str, Any]:
        """Delete the user's own observations (by id, by app, or recorded before a time)
        and everything derived from them. Records of other users are never touched."""
        if not observation_ids and source is None and before is None:
            raise fail(ValueError("give observation_ids, source or before"))
        try:
            result = await asyncio.to_thread(
                mem.forget_own, viewer=viewer, observation=observation_ids or None,
                source=source, before=when(before))
        except MemFuseError as exc:
            raise fail(exc) from exc
        return {"observations": result.observations, "events": result.events,
                "fused_removed": result.fused_removed, "fused_updated": result.fused_updated}

    return app


async def serve(mem: MemFuse, viewer: str) -> None:
    """Serve ``mem`` over stdio until the client closes the connection."""
    await build_server(mem, viewer).run_stdio_async()
