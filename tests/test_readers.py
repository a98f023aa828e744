"""One owner ingests, any number of readers read: in one process (a second open of a
directory is a reader) and across real processes (an MCP server, CLI imports and
searches, a killed owner)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memfuse_lite import MemFuse, MemFuseConfig, MemoryInUse, Observation
from memfuse_lite.config import IngestConfig
from memfuse_lite.engine import owner_running

from .conftest import FakeEmbedder
from .scenarios import DENTIST, observations

CONFIG = MemFuseConfig(tz="UTC", ingest=IngestConfig(batch_size=16, batch_latency_s=0.01,
                                                      inbox_poll_s=0.05))
QUERIES = ["dentist appointment", "who picks up Mia", "牙医", "flight delayed"]


def note(i: int, text: str) -> Observation:
    return Observation(source="note", user="ana", ts=f"2025-03-{1 + i % 28:02d}T09:{i % 60:02d}",
                       text=text, external_id=f"n{i}")


def hits(mem: MemFuse, pipeline: str) -> list[list[tuple[int, float]]]:
    return [[(h.event_id, round(h.score, 5)) for h in
             mem.search(q, viewer="ana", pipeline=pipeline, k=10).hits] for q in QUERIES]


def test_a_reader_sees_what_the_owner_commits_after_it_opened(tmp_path: Path) -> None:
    async def run() -> None:
        async with MemFuse(tmp_path / "m", embedder=FakeEmbedder(), config=CONFIG) as owner:
            await owner.ingest_many(observations(DENTIST))
            await owner.flush()
            with MemFuse(tmp_path / "m", embedder=FakeEmbedder(), config=CONFIG) as reader:
                assert reader.role == "reader"
                for pipeline in ("bm25", "dense", "hybrid", "fused"):
                    assert hits(reader, pipeline) == hits(owner, pipeline), pipeline
                # committed after the reader opened: past its indexes' watermarks
                await owner.ingest(note(1, "the dentist moved the appointment to Friday"))
                await owner.flush()
                found = reader.search("dentist Friday", viewer="ana", pipeline="bm25").hits
                assert "Friday" in found[0].text
                for pipeline in ("bm25", "dense", "hybrid", "fused"):
                    assert hits(reader, pipeline) == hits(owner, pipeline), pipeline
                # what the owner forgets is gone for the reader too
                owner.forget(source="note")
                assert all("Friday" not in h.text for h in reader.search(
                    "dentist Friday", viewer="ana", pipeline="bm25").hits)
                with pytest.raises(MemoryInUse):
                    reader.forget(source="sms")

    asyncio.run(run())


def test_a_readers_observations_are_ingested_by_the_owner(tmp_path: Path) -> None:
    async def run() -> None:
        async with MemFuse(tmp_path / "m", embedder=FakeEmbedder(), config=CONFIG) as owner:
            await owner.ingest(note(0, "first note of the owner"))
            await owner.flush()
            async with MemFuse(tmp_path / "m", embedder=FakeEmbedder(),
                               config=CONFIG) as reader:
                results = await reader.ingest_many([note(i, f"reader note {i}")
                                                    for i in range(1, 40)])
                assert {r.status for r in results} == {"accepted"}
                await asyncio.wait_for(reader.flush(), 30)
                assert reader.stats()["events"] == 40 and reader.stats()["inbox"] == 0
                assert owner.stats()["events"] == 40  # each processed once
                assert reader.search("reader note 7", viewer="ana", pipeline="bm25").hits

    asyncio.run(run())


def test_a_reader_takes_over_when_the_owner_stops(tmp_path: Path) -> None:
    async def run() -> None:
        owner = MemFuse(tmp_path / "m", embedder=FakeEmbedder(), config=CONFIG)
        reader = MemFuse(tmp_path / "m", embedder=FakeEmbedder(), config=CONFIG)
        assert reader.role == "reader"
        await reader.ingest(note(3, "waiting in the inbox"))
        owner.close()  # stops without having seen it
        await asyncio.wait_for(reader.flush(), 30)
        assert reader.role == "owner"
        assert reader.search("waiting inbox", viewer="ana", pipeline="bm25").hits
        await reader.aclose()

    asyncio.run(run())


# -- real processes -------------------------------------------------------------------

def cli(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memfuse_lite.cli", *args],
                          capture_output=True, text=True, timeout=300, **kw)


def test_an_mcp_server_cli_imports_and_searches_at_once(tmp_path: Path, model_dir: Path,
                                                        e5_dir: Path) -> None:
    """The MCP server owns the memory; `memfuse ingest` beside it hands its records to the
    server; `memfuse search` reads everything; results equal a single-process run."""
    pytest.importorskip("mcp")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    db, alone = tmp_path / "shared", tmp_path / "alone"
    rows = [o.to_json() for o in observations(DENTIST)]
    data = tmp_path / "obs.jsonl"
    data.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n")
    common = ["--model-dir", str(model_dir), "--tz", "UTC"]

    async def with_server() -> tuple[list[Any], dict[str, Any]]:
        params = StdioServerParameters(command=sys.executable, args=[
            "-m", "memfuse_lite.cli", "mcp", "--db", str(db), "--viewer", "ana", *common])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            await s.call_tool("remember", arguments={"text": "the server is up",
                                                     "ts": "2025-03-01T08:00"})
            ingest, *searches = await asyncio.gather(
                asyncio.to_thread(cli, "ingest", "--db", str(db), "--json", "--quiet",
                                  *common, str(data)),
                *[asyncio.to_thread(cli, "search", "--db", str(db), "--viewer", "ana",
                                    "--pipeline", "bm25", "--json", *common, "dentist")
                  for _ in range(3)])
            assert ingest.returncode == 0, ingest.stderr
            for found in searches:
                assert found.returncode == 0, found.stderr
            summary = json.loads(ingest.stdout)
            over = await s.call_tool("search", arguments={"query": "dentist Thursday",
                                                          "k": 10})
            return [json.loads(f.stdout) for f in searches], {
                "summary": summary, "server": json.loads(over.content[0].text)}

    searches, out = asyncio.run(with_server())
    assert out["summary"]["ingested"] == len(rows) and out["summary"]["rejected"] == 0
    assert out["server"]["hits"], "the server finds what the CLI handed it"
    # afterwards, one process per command again, and the same answers as a memory
    # built by a single process
    first = tmp_path / "first.jsonl"  # what the server remembered before the import
    first.write_text(json.dumps({"source": "assistant", "user": "ana", "ts": "2025-03-01T08:00",
                                 "text": "the server is up"}) + "\n")
    assert cli("ingest", "--db", str(alone), "--quiet", *common, str(first),
               str(data)).returncode == 0
    for pipeline in ("bm25", "fused"):
        shared = cli("search", "--db", str(db), "--viewer", "ana", "--pipeline", pipeline,
                     "--json", *common, "dentist Thursday")
        single = cli("search", "--db", str(alone), "--viewer", "ana", "--pipeline", pipeline,
                     "--json", *common, "dentist Thursday")
        assert [h["text"] for h in json.loads(shared.stdout)["hits"]] == \
            [h["text"] for h in json.loads(single.stdout)["hits"]], pipeline


def test_a_reader_survives_the_owner_being_killed(tmp_path: Path, model_dir: Path,
                                                  e5_dir: Path) -> None:
    db = tmp_path / "m"
    common = ["--model-dir", str(model_dir), "--tz", "UTC"]
    data = tmp_path / "obs.jsonl"
    data.write_text("\n".join(json.dumps(o.to_json(), ensure_ascii=False)
                              for o in observations(DENTIST)) + "\n")
    assert cli("ingest", "--db", str(db), "--quiet", *common, str(data)).returncode == 0
    before = cli("search", "--db", str(db), "--viewer", "ana", "--json", "--pipeline", "bm25",
                 *common, "dentist")
    # an owner that holds the memory (an MCP server waiting on stdin)
    owner = subprocess.Popen([sys.executable, "-m", "memfuse_lite.cli", "mcp", "--db",
                              str(db), "--viewer", "ana", *common],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    try:
        # the lock is probed, not held: a command that held the memory as the server
        # opened it would leave the server reading beside it
        deadline = time.monotonic() + 120
        while not owner_running(db):
            assert owner.poll() is None, owner.communicate()[1]
            assert time.monotonic() < deadline, "the server never took the memory"
            time.sleep(0.2)
        reader = subprocess.Popen([sys.executable, "-m", "memfuse_lite.cli", "search", "--db",
                                   str(db), "--viewer", "ana", "--json", "--pipeline", "bm25",
                                   *common, "dentist"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        os.kill(owner.pid, signal.SIGKILL)
        out, err = reader.communicate(timeout=300)
        assert reader.returncode == 0, err
        assert json.loads(out)["hits"] == json.loads(before.stdout)["hits"]
    finally:
        owner.kill()
        owner.wait()
    # the next command owns it again, and nothing was lost
    stats = json.loads(cli("stats", "--db", str(db), "--json", *common).stdout)
    assert stats["role"] == "owner" and stats["events"] == len(observations(DENTIST))
    assert not list((db / "readers").glob("*")), "a reader leaves no copy behind"
