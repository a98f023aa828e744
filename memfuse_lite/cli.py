"""The ``memfuse`` command line."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import logging
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

from .config import MemFuseConfig, default_model_dir
from .errors import InvalidQuery, MemFuseError
from .jsonl import answer_json, event_json, timeline_json
from .memory import MemFuse, parse_ref
from .ops.reembed import reembed
from .records import Observation
from .retrieve.registry import PIPELINES, names
from .sync_keys import SyncKey
from .timeutil import time_argument

log = logging.getLogger("memfuse_lite")


def _config(args: argparse.Namespace) -> MemFuseConfig:
    return MemFuseConfig(embedder=args.embedder, model_dir=Path(args.model_dir),
                         threads=args.threads, tz=args.tz)


def _open(args: argparse.Namespace, *, create: bool = False, owner: bool = False) -> MemFuse:
    """The memory named by ``--db``; only ``ingest``, ``merge`` and ``demo`` create one.
    ``owner``: fail while another process owns it (else this one reads beside it)."""
    return MemFuse(args.db, config=_config(args), create=create,
                   mode="owner" if owner else "auto")


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, ensure_ascii=False))


# -- ingest -------------------------------------------------------------------------

def _new_summary() -> dict[str, Any]:
    return {"ingested": 0, "duplicate": 0, "rejected": 0, "reasons": []}


async def _ingest(mem: MemFuse, items: Any, summary: dict[str, Any]) -> None:
    """Ingest observations in batches, counting rejections (anything with a reason)."""
    batch = []
    for item in items:
        if not isinstance(item, Observation):
            summary["rejected"] += 1
            summary["reasons"].append(str(item))
            continue
        batch.append(item)
        if len(batch) >= 256:
            _count(summary, await mem.ingest_many(batch))
            batch = []
    if batch:
        _count(summary, await mem.ingest_many(batch))


def _report(args: argparse.Namespace, summary: dict[str, Any]) -> int:
    """Print the summary; the exit status: 0 when every record was ingested or was a
    duplicate, 1 when some were rejected, 2 when none could be read."""
    summary.setdefault("dead_letters", 0)
    if args.json:
        _print_json(summary)
    else:
        print(f"ingested {summary['ingested']}, duplicate {summary['duplicate']}, "
              f"rejected {summary['rejected']}, dead-lettered {summary['dead_letters']}")
        for reason in summary["reasons"][:50]:
            print(f"  rejected {reason}")
        if len(summary["reasons"]) > 50:
            print(f"  … and {len(summary['reasons']) - 50} more")
    if not summary["rejected"]:
        return 0
    if summary["ingested"] + summary["duplicate"]:
        return 1
    print(f"memfuse: error: nothing could be read ({summary['rejected']} rejected)",
          file=sys.stderr)
    return 2


def _reject_file(summary: dict[str, Any], path: str, reason: str) -> None:
    summary["rejected"] += 1
    summary["reasons"].append(f"{path}: {reason}")


def _progress(items: Any, args: argparse.Namespace, label: str, total: int | None = None
              ) -> Any:
    from tqdm import tqdm

    return tqdm(items, desc=label, unit=" obs", total=total, file=sys.stderr,
                disable=args.quiet or not sys.stderr.isatty())


def cmd_ingest(args: argparse.Namespace) -> int:
    """Ingest observation JSONL files; prints ingested / duplicate / rejected."""
    from .jsonl import read_observations

    async def run() -> dict[str, Any]:
        summary = _new_summary()
        async with _open(args, create=True, owner=getattr(args, "canonical", False)) as mem:
            for path in args.files:
                try:
                    await _ingest(mem, _progress(read_observations(Path(path)), args,
                                                 Path(path).name), summary)
                except OSError as exc:  # the file's readable lines before it are kept
                    _reject_file(summary, path, exc.strerror or str(exc))
            await mem.flush()
            summary["dead_letters"] = len(mem.dead_letters())
            if getattr(args, "canonical", False):
                summary["fusion"] = await asyncio.to_thread(mem.canonicalise)
        return summary

    return _report(args, asyncio.run(run()))


def cmd_import(args: argparse.Namespace) -> int:
    """Import app exports (calendar, mail, contacts, SMS/calls, photos, WhatsApp, Telegram)."""
    from .clock import zone_of
    from .importers import ImportContext, stream
    from .importers.contacts import directory
    from .importers.table import parse_mapping

    visibility: Any = args.visibility
    if visibility not in ("household", "private"):
        visibility = [v.strip() for v in visibility.split(",") if v.strip()]
    options = parse_mapping(args.map) if args.map else {}

    async def run() -> dict[str, Any]:
        summary = _new_summary()
        async with _open(args, create=True) as mem:
            tz = zone_of(mem.tz)  # --tz, else the memory's home zone
            since, until = mem.instant(args.since, "--since"), mem.instant(args.until, "--until")
            for path in args.paths:
                ctx = ImportContext(user=args.user, device=args.device, visibility=visibility,
                                    tz=tz, directory=directory(mem, args.user),
                                    since=since, until=until, options=options)
                records = stream(args.kind, Path(path), ctx)
                bar = _progress(None, args, Path(path).name)
                try:  # read a batch at a time, ingested as it is read: memory stays bounded
                    while chunk := await asyncio.to_thread(_next_batch, records):
                        await _ingest(mem, chunk, summary)
                        bar.update(len(chunk))
                except ImportError as exc:
                    raise MemFuseError(f"importers need the import extra ({exc.name} is "
                                       "missing): pip install 'memfuse_lite[import]'") from exc
                finally:
                    bar.close()
                await mem.flush()  # contacts imported here name the numbers of the next path
            summary["dead_letters"] = len(mem.dead_letters())
        return summary

    return _report(args, asyncio.run(run()))


IMPORT_BATCH = 256
"""Records read from an export file, then ingested, at a time."""


def _next_batch(records: Iterator[Any]) -> list[Any]:
    """The next :data:`IMPORT_BATCH` records of an importer (fewer at its end)."""
    return list(itertools.islice(records, IMPORT_BATCH))


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve the memory to an MCP client over stdio, as one viewer."""
    try:
        import mcp  # noqa: F401 - the SDK is an extra

        from .mcp_server import serve
    except ImportError as exc:
        raise MemFuseError("the MCP server needs the mcp extra: "
                           "pip install 'memfuse_lite[mcp]'") from exc
    config = _serving_config(args)

    async def run() -> None:
        async with MemFuse(args.db, config=config, create=True) as mem:
            mem.warm_up()  # the first question finds the graph and the embedder ready
            async with _syncing(mem, args):
                await serve(mem, args.viewer)

    asyncio.run(run())
    return 0


