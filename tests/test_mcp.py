"""The MCP server end to end: the SDK's own client talks to ``memfuse mcp`` over stdio in
a subprocess; the viewer is fixed by the server's arguments."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from memfuse_lite import MemFuse, MemFuseConfig

from .scenarios import DENTIST, observations

pytest.importorskip("mcp")


async def _session(db: Path, viewer: str, model_dir: Path, calls: Any) -> Any:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "memfuse_lite.cli", "mcp", "--db", str(db), "--viewer", viewer,
        "--model-dir", str(model_dir)])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await calls(session)


def _json(result: Any) -> Any:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


def test_tools_over_stdio(tmp_path: Path, model_dir: Path, embedder) -> None:
    db = tmp_path / "mem"

    async def seed() -> int:
        async with MemFuse(db, config=MemFuseConfig(model_dir=model_dir),
                           embedder=embedder) as mem:
            obs = observations(DENTIST)
            results = await mem.ingest_many(obs)
            await mem.flush()
        return next(r.observation_id for o, r in zip(obs, results, strict=True)
                    if o.user == "ben")

    bens = asyncio.run(seed())

    async def as_ana(s: Any) -> dict[str, Any]:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        out: dict[str, Any] = {"tools": tools}
        out["remember"] = _json(await s.call_tool("remember", arguments={
            "text": "Ben's private surprise: tickets for the opera on 2025-03-21",
            "visibility": "private", "ts": "2025-03-05T10:00"}))
        out["search"] = _json(await s.call_tool("search", arguments={
            "query": "when is the dentist", "k": 5, "now": "2025-03-09T20:00"}))
        out["ask"] = _json(await s.call_tool("ask", arguments={
            "question": "When is the dentist appointment?", "now": "2025-03-09T20:00"}))
        first = out["search"]["hits"][0]["event_id"]
        out["show"] = _json(await s.call_tool("show", arguments={"id": f"event:{first}"}))
        out["bad"] = await s.call_tool("show", arguments={"id": "event:999999"})
        out["forget_other"] = await s.call_tool("forget",
                                                arguments={"observation_ids": [bens]})
        return out

    ana = asyncio.run(_session(db, "ana", model_dir, as_ana))
    assert set(ana["tools"]) == {"remember", "search", "ask", "show", "forget"}
    assert "viewer" not in json.dumps(ana["tools"]["search"].input_schema)
    assert ana["remember"]["status"] == "accepted" and ana["remember"]["event_ids"]
    assert any("Thursday" in h["text"] for h in ana["search"]["hits"])
    assert all(h["provenance"] for h in ana["search"]["hits"])
    assert ana["ask"]["citations"] and ana["ask"]["mode"] == "extractive"
    assert ana["show"]["events"][0]["provenance"]
    assert ana["bad"].is_error and "NotFound" in ana["bad"].content[0].text
    assert ana["forget_other"].is_error  # ben's record is not ana's to forget

    secret = ana["remember"]["observation_id"]

    async def as_ben(s: Any) -> dict[str, Any]:
        found = _json(await s.call_tool("search", arguments={"query": "opera tickets"}))
        hidden = await s.call_tool("show", arguments={"id": f"obs:{secret}"})
        return {"found": found, "hidden": hidden}

    ben = asyncio.run(_session(db, "ben", model_dir, as_ben))
    assert all("opera" not in h["text"] for h in ben["found"]["hits"])
    assert ben["hidden"].is_error

    async def ana_forgets(s: Any) -> dict[str, Any]:
        return _json(await s.call_tool("forget", arguments={"observation_ids": [secret]}))

    assert asyncio.run(_session(db, "ana", model_dir, ana_forgets))["observations"] == 1
