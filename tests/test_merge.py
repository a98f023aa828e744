"""Export and merge: several devices' logs, imported in any order, give the same memory."""

from __future__ import annotations

import asyncio
import io
import itertools
from pathlib import Path

from bench.gen import GenConfig, generate
from memfuse_lite import MemFuse, Observation
from memfuse_lite.jsonl import read_observations

Key = tuple[str, str, str]


def device_logs() -> list[list[Observation]]:
    """A generated household's observations split into one log per user (their devices)."""
    gen = generate(GenConfig(seed=5, size=120, questions=5))
    logs: dict[str, list[Observation]] = {}
    for o in gen.observations:
        logs.setdefault(o["user"], []).append(Observation.from_json(o))
    return [logs[u] for u in sorted(logs)]


def ingest_in_order(mem: MemFuse, logs: list[list[Observation]]) -> None:
    async def run() -> None:
        for log in logs:
            await mem.ingest_many(log)
            await mem.flush()

    asyncio.run(run())


def signature(mem: MemFuse) -> tuple[set, set, set]:
    """Observations, clusters and edges named by source records, not by ids."""
    with mem.engine.store.reading() as db:
        obs = {tuple(r) for r in db.execute("SELECT user, source, external_id, text FROM"
                                            " observations")}
        key: dict[int, tuple] = {}
        for eid, text, user, source, ext in db.execute(
                "SELECT e.id, e.text, o.user, o.source, o.external_id FROM events e JOIN"
                " event_sources es ON es.event_id = e.id JOIN observations o"
                " ON o.id = es.observation_id"):
            key[eid] = (user, source, ext, text)
        clusters: dict[int, set] = {}
        for fid, eid in db.execute("SELECT fused_id, event_id FROM fused_members"):
            clusters.setdefault(fid, set()).add(key[eid])
        edges = {(kind, key[s], key[d]) for kind, s, d in
                 db.execute("SELECT kind, src, dst FROM edges")}
    return obs, {frozenset(c) for c in clusters.values()}, edges


def test_device_logs_in_any_order_and_an_export_give_the_same_memory(open_memory,
                                                                     tmp_path: Path) -> None:
    logs = device_logs()
    assert len(logs) == 3
    signatures = []
    for n, order in enumerate([(0, 1, 2), (2, 0, 1), (1, 2, 0)]):
        mem = open_memory(tmp_path / f"m{n}")
        ingest_in_order(mem, [logs[i] for i in order])
        counts = mem.canonicalise()
        assert counts["events"] == mem.stats()["events"]
        signatures.append(signature(mem))
        mem.close()
    obs, clusters, edges = signatures[0]
    assert len(obs) == sum(map(len, logs))
    assert any(len(c) > 1 for c in clusters), "the household should fuse somewhere"
    assert edges
    for other in signatures[1:]:
        assert other == signatures[0]

    exported = io.StringIO()
    first = open_memory(tmp_path / "m0")
    assert first.export(exported) == len(obs)
    path = tmp_path / "export.jsonl"
    path.write_text(exported.getvalue(), encoding="utf-8")
    restored = [o for o in read_observations(path)]
    assert all(isinstance(o, Observation) for o in restored)
    again = open_memory(tmp_path / "restored")
    ingest_in_order(again, [restored])  # type: ignore[list-item]
    again.canonicalise()
    assert signature(again) == signatures[0]


def test_export_round_trips_every_field(open_memory, tmp_path: Path) -> None:
    logs = device_logs()
    mem = open_memory(tmp_path / "m")
    ingest_in_order(mem, logs[:1])
    out = io.StringIO()
    mem.export(out)
    path = tmp_path / "e.jsonl"
    path.write_text(out.getvalue(), encoding="utf-8")
    back = {(o.user, o.source, o.external_id): o for o in read_observations(path)}  # type: ignore[union-attr]
    for o in map(mem.engine.clock.observation, logs[0]):  # as stored: instants
        b = back[(o.user, o.source, o.external_id)]
        assert (b.text, b.device, b.meta, b.visibility, b.identity, b.ts) == \
            (o.text, o.device, o.meta, o.visibility, o.identity, o.ts)
    assert list(itertools.islice(back, 1))