def _serving_config(args: argparse.Namespace) -> MemFuseConfig:
    """A server's config: the common options, and ``--llm`` as the answer model."""
    config = _config(args)
    if args.llm:
        from dataclasses import replace

        config = replace(config, answer_llm=args.llm)
    return config


@contextlib.asynccontextmanager
async def _syncing(mem: MemFuse, args: argparse.Namespace) -> AsyncIterator[None]:
    """With ``--sync FOLDER``, sync every ``--sync-every`` seconds while the server runs
    (a failed sync is logged and tried again at the next turn)."""
    if not args.sync:
        yield
        return
    if args.sync_every <= 0:
        raise InvalidQuery(f"--sync-every must be above 0, not {args.sync_every}")
    keys = _sync_keys(args.key, args.sync)

    async def turns() -> None:
        while True:
            try:
                report = await mem.sync(args.sync, device=args.device, keys=keys)
                log.info("synced: %s", report.to_json())
            except MemFuseError as exc:
                log.warning("sync through %s failed: %s", args.sync, exc)
            await asyncio.sleep(args.sync_every)

    task = asyncio.create_task(turns())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def cmd_ui(args: argparse.Namespace) -> int:
    """Serve the memory inspector on 127.0.0.1, as one viewer, until interrupted."""
    try:
        import starlette  # noqa: F401 - the web stack is an extra
        import uvicorn  # noqa: F401

        from .ui import serve
    except ImportError as exc:
        raise MemFuseError("the inspector needs the ui extra: "
                           "pip install 'memfuse_lite[ui]'") from exc
    if not 0 <= args.port <= 65535:
        raise InvalidQuery(f"--port must be 0-65535, not {args.port}")
    config = _serving_config(args)

    def ready(url: str) -> None:
        print(f"memory inspector of {args.db} as {args.viewer} (Ctrl-C stops it):\n{url}",
              flush=True)

    async def run() -> None:
        async with MemFuse(args.db, config=config) as mem:
            mem.warm_up()
            async with _syncing(mem, args):
                await serve(mem, args.viewer, port=args.port, on_ready=ready)

    asyncio.run(run())
    return 0


