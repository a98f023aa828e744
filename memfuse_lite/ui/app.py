"""The inspector's web application: one HTML page, its script and style sheet, and a JSON
API the page calls with the token (header ``X-Memfuse-Token``). Every answer is what the
viewer may see: the same per-viewer reads as the library's own (``MemFuse.search``,
``timeline``, ``timeline_page``, ``counts``), never a raw table."""

from __future__ import annotations

import asyncio
import hmac
import secrets
import socket
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..clock import zone_of
from ..errors import InvalidQuery, MemFuseError, MemoryInUse, NotFound
from ..jsonl import answer_json, event_json, timeline_json
from ..memory import MemFuse
from ..retrieve.registry import PIPELINES
from ..timeutil import parse_ts

STATIC = Path(__file__).parent / "static"
TOKEN_HEADER = "x-memfuse-token"
PAGE_SIZE = 20
"""Timeline cards per page."""
HIDDEN_EDGES = ("member_of",)
"""Edge kinds the page does not draw (membership is the memory itself)."""

Handler = Callable[[Request], Awaitable[Any]]


def build_app(mem: MemFuse, viewer: str, token: str) -> Starlette:
    """The inspector of ``mem`` as ``viewer``; every request but the script and style sheet
    must carry ``token`` (the page's URL, then the header its script sends)."""

    def api(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            if not hmac.compare_digest(request.headers.get(TOKEN_HEADER, ""), token):
                return JSONResponse({"error": "missing or wrong token"}, status_code=403)
            try:
                return JSONResponse(await handler(request))
            except NotFound as exc:
                return JSONResponse({"error": str(exc)}, status_code=404)
            except MemoryInUse as exc:
                return JSONResponse({"error": str(exc)}, status_code=409)
            except (InvalidQuery, ValueError, KeyError, TypeError) as exc:
                return JSONResponse({"error": f"bad request: {exc}"}, status_code=400)
            except MemFuseError as exc:
                return JSONResponse({"error": f"{type(exc).__name__}: {exc}"},
                                    status_code=500)
        return endpoint

    async def index(request: Request) -> Response:
        if not hmac.compare_digest(request.query_params.get("token", ""), token):
            return PlainTextResponse("open the address `memfuse ui` printed (it holds the "
                                     "token)", status_code=403)
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    async def stats(request: Request) -> dict[str, Any]:
        s = await asyncio.to_thread(mem.stats)
        counts = await asyncio.to_thread(mem.counts, viewer=viewer)
        return {"viewer": viewer, "role": s["role"], "time_zone": s["time_zone"],
                "embedder": s["embedder"], "queued": s["inbox"],
                "failed": s["dead_letters"],
                "indexes": {"dense": s["dense_index"], "text": s["sparse_index"]},
                "records": [{"source": src, "user": user, "events": n}
                            for src, user, n in counts]}

    async def search(request: Request) -> dict[str, Any]:
        q = request.query_params
        query = q.get("q", "").strip()
        pipeline = q.get("pipeline", "fused")
        if not query:
            raise ValueError("give a query (q)")
        if pipeline not in PIPELINES:
            raise ValueError(f"pipeline must be one of {', '.join(PIPELINES)}")
        res = await asyncio.to_thread(mem.search, query, viewer=viewer,
                                      k=min(int(q.get("k", "10")), 50), pipeline=pipeline)
        return {"hits": [h.to_json() for h in res.hits],
                "latency_ms": round(res.latency_ms, 1)}

    async def ask(request: Request) -> dict[str, Any]:
        body = await request.json()
        question = str(body.get("question", "")).strip()
        if not question:
            raise ValueError("give a question")
        return answer_json(await mem.ask(question, viewer=viewer))

    async def timeline(request: Request) -> dict[str, Any]:
        before = _cursor(request.query_params.get("before"), mem.tz)
        cards, after = await asyncio.to_thread(mem.timeline_page, viewer=viewer,
                                               before=before, size=PAGE_SIZE)
        return {"cards": await asyncio.to_thread(
                    lambda: [_card(mem, viewer, c.fused_id, c.event_id, c.epoch)
                             for c in cards]),
                "next": None if after is None else f"{after[0]!r}:{after[1]}"}

    async def fused(request: Request) -> dict[str, Any]:
        return await asyncio.to_thread(_fused_view, mem, viewer,
                                       int(request.path_params["fused_id"]))

    async def event(request: Request) -> dict[str, Any]:
        eid = int(request.path_params["event_id"])

        def view() -> dict[str, Any]:
            ev = mem.get_event(eid, viewer=viewer)
            out = event_json(ev, mem.fused_of(eid))
            out["links"] = _links(mem, viewer, eid, set())
            return out
        return await asyncio.to_thread(view)

    async def forget(request: Request) -> dict[str, Any]:
        body = await request.json()
        ids = [int(i) for i in body.get("observation_ids") or []]
        source = body.get("source") or None
        result = await asyncio.to_thread(mem.forget_own, viewer=viewer,
                                         observation=ids or None, source=source)
        return {"observations": result.observations, "events": result.events,
                "fused_removed": result.fused_removed,
                "fused_updated": result.fused_updated}

    return Starlette(routes=[
        Route("/", index),
        Route("/api/stats", api(stats)),
        Route("/api/search", api(search)),
        Route("/api/ask", api(ask), methods=["POST"]),
        Route("/api/timeline", api(timeline)),
        Route("/api/fused/{fused_id:int}", api(fused)),
        Route("/api/event/{event_id:int}", api(event)),
        Route("/api/forget", api(forget), methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ])


def _cursor(value: str | None, tz: str) -> tuple[float, int] | None:
    """A page cursor: ``EPOCH:EVENT_ID`` from a previous page, or a time (ISO 8601, read
    in the memory's zone when it has no offset) to start just after."""
    if not value:
        return None
    epoch, sep, eid = value.partition(":")
    try:
        return float(epoch), int(eid) if sep else 2**62
    except ValueError:
        when = parse_ts(value)
        if when.tzinfo is None:
            when = when.replace(tzinfo=zone_of(tz))
        return when.timestamp() + 1e-6, 0


def _card(mem: MemFuse, viewer: str, fused_id: int | None, event_id: int,
          epoch: float) -> dict[str, Any]:
    """A timeline card: a fused memory as the viewer sees it, or a lone event."""
    at = datetime.fromtimestamp(epoch, zone_of(mem.tz)).isoformat(timespec="minutes")
    if fused_id is not None:
        f = mem.get_fused(fused_id, viewer=viewer)
        return {"fused_id": f.id, "at": at, "summary": f.summary, "start": f.start,
                "end": f.end, "sources": list(f.sources), "users": list(f.users),
                "members": len(f.member_ids), "conflicts": len(f.conflicts)}
    ev = mem.get_event(event_id, viewer=viewer)
    return {"fused_id": None, "event_id": ev.id, "at": at, "summary": ev.text,
            "start": ev.event_start or ev.ts, "end": ev.event_end, "sources": [ev.source],
            "users": [ev.user], "members": 1, "conflicts": 0}


def _fused_view(mem: MemFuse, viewer: str, fused_id: int) -> dict[str, Any]:
    """A fused memory with its members' source trails, the edges among them, and for
    each member the edges leading out of the memory and what replaced it."""
    memory, members, edges = mem.timeline(fused_id, viewer=viewer)
    out = timeline_json(memory, members, [e for e in edges if e.kind not in HIDDEN_EDGES])
    inside = {m.id for m in members}
    for row in out["members"]:
        eid = row["event_id"]
        own = mem.edges_of(eid, viewer=viewer)
        row["superseded_by"] = sorted({e.src for e in own
                                       if e.kind == "supersedes" and e.dst == eid})
        row["links"] = _links(mem, viewer, eid, inside)
    return out


def _links(mem: MemFuse, viewer: str, event_id: int, inside: set[int]) -> list[dict[str, Any]]:
    """The edges of an event to events outside ``inside`` that the viewer may see."""
    links = []
    for e in mem.edges_of(event_id, viewer=viewer):
        other = e.dst if e.src == event_id else e.src
        if e.kind in HIDDEN_EDGES or other in inside:
            continue
        ev = mem.get_event(other, viewer=viewer)
        links.append({"kind": e.kind, "src": e.src, "dst": e.dst, "event_id": other,
                      "fused_id": mem.fused_of(other), "text": ev.text[:160],
                      "source": ev.source, "user": ev.user})
    return links


def new_token() -> str:
    """A random token for the page's address."""
    return secrets.token_urlsafe(18)


def make_server(mem: MemFuse, viewer: str, *, host: str = "127.0.0.1", port: int = 0,
                token: str | None = None) -> tuple[Any, socket.socket, str]:
    """A uvicorn server of the inspector, the socket it serves (listening now, so the
    address may be used at once; port 0: a free one) and the page's address with its
    token."""
    import uvicorn

    token = token or new_token()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)  # connections wait in the backlog until the server accepts them
    server = uvicorn.Server(uvicorn.Config(build_app(mem, viewer, token),
                                           log_level="warning", access_log=False))
    return server, sock, f"http://{host}:{sock.getsockname()[1]}/?token={token}"


async def serve(mem: MemFuse, viewer: str, *, host: str = "127.0.0.1", port: int = 0,
                token: str | None = None, on_ready: Callable[[str], None] = print) -> None:
    """Serve the inspector until interrupted; ``on_ready`` is given the page's address."""
    server, sock, url = make_server(mem, viewer, host=host, port=port, token=token)
    on_ready(url)
    await server.serve(sockets=[sock])