def cmd_sync(args: argparse.Namespace) -> int:
    """Sync the memory with the household's other devices through a replicated folder."""
    keys = _sync_keys(args.key, args.folder)

    async def run() -> Any:
        async with _open(args, create=True, owner=True) as mem:
            return await mem.sync(args.folder, device=args.device, keys=keys)

    report = asyncio.run(run())
    if args.json:
        _print_json(report.to_json())
    else:
        print(f"{report.device}: sent {report.sent} records and {report.sent_forgets} "
              f"forgets in {len(report.segments_written)} segments; applied "
              f"{report.segments_applied} segments: {report.received} new records, "
              f"{report.duplicates} already here, {report.forgotten} forgotten")
        if report.not_for_this_device:
            print(f"  {report.not_for_this_device} segments are sealed for people whose key "
                  "this device does not hold")
        for name, why in report.skipped:
            print(f"  skipped {name}: {why}")
    return 0


def _sync_keys(paths: Sequence[str] | None, folder: str) -> list[SyncKey]:
    """The key files given, none of them inside the synced folder."""
    inside = Path(folder).expanduser().resolve()
    for path in paths or []:
        if inside in Path(path).expanduser().resolve().parents:
            raise InvalidQuery(f"{path} lies inside the synced folder: keep keys out of it "
                               "(the folder is copied to every device and service)")
    return [SyncKey.load(p) for p in paths or []]


def cmd_sync_key(args: argparse.Namespace) -> int:
    """Write a new sync key file: the household's, or one person's."""
    key = SyncKey.new(args.user)
    path = key.save(args.out)
    print(f"{path}: a new key for {key.group} (id {key.key_id}); give it to each of "
          f"{'the household' if args.user is None else args.user + chr(39) + 's'} devices "
          "by hand, never through the synced folder")
    return 0


def _count(summary: dict[str, Any], results: Sequence[Any]) -> None:
    for r in results:
        summary["ingested" if r.status == "accepted" else "duplicate"] += 1


# -- search -------------------------------------------------------------------------

def cmd_search(args: argparse.Namespace) -> int:
    """One query, or every query of a JSONL file (one JSON line each)."""
    from .jsonl import read_queries, result_line

    with _open(args) as mem:
        if args.queries:
            for q in read_queries(Path(args.queries)):
                res = mem.search(q.text, viewer=q.viewer, k=args.k, now=q.now,
                                 pipeline=args.pipeline)
                _print_json(result_line(q.id, res))
            return 0
        if not args.query or not args.viewer:
            raise InvalidQuery("search: give a query and --viewer, or --queries FILE")
        now = time_argument(args.now, "--now")
        res = mem.search(args.query, viewer=args.viewer, k=args.k, now=now,
                         pipeline=args.pipeline)
        if args.json:
            _print_json(result_line("q", res))
            return 0
        print(f"{len(res.hits)} hits ({res.pipeline}, {res.latency_ms:.1f} ms)")
        for rank, hit in enumerate(res.hits, start=1):
            print(f"{rank:>3}. [{hit.event_id}] {hit.score:.4f}  {hit.text[:160]}")
            for p in hit.provenance:
                print(f"       ← {p.source} #{p.external_id} · {p.user} · {p.device or '-'} "
                      f"· {p.ts}")
    return 0


# -- ask ------------------------------------------------------------------------------

def cmd_ask(args: argparse.Namespace) -> int:
    """Answer a question from memory, citing the source records."""
    config = _config(args)
    if args.llm:
        from dataclasses import replace

        config = replace(config, answer_llm=args.llm)
    now = time_argument(args.now, "--now")

    streaming = args.stream and not args.json

    async def run() -> Any:
        mem = MemFuse(args.db, config=config, create=False)
        try:
            if not streaming:
                return await mem.ask(args.question, viewer=args.viewer, now=now,
                                     pipeline=args.pipeline, k=args.k)
            stream = mem.ask_stream(args.question, viewer=args.viewer, now=now,
                                    pipeline=args.pipeline, k=args.k)
            written = []
            async for piece in stream:
                written.append(piece)
                print(piece, end="", flush=True)
            print()
            answer = stream.answer
            shown = "".join(written)
            if answer.text != shown:
                # the support check kept something else than what was streamed
                if answer.rejected is not None and answer.mode == "fallback":
                    print(f"(not kept: {answer.rejected.reason}; instead:)")
                    print(answer.text)
                else:
                    print(answer.text.removeprefix(shown).strip())
            return answer
        finally:
            mem.close()

    answer = asyncio.run(run())
    if args.json:
        _print_json(answer_json(answer))
        return 0
    if not streaming:
        print(answer.text)
    for c in answer.citations:
        for p in c.provenance:
            print(f"  [{c.event_id}] ← {p.source} #{p.external_id} · {p.user} · "
                  f"{p.device or '-'} · {p.ts}")
    print(f"({answer.mode} answer, {answer.pipeline}, {answer.rounds} round(s), "
          f"{len(answer.evidence)} evidence, "
          f"{answer.usage.total_tokens} LLM tokens, {answer.latency_ms:.0f} ms)")
    return 0


# -- show / stats -------------------------------------------------------------------

def cmd_show(args: argparse.Namespace) -> int:
    """An event (``ID``, ``event:ID``), an observation's events (``obs:ID``) or a fused memory
    (``fused:ID``) as a timeline with its source trail and edges."""
    kind, ident = parse_ref(args.id)
    viewer = args.viewer
    with _open(args) as mem:
        if kind == "fused":
            if viewer is None:
                raise InvalidQuery("a fused memory needs --viewer")
            _show_fused(mem, ident, viewer, args.json)
            return 0
        events = mem.events_of_ref(kind, ident, viewer=viewer)
        fused = {e.id: mem.fused_of(e.id) for e in events}
    for ev in events:
        if args.json:
            _print_json(event_json(ev, fused[ev.id]))
            continue
        print(f"event {ev.id}: {ev.text}")
        print(f"  user {ev.user} · source {ev.source} · observed {ev.ts} · visible to "
              f"{', '.join(ev.audience) if ev.audience else 'household'}")
        if ev.event_start:
            print(f"  happens {ev.event_start}" + (f" – {ev.event_end}" if ev.event_end and
                                                  ev.event_end != ev.event_start else ""))
        if ev.actors or ev.place:
            print(f"  actors {', '.join(ev.actors) or '-'} · place {ev.place or '-'}")
        if fused[ev.id] is not None:
            print(f"  part of fused memory {fused[ev.id]} (memfuse show fused:{fused[ev.id]})")
        for p in ev.provenance:
            print(f"  ← observation {p.observation_id}: {p.source} #{p.external_id} · {p.user} · "
                  f"{p.device or '-'} · {p.ts}")
    return 0


def _show_fused(mem: MemFuse, fused_id: int, viewer: str, as_json: bool) -> None:
    fused, members, edges = mem.timeline(fused_id, viewer=viewer)
    if as_json:
        _print_json(timeline_json(fused, members, edges))
        return
    print(f"fused memory {fused.id}: {fused.summary}")
    print(f"  {fused.start} – {fused.end} · sources {', '.join(fused.sources)} · users "
          f"{', '.join(fused.users)} · participants {', '.join(fused.participants)}")
    for m in members:
        p = m.provenance[0]
        when = m.event_start or m.ts
        print(f"  {when}  [{m.id}] {m.source:<9} {m.user:<8} {p.device or '-':<7} {m.text[:100]}")
    for e in edges:
        if e.kind == "causal" and e.weight < 1.0:
            continue
        print(f"  {e.kind}: {e.src} → {e.dst} ({e.reason})")
def cmd_stats(args: argparse.Namespace) -> int:
    """Counts and index state."""
    with _open(args) as mem:
        stats = mem.stats()
    if args.json:
        _print_json(stats)
    else:
        for key, value in stats.items():
            print(f"{key:>16}: {value}")
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    """Delete observations and everything derived from them."""
    with _open(args, owner=True) as mem:
        result = mem.forget(observation=args.observation, source=args.source, user=args.user,
                            before=args.before)
    if args.json:
        _print_json(result.to_json())
    else:
        print(f"forgot {result.observations} observations, {result.events} events, "
              f"{result.edges} edges; {result.fused_removed} fused memories removed, "
              f"{result.fused_updated} updated")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """Write the observation log as JSONL (stdout or --out)."""
    with _open(args) as mem:
        if args.out:
            with open(args.out, "w", encoding="utf-8") as f:
                n = mem.export(f)
        else:
            n = mem.export(sys.stdout)
    print(f"exported {n} observations", file=sys.stderr)
    return 0


def cmd_reembed(args: argparse.Namespace) -> int:
    """Re-embed every event with the configured embedder."""
    n = reembed(args.db, config=_config(args))
    print(f"re-embedded {n} events with {args.embedder}; the dense index rebuilds on next open")
    return 0


# -- demo -----------------------------------------------------------------------------

def cmd_demo(args: argparse.Namespace) -> int:
    """Ingest a small household concurrently and answer a few questions with evidence."""
    from .demo import run_demo
    from .prepare.registry import DEFAULT_EMBEDDER, is_prepared, prepare

    config = _config(args)
    needed = [DEFAULT_EMBEDDER] if config.embedder == DEFAULT_EMBEDDER else []
    if args.llm:
        from dataclasses import replace

        config = replace(config, answer_llm=args.llm)
        if Path(args.llm).suffix != ".gguf":
            needed.append(args.llm)
    for name in needed:
        if not is_prepared(name, config.model_dir):
            print(f"preparing {name} (first run only)…", file=sys.stderr)
            prepare(name, config.model_dir, progress=lambda m: print(f"  {m}", file=sys.stderr))

    async def run(db: str) -> None:
        async with MemFuse(db, config=config) as mem:
            await run_demo(mem)

    if args.db:
        asyncio.run(run(args.db))
    else:
        with tempfile.TemporaryDirectory(prefix="memfuse-demo-") as tmp:
            asyncio.run(run(tmp))
    return 0


# -- models ---------------------------------------------------------------------------

def cmd_models(args: argparse.Namespace) -> int:
    """List, prepare or export models."""
    from .prepare.registry import DEFAULT_EMBEDDER, DEFAULT_LLM, list_models, prepare

    model_dir = Path(args.model_dir)
    if args.models_cmd == "list":
        for row in list_models(model_dir):
            mark = "prepared" if row.prepared else "missing "
            print(f"{row.name:<22} {row.kind:<9} {mark} {row.path}")
            print(f"{'':<22} {row.description}")
        return 0
    if args.models_cmd == "prepare":
        names = args.names or [DEFAULT_EMBEDDER, DEFAULT_LLM]
        if args.all:
            names = [r.name for r in list_models(model_dir)]
        for name in names:
            prepare(name, model_dir, force=args.force, progress=lambda m: print(m, flush=True))
        return 0
    if args.models_cmd == "export-bge-m3":
        from .prepare.bge_m3 import export_bge_m3

        dest = export_bge_m3(Path(args.source), model_dir / args.name, name=args.name,
                             progress=lambda m: print(m, flush=True))
        print(f"ready: open a memory with --embedder {dest}")
        return 0
    raise SystemExit("memfuse models: choose list, prepare or export-bge-m3")


# -- parser ---------------------------------------------------------------------------

HANDOFF = ("While another process owns the memory (memfuse mcp, another ingest), the records "
           "are handed to it through the memory's inbox and the command waits until it has "
           "processed them; if that process stops, this one takes over.")
READS_BESIDE = ("Works while another process owns the memory (memfuse mcp, an ingest) and "
                "sees everything it has committed.")
OWNER_ONLY = ("Needs the memory to itself: fails with an error while another process (memfuse "
              "mcp, an ingest) owns it.")

def _sync_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sync", metavar="FOLDER", help="sync through this replicated folder "
                   "while serving (as `memfuse sync`)")
    p.add_argument("--device", help="this memory's name in the sync folder (first sync)")
    p.add_argument("--sync-every", type=float, default=300.0, metavar="SECONDS",
                   help="seconds between syncs (default 300)")
    _key_option(p)


def _key_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--key", action="append", metavar="FILE", help="a sync key file (memfuse "
                   "sync-key): the household's seals every segment; a person's lets this "
                   "device exchange the records only that person may see (repeatable)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used by the docs test)."""
    parser = argparse.ArgumentParser(prog="memfuse", description=__doc__)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--model-dir", default=str(default_model_dir()),
                        help="prepared models (default: $MEMFUSE_MODEL_DIR or the user cache)")
    common.add_argument("--embedder", default="e5-small-int8",
                        help="manifest name or prepared model directory")
    common.add_argument("--threads", type=int, default=2, help="threads per model (default 2)")
    common.add_argument("--tz", help="IANA zone in which times given without an offset are "
                        "read (records, --now, --before, --since; default: the memory's home "
                        "zone, this machine's when it was created)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("ingest", parents=[common], help="ingest observation JSONL files",
                       description=HANDOFF)
    p.add_argument("--db", required=True)
    p.add_argument("--json", action="store_true")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("files", nargs="+")
    p.set_defaults(func=cmd_ingest)

    from .importers import IMPORTERS

    p = sub.add_parser("import", parents=[common], help="import app exports (calendar, mail, "
                       "contacts, SMS/calls, iMessage, photos, WhatsApp, Telegram, Keep, Timeline, CSV)",
                       description="Kinds: " + "; ".join(f"{i.kind}: {i.help}"
                                                         for i in IMPORTERS.values())
                       + ". " + HANDOFF)
    p.add_argument("kind", choices=sorted(IMPORTERS))
    p.add_argument("paths", nargs="+", help="export files (a folder for photos, keep, timeline)")
    p.add_argument("--db", required=True)
    p.add_argument("--user", required=True, help="whose records these are")
    p.add_argument("--device", default="", help="the device they come from")
    p.add_argument("--visibility", default="household",
                   help="household (default), private, or a comma list of users")
    p.add_argument("--since", help="expand recurring calendar events from (ISO date; "
                   "default two years ago)")
    p.add_argument("--until", help="… to (default one year ahead)")
    p.add_argument("--map", help="csv: which columns hold what, e.g. ts=Date,text=Subject+Body,"
                   "id=ID,source=:sms (a value starting with ':' is the same for every row)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("mcp", parents=[common], help="serve the memory to an MCP client "
                       "(stdio) as one viewer")
    p.add_argument("--db", required=True)
    p.add_argument("--viewer", required=True, help="the user every tool call acts as")
    p.add_argument("--llm", help="local LLM for ask (default: extractive answers)")
    _sync_options(p)
    p.set_defaults(func=cmd_mcp)

    p = sub.add_parser("ui", parents=[common], help="a memory inspector in the browser, "
                       "on 127.0.0.1, as one viewer")
    p.add_argument("--db", required=True)
    p.add_argument("--viewer", required=True, help="the user every page shows and acts as")
    p.add_argument("--port", type=int, default=0, help="port to listen on (default: a free "
                   "one; the address with its token is printed)")
    p.add_argument("--llm", help="local LLM for ask (default: extractive answers)")
    _sync_options(p)
    p.set_defaults(func=cmd_ui)

    p = sub.add_parser("sync", parents=[common], help="sync with the household's other "
                       "devices through a folder a sync service replicates",
                       description=OWNER_ONLY)
    p.add_argument("--db", required=True)
    p.add_argument("--folder", required=True, help="the replicated folder (Syncthing, iCloud "
                   "Drive, Dropbox, Nextcloud)")
    p.add_argument("--device", help="this memory's name in the folder (at its first sync)")
    _key_option(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_sync)

    p = sub.add_parser("sync-key", parents=[common], help="write a new key for sync: the household's, or "
                       "with --user one person's")
    p.add_argument("--out", required=True, help="the key file to create (never overwritten)")
    p.add_argument("--user", help="the person whose devices share this key (default: the "
                   "whole household)")
    p.set_defaults(func=cmd_sync_key)

    p = sub.add_parser("merge", parents=[common],
                       help="ingest other devices' logs, then renumber and re-fuse canonically",
                       description=OWNER_ONLY)
    p.add_argument("--db", required=True)
    p.add_argument("--json", action="store_true")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("files", nargs="+")
    p.set_defaults(func=cmd_ingest, canonical=True)

    p = sub.add_parser("export", parents=[common], help="write the observation log as JSONL",
                       description=READS_BESIDE)
    p.add_argument("--db", required=True)
    p.add_argument("--out", help="file to write (default: stdout)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("forget", parents=[common],
                       help="delete observations and everything derived from them",
                       description=OWNER_ONLY)
    p.add_argument("--db", required=True)
    p.add_argument("--observation", type=int, action="append",
                   help="observation id (repeatable)")
    p.add_argument("--source")
    p.add_argument("--user")
    p.add_argument("--before", help="ISO time: observations recorded before it")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_forget)

    p = sub.add_parser("search", parents=[common], help="search the memory",
                       description=READS_BESIDE)
    p.add_argument("--db", required=True)
    p.add_argument("--viewer")
    p.add_argument("--k", type=int, default=20)
    p.add_argument("--now")
    p.add_argument("--pipeline", choices=list(PIPELINES), default="hybrid")
    p.add_argument("--queries", help="JSONL of {id, text, viewer, now}")
    p.add_argument("--json", action="store_true")
    p.add_argument("query", nargs="?")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("ask", parents=[common], help="answer a question with citations",
                       description=READS_BESIDE)
    p.add_argument("--db", required=True)
    p.add_argument("--viewer", required=True)
    p.add_argument("--now")
    p.add_argument("--k", type=int, default=20)
    p.add_argument("--pipeline", choices=names(grounded=True), default="fused")
    p.add_argument("--llm", help="GGUF name or path that writes the answer (default: none, "
                                 "an extractive answer)")
    p.add_argument("--stream", action="store_true",
                   help="print the model's answer as it writes it, then what the support "
                        "check kept")
    p.add_argument("--json", action="store_true")
    p.add_argument("question")
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("show", parents=[common], help="an event with its source trail",
                       description=READS_BESIDE)
    p.add_argument("--db", required=True)
    p.add_argument("--viewer", help="show only what this user may see")
    p.add_argument("--json", action="store_true")
    p.add_argument("id", help="event id (or obs:ID for an observation's events)")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("stats", parents=[common], help="counts and index state",
                       description=READS_BESIDE + " Its role says which this process is.")
    p.add_argument("--db", required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("reembed", parents=[common], help="re-embed with another embedder",
                       description=OWNER_ONLY)
    p.add_argument("--db", required=True)
    p.set_defaults(func=cmd_reembed)

    p = sub.add_parser("demo", parents=[common], help="run the built-in household demo")
    p.add_argument("--db", help="keep the demo memory here (default: a temporary directory)")
    p.add_argument("--llm", help="answer with this local LLM (e.g. qwen2.5-coder-0.5b); "
                   "default: extractive answers, no LLM loaded")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("models", parents=[common], help="list, prepare or export models")
    msub = p.add_subparsers(dest="models_cmd", required=True)
    msub.add_parser("list", parents=[common], help="what is prepared and where")
    pp = msub.add_parser("prepare", parents=[common], help="fetch, convert and verify models")
    pp.add_argument("names", nargs="*", help="default: e5-small-int8 and smollm2-135m")
    pp.add_argument("--all", action="store_true", help="every model in the manifest")
    pp.add_argument("--force", action="store_true", help="prepare again even if present")
    pe = msub.add_parser("export-bge-m3", parents=[common],
                         help="export a local BGE-M3 checkout (or ONNX dir) to int8 ONNX")
    pe.add_argument("--from", dest="source", required=True)
    pe.add_argument("--name", default="bge-m3-int8")
    p.set_defaults(func=cmd_models)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memfuse`` script: a bad argument, a file that cannot be read or
    a memory error prints one ``memfuse: error: …`` line and exits 2; a reader closing the
    pipe (``| head``) ends it quietly."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except MemFuseError as exc:
        return _error(str(exc))
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            # Python would complain again when it flushes stdout at exit.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        where = f"{exc.filename}: " if exc.filename else ""
        return _error(f"{where}{exc.strerror or exc}")
    except KeyboardInterrupt:
        return 130


def _error(message: str) -> int:
    print(f"memfuse: error: {message}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
