"""Fusion: exact clusters, causal and conflict edges, supersession, provenance, replay."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from memfuse_lite import MemFuse, MemFuseConfig, NotFound
from memfuse_lite.config import FusionConfig, IngestConfig
from memfuse_lite.event import EventRecord
from memfuse_lite.fusion.agent import FusionAgent
from memfuse_lite.fusion.edges import episode_edges, stated_cause
from memfuse_lite.fusion.model import EventView, view_of
from memfuse_lite.index import EVENT, FUSED
from memfuse_lite.sources import actors_of, event_time_of
from memfuse_lite.text.features import entities_of
from memfuse_lite.timeutil import parse_ts, to_epoch, to_iso

from .scenarios import DENTIST, EXCHANGE, GRANDMA, TRIP, ZH_DENTIST, Row, observations


def ingest(mem: MemFuse, rows: list[Row]) -> None:
    async def run() -> None:
        for obs in observations(rows):  # one at a time, in order: apps sync as they happen
            await mem.ingest(obs)
        await mem.flush()

    asyncio.run(run())


def clusters(mem: MemFuse) -> set[frozenset[str]]:
    """Fused memories as sets of external ids."""
    with mem.engine.store.reading() as db:
        rows = db.execute(
            "SELECT m.fused_id, o.external_id FROM fused_members m"
            " JOIN event_sources s ON s.event_id = m.event_id"
            " JOIN observations o ON o.id = s.observation_id").fetchall()
    groups: dict[int, set[str]] = {}
    for fid, ext in rows:
        groups.setdefault(fid, set()).add(ext)
    return {frozenset(g) for g in groups.values()}


def edges(mem: MemFuse, kind: str) -> set[tuple[str, str]]:
    """Edges of one kind as (source key, destination key)."""
    with mem.engine.store.reading() as db:
        rows = db.execute(
            "SELECT a.external_id, b.external_id FROM edges e"
            " JOIN event_sources sa ON sa.event_id = e.src JOIN observations a ON a.id = sa.observation_id"
            " JOIN event_sources sb ON sb.event_id = e.dst JOIN observations b ON b.id = sb.observation_id"
            " WHERE e.kind = ?", (kind,)).fetchall()
    return {(a, b) for a, b in rows}


def event_id(mem: MemFuse, key: str) -> int:
    with mem.engine.store.reading() as db:
        (eid,) = db.execute("SELECT s.event_id FROM event_sources s JOIN observations o"
                            " ON o.id = s.observation_id WHERE o.external_id = ?",
                            (key,)).fetchone()
    return int(eid)


@pytest.mark.parametrize("scorer", ["rules", "learned"])
def test_dentist_rescheduled_across_chat_calendar_call(open_memory, config: MemFuseConfig,
                                                       scorer: str) -> None:
    mem = open_memory(config=replace(config, fusion=FusionConfig(scorer=scorer)))
    ingest(mem, DENTIST)
    episode = frozenset({"den-cal", "den-call", "den-chat", "den-sms", "den-photo"})
    assert episode in clusters(mem)
    assert frozenset({"den-distractor"}) in clusters(mem), "the wrong-day distractor was fused"
    assert frozenset({"noise-1"}) in clusters(mem) and frozenset({"noise-2"}) in clusters(mem)
    supersedes = edges(mem, "supersedes")
    assert ("den-chat", "den-cal") in supersedes
    assert ("den-sms", "den-cal") in supersedes
    assert ("den-chat", "den-cal") in edges(mem, "conflicts_with")
    assert ("den-sms", "den-chat") in edges(mem, "same_as") or (
        "den-chat", "den-sms") in edges(mem, "same_as")
    assert not any("distractor" in a or "distractor" in b for a, b in supersedes)


def test_provenance_of_every_member_survives(open_memory) -> None:
    mem = open_memory()
    ingest(mem, DENTIST)
    fid = mem.fused_of(event_id(mem, "den-chat"))
    assert fid is not None
    fused, members, graph_edges = mem.timeline(fid, viewer="ana")
    keys = [m.provenance[0].external_id for m in members]
    assert set(keys) == {"den-cal", "den-call", "den-chat", "den-sms", "den-photo"}
    by_key = {m.provenance[0].external_id: m for m in members}
    assert by_key["den-sms"].provenance[0].user == "ben"
    assert by_key["den-call"].provenance[0].device == "phone"
    assert by_key["den-cal"].event_start == "2025-03-05T15:00:00+00:00"  # the memory's zone
    assert by_key["den-chat"].event_start == "2025-03-06T16:00:00+00:00"
    assert set(fused.sources) == {"calendar", "call", "chat", "sms", "photo"}
    assert set(fused.users) == {"ana", "ben"}
    assert any(c.startswith("time:") for c in fused.conflicts)
    assert any(e.kind == "supersedes" for e in graph_edges)
    assert [m.event_start or m.ts for m in members] == sorted(m.event_start or m.ts
                                                              for m in members)


def test_flight_delay_moves_meeting_that_cancels_dinner(open_memory) -> None:
    mem = open_memory()
    ingest(mem, TRIP)
    found = clusters(mem)
    assert frozenset({"trip-meet", "trip-move"}) in found
    assert frozenset({"trip-dinner", "trip-cancel"}) in found
    assert frozenset({"trip-flight"}) in found
    causal = edges(mem, "causal")
    assert ("trip-flight", "trip-move") in causal
    assert ("trip-move", "trip-cancel") in causal or ("trip-meet", "trip-cancel") in causal
    assert ("trip-move", "trip-meet") in edges(mem, "supersedes")
    assert ("trip-cancel", "trip-dinner") in edges(mem, "supersedes")


def test_two_family_members_report_different_times(open_memory) -> None:
    mem = open_memory()
    ingest(mem, GRANDMA)
    assert frozenset({"gm-ana", "gm-ben", "gm-private"}) in clusters(mem)
    assert ("gm-ben", "gm-ana") in edges(mem, "conflicts_with")
    assert ("gm-ben", "gm-ana") in edges(mem, "supersedes")
    fid = mem.fused_of(event_id(mem, "gm-ana"))
    assert fid is not None
    for_ana = mem.get_fused(fid, viewer="ana")
    for_ben = mem.get_fused(fid, viewer="ben")
    assert "jade" not in for_ana.summary and len(for_ana.member_ids) == 2
    assert len(for_ben.member_ids) == 3
    assert for_ana.users == ("ana", "ben")
    _, members, graph_edges = mem.timeline(fid, viewer="ana")
    assert all(m.audience is None for m in members)
    hidden = event_id(mem, "gm-private")
    assert all(hidden not in (e.src, e.dst) for e in graph_edges)
    assert all(hidden not in (e.src, e.dst) for e in mem.edges_of(event_id(mem, "gm-ana"),
                                                                 viewer="ana"))
    with pytest.raises(NotFound):
        mem.get_event(hidden, viewer="ana")


@pytest.mark.parametrize("scorer", ["rules", "learned"])
def test_chinese_dentist_rescheduled(open_memory, config: MemFuseConfig, scorer: str) -> None:
    mem = open_memory(config=replace(config, fusion=FusionConfig(scorer=scorer)))
    ingest(mem, ZH_DENTIST)
    found = clusters(mem)
    assert frozenset({"zh-cal", "zh-call", "zh-chat"}) in found
    assert frozenset({"zh-distractor"}) in found
    assert ("zh-chat", "zh-cal") in edges(mem, "supersedes")


@pytest.mark.parametrize("scorer", ["rules", "learned"])
@pytest.mark.parametrize("reach", ["default", "narrow"])
def test_replay_and_batching_give_the_same_clusters(tmp_path: Path, embedder,
                                                    model_dir: Path, scorer: str,
                                                    reach: str) -> None:
    rows = DENTIST + EXCHANGE + TRIP
    # narrow: the batch holds more events than the zone keeps and the neighbours find,
    # so a batch's own earlier events must be found as the indexed ones are
    fusion = FusionConfig(scorer=scorer) if reach == "default" else FusionConfig(
        scorer=scorer, zone_size=1, neighbours=2, time_neighbours=1)
    one = MemFuse(tmp_path / "one", config=MemFuseConfig(
        model_dir=model_dir, ingest=IngestConfig(batch_size=1, batch_latency_s=0),
        fusion=fusion), embedder=embedder)
    ingest(one, rows)
    expected = clusters(one)
    expected_edges = {k: edges(one, k) for k in ("supersedes", "conflicts_with", "causal")}
    one.close()
    # acknowledged but never processed (as after a crash), then replayed in one batch
    two = MemFuse(tmp_path / "two", config=MemFuseConfig(
        model_dir=model_dir, ingest=IngestConfig(batch_size=64), fusion=fusion),
        embedder=embedder)
    two.engine.store.insert_observations(observations(rows))
    two.close()
    two = MemFuse(tmp_path / "two", config=MemFuseConfig(
        model_dir=model_dir, ingest=IngestConfig(batch_size=64), fusion=fusion),
        embedder=embedder)

    async def replay() -> None:
        await two.flush()

    asyncio.run(replay())
    assert clusters(two) == expected
    assert {k: edges(two, k) for k in expected_edges} == expected_edges
    two.rebuild_fusion()
    assert clusters(two) == expected, "rebuilding fusion gives the same memories"
    two.close()


def test_stored_events_kept_between_batches_change_no_decision(tmp_path: Path, embedder,
                                                              model_dir: Path) -> None:
    def run(name: str, recent: int) -> tuple[object, ...]:
        mem = MemFuse(tmp_path / name, embedder=embedder, config=MemFuseConfig(
            model_dir=model_dir, ingest=IngestConfig(batch_size=1, batch_latency_s=0),
            fusion=FusionConfig(recent_events=recent)))
        try:
            ingest(mem, DENTIST)
            with mem.engine.store.reading() as db:
                (gone,) = db.execute("SELECT id FROM observations WHERE external_id = ?",
                                     (DENTIST[2][0],)).fetchone()
            mem.forget(observation=int(gone))
            ingest(mem, TRIP + GRANDMA)
            return clusters(mem), {k: edges(mem, k) for k in ("causal", "supersedes", "same_as")}
        finally:
            mem.close()

    kept = run("kept", 4096)
    assert kept == run("read-afresh", 0)
    assert any(len(c) > 1 for c in kept[0])


def test_graph_is_rebuilt_from_sqlite_on_open(open_memory, tmp_path: Path) -> None:
    mem = open_memory()
    ingest(mem, DENTIST)
    before = mem.engine.fusion.graph.counts()
    mem.close()
    again = open_memory(tmp_path / "mem")
    assert again.stats()["graph_edges"] == before, "stats count what the graph holds"
    assert again.engine.fusion.graph.counts() == before
    assert before["member_of"] == len(DENTIST)


def test_an_events_neighbours_are_the_other_ends_of_its_edges(open_memory) -> None:
    mem = open_memory()
    ingest(mem, DENTIST + TRIP)
    graph = mem.engine.fusion.graph
    ids = list(range(1, mem.stats()["events"] + 2))  # and one id the graph does not hold
    linked = graph.neighbours(ids)
    assert linked[ids[-1]] == frozenset()
    for eid in ids:
        assert linked[eid] == {e.dst if e.src == eid else e.src for e in graph.edges_of(eid)}
    assert any(linked.values())


def _count_edge_reads(monkeypatch) -> list[int]:
    """A list that grows by one each time the stored edges are read."""
    from memfuse_lite.store import fused as fused_sql

    reads: list[int] = []
    all_edges = fused_sql.all_edge_rows
    monkeypatch.setattr(fused_sql, "all_edge_rows",
                        lambda db: reads.append(1) or all_edges(db))
    return reads


def _edges_everywhere(mem) -> tuple[dict, dict]:
    """Every event's edges and neighbours as the memory's graph gives them."""
    graph = mem.engine.fusion.graph
    with mem.engine.store.reading() as db:
        ids = [int(r[0]) for r in db.execute("SELECT id FROM events ORDER BY id")]
    return {i: graph.edges_of(i) for i in ids}, graph.neighbours(ids)


def test_stored_edges_are_read_after_a_first_fused_search(open_memory, tmp_path: Path,
                                                          monkeypatch) -> None:
    mem = open_memory()
    ingest(mem, DENTIST)
    mem.close()
    reads = _count_edge_reads(monkeypatch)
    again = open_memory(tmp_path / "mem")
    assert again.search("dentist", viewer="ana", pipeline="bm25").hits
    ingest(again, TRIP)  # SQLite has the batch's edges: the graph reads them when it reads
    graph = again.engine.fusion.graph
    assert not reads and not graph.in_memory, "opening, BM25 or ingesting read the edges"
    from_sqlite = _edges_everywhere(again)
    first = again.search("dentist Thursday", viewer="ana").hits  # answered from SQLite
    assert first
    graph.read_all()  # what the search started in the background, or a no-op after it
    assert reads == [1] and graph.in_memory
    assert _edges_everywhere(again) == from_sqlite, "memory and SQLite give the same edges"
    assert [h.to_json() for h in again.search("dentist Thursday", viewer="ana").hits] == \
        [h.to_json() for h in first]
    counts = graph.counts()
    again.close()
    assert open_memory(tmp_path / "mem").engine.fusion.graph.counts() == counts
    assert counts["member_of"] == len(DENTIST) + len(TRIP)


def test_a_batch_committed_while_the_edges_are_read_reaches_the_graph(
        open_memory, tmp_path: Path, monkeypatch) -> None:
    from memfuse_lite.store import fused as fused_sql

    mem = open_memory()
    ingest(mem, DENTIST)
    mem.close()
    again = open_memory(tmp_path / "mem")
    rows = fused_sql.all_edge_rows

    def read_then_ingest(db):
        yield from rows(db)  # the read's snapshot holds DENTIST's edges only
        monkeypatch.setattr(fused_sql, "all_edge_rows", rows)
        ingest(again, TRIP)

    monkeypatch.setattr(fused_sql, "all_edge_rows", read_then_ingest)
    again.engine.fusion.graph.read_all()
    assert again.engine.fusion.graph.in_memory
    loaded = _edges_everywhere(again)
    again.close()
    fresh = open_memory(tmp_path / "mem")
    assert any(loaded[0].values()), "the memory has edges"
    assert loaded == _edges_everywhere(fresh)


def test_warming_up_reads_the_graph_and_changes_no_answer(open_memory, tmp_path: Path,
                                                         monkeypatch) -> None:
    mem = open_memory()
    ingest(mem, DENTIST + TRIP)
    assert not mem.engine.store.holds_chinese()
    ingest(mem, [("zh-1", "chat", "mia", "phone", "2025-05-01T19:00", "学校周五开家长会", {},
                  "household")])
    assert mem.engine.store.holds_chinese()
    cold = [h.event_id for h in mem.search("dentist Thursday", viewer="ana").hits]
    mem.close()
    reads = _count_edge_reads(monkeypatch)
    again = open_memory(tmp_path / "mem")
    thread = again.warm_up()
    assert again.warm_up() is thread
    thread.join()
    assert reads == [1], "the edges were read once, in the background"
    assert [h.event_id for h in again.search("dentist Thursday", viewer="ana").hits] == cold
    assert reads == [1]
    again.close()
    early = open_memory(tmp_path / "mem")
    early.warm_up()
    early.close()  # waits for the warm-up; nothing is left running
    assert not early._warming.is_alive()


def test_fused_documents_are_indexed_and_rebuilt(open_memory, tmp_path: Path) -> None:
    mem = open_memory()
    ingest(mem, DENTIST + GRANDMA)
    fid = mem.fused_of(event_id(mem, "den-chat"))
    before = mem.engine.text.fused_ids()
    assert fid in before
    gm = mem.fused_of(event_id(mem, "gm-ana"))
    # the private note's words never reach the household document of its episode
    hits = mem.engine.text.search("jade bracelet", "ana", 10, kinds=(EVENT, FUSED))
    assert (FUSED, gm) not in {(h.kind, h.id) for h in hits}
    mem.close()
    (tmp_path / "mem" / "sparse.json").unlink()
    again = open_memory(tmp_path / "mem")
    assert again.engine.text.fused_ids() == before


def test_rebuild_fusion_reproduces_online_fusion_and_applies_a_new_config(
        tmp_path: Path, embedder, model_dir: Path) -> None:
    from memfuse_lite.config import FusionConfig

    cfg = MemFuseConfig(model_dir=model_dir, ingest=IngestConfig(batch_size=4))
    mem = MemFuse(tmp_path / "m", config=cfg, embedder=embedder)
    ingest(mem, DENTIST + TRIP)
    online = (clusters(mem), edges(mem, "causal"), edges(mem, "supersedes"))
    assert any(len(c) > 1 for c in online[0])
    counts = mem.rebuild_fusion()
    assert (clusters(mem), edges(mem, "causal"), edges(mem, "supersedes")) == online
    assert counts["events"] == len(DENTIST + TRIP)
    mem.close()
    apart = MemFuse(tmp_path / "m", embedder=embedder, config=MemFuseConfig(
        model_dir=model_dir, fusion=FusionConfig(scorer="rules", join_threshold=1.5,
                                                 ambiguous_threshold=1.5)))
    try:
        counts = apart.rebuild_fusion()
        assert all(len(c) == 1 for c in clusters(apart)), "nothing reaches the new threshold"
        assert counts["fused_memories"] == counts["events"]
        hit = apart.search("dentist Thursday", viewer="ana", pipeline="fused").hits[0]
        assert hit.fused_id is not None and apart.get_fused(hit.fused_id, viewer="ana")
    finally:
        apart.close()


def test_learned_scorer_reaches_back_days_through_a_shared_rare_word(
        tmp_path: Path, embedder, model_dir: Path) -> None:
    from memfuse_lite.fusion.pairs import FEATURES, PairModel

    weights = np.zeros(len(FEATURES))
    weights[FEATURES.index("bias")] = -6.0
    weights[FEATURES.index("rare_share")] = 20.0
    model = tmp_path / "model.json"
    model.write_text(PairModel(weights, 0.5, {}).to_json())
    first = ("first", "note", "ana", "phone", "2025-03-01T09:00",
             "Invoice from Zephyrine Gardens paid", {}, "household")
    noise = [(f"n{i}", "chat", "ben", "phone", f"2025-03-0{2 + i // 10}T{8 + i % 10:02d}:00",
              f"Call with the gardener about the hedge, part {i}", {}, "household")
             for i in range(30)]
    last = ("last", "chat", "ben", "phone", "2025-03-05T18:00",
            "Call with Zephyrine about the garden", {}, "household")
    cfg = MemFuseConfig(model_dir=model_dir, fusion=FusionConfig(
        scorer="learned", pair_model=str(model), zone_size=5, neighbours=1, time_neighbours=0,
        window_days=7))
    mem = MemFuse(tmp_path / "m", config=cfg, embedder=embedder)
    try:
        ingest(mem, [first, *noise, last])
        found = clusters(mem)
    finally:
        mem.close()
    assert any({"first", "last"} <= c for c in found), \
        "four days and thirty records apart, found through the rare word alone"


def test_the_pair_model_never_joins_what_the_times_rule_out(
        tmp_path: Path, embedder, model_dir: Path) -> None:
    """Two reported schedules of one app on different days, with no change reported
    between them, stay apart however alike (the dinner cancelled on Friday and the one
    cancelled on Monday), also when a later record shares a word with both; a record whose
    times allow it still joins by that word."""
    from memfuse_lite.fusion.pairs import FEATURES, PairModel

    weights = np.zeros(len(FEATURES))
    weights[FEATURES.index("bias")] = -6.0
    weights[FEATURES.index("rare_share")] = 20.0
    weights[FEATURES.index("within_hour")] = 2.0
    model = tmp_path / "model.json"
    model.write_text(PairModel(weights, 0.5, {}).to_json())
    cancelled = "sorry, tonight's dinner at Zephyrine is off, Ben's flight was delayed"
    friday = ("fri", "sms", "ana", "phone", "2025-01-24T08:50", f"To Omar Aziz: {cancelled}",
              {}, "household")
    noise = [(f"n{i}", "chat", "ben", "phone", f"2025-01-2{5 + i // 10}T{8 + i % 10:02d}:00",
              f"Call with the gardener about the hedge, part {i}", {}, "household")
             for i in range(20)]
    monday = ("mon", "sms", "ana", "phone", "2025-01-27T08:50", f"To Li Wei: {cancelled}",
              {}, "household")
    call = ("call", "chat", "ana", "phone", "2025-01-27T09:30",
            "Call with the gardener about Zephyrine", {}, "household")
    cfg = MemFuseConfig(model_dir=model_dir, fusion=FusionConfig(
        scorer="learned", pair_model=str(model), zone_size=5, window_days=7))
    mem = MemFuse(tmp_path / "m", config=cfg, embedder=embedder)
    try:
        ingest(mem, [friday, *noise, monday, call])
        found = clusters(mem)
    finally:
        mem.close()
    assert not any({"fri", "mon"} <= c for c in found), "two evenings, two dinners"
    assert any({"mon", "call"} <= c for c in found), "the same morning: one happening"


@pytest.mark.parametrize("bridge", [None, 0.5])
def test_a_record_scoring_the_bridge_probability_with_two_memories_merges_them(
        tmp_path: Path, embedder, model_dir: Path, bridge: float | None) -> None:
    """A record sharing a rare word with each of two memories that share none joins one;
    it merges both when it scores the bridge probability with each (the model's, unless
    configured)."""
    from memfuse_lite.fusion.pairs import FEATURES, PairModel

    weights = np.zeros(len(FEATURES))
    weights[FEATURES.index("bias")] = -6.0
    weights[FEATURES.index("rare_share")] = 30.0
    model = tmp_path / "model.json"
    model.write_text(PairModel(weights, 0.5, {}, bridge=1.0).to_json())
    noise = [(f"n{i}", "note", "ben", "phone", f"2025-03-01T0{i}:00",
              f"weather report number {i}", {}, "household") for i in range(8)]
    rows = [("a", "note", "ana", "phone", "2025-03-01T09:00", "the zephyrine invoice is paid",
             {}, "household"),
            ("b", "chat", "ben", "phone", "2025-03-01T10:00", "the quillon hedge is trimmed",
             {}, "household"),
            ("c", "chat", "ana", "phone", "2025-03-01T11:00", "zephyrine and quillon sorted",
             {}, "household")]
    cfg = MemFuseConfig(model_dir=model_dir, fusion=FusionConfig(
        scorer="learned", pair_model=str(model), bridge_probability=bridge))
    mem = MemFuse(tmp_path / "m", config=cfg, embedder=embedder)
    try:
        ingest(mem, [*noise, *rows])
        found = clusters(mem)
    finally:
        mem.close()
    assert not any({"a", "b"} <= c for c in found) if bridge is None else \
        any({"a", "b", "c"} <= c for c in found)
    assert any({"a", "c"} <= c or {"b", "c"} <= c for c in found)


@pytest.mark.parametrize("links", [2, 0])
def test_likely_mates_left_in_other_memories_are_related_for_retrieval(
        tmp_path: Path, embedder, model_dir: Path, links: int) -> None:
    """Where the pair model is not sure enough to join (here: never), the most probable
    candidate still gets a ``related`` edge weighted by its probability, and retrieval's
    expansion reaches it from a seed as it reaches a memory's members; improbable
    candidates get none, and so does every candidate with ``links_per_event`` 0."""
    from memfuse_lite.config import RetrievalConfig
    from memfuse_lite.fusion.pairs import FEATURES, PairModel
    from memfuse_lite.retrieve.expand import expand

    weights = np.zeros(len(FEATURES))
    weights[FEATURES.index("bias")] = -6.0
    weights[FEATURES.index("rare_share")] = 30.0
    model = tmp_path / "model.json"
    model.write_text(PairModel(weights, 0.5, {}).to_json())
    noise = [(f"n{i}", "note", "ben", "phone", f"2025-03-01T0{i}:00", text, {}, "household")
             for i, text in enumerate(["bought milk", "rain tomorrow", "gym at six",
                                       "call the plumber", "library book due",
                                       "parking ticket", "new phone case", "dog walk done"])]
    rows = [("a", "note", "ana", "phone", "2025-03-01T09:00", "the zephyrine invoice is paid",
             {}, "household"),
            ("c", "chat", "ana", "phone", "2025-03-01T11:00", "zephyrine and quillon sorted",
             {}, "household")]
    cfg = MemFuseConfig(model_dir=model_dir, fusion=FusionConfig(
        scorer="learned", pair_model=str(model), join_probability=1.0,
        links_per_event=links))
    mem = MemFuse(tmp_path / "m", config=cfg, embedder=embedder)
    try:
        ingest(mem, [*noise, *rows])
        found = clusters(mem)
        related = edges(mem, "related")
        a, c = event_id(mem, "a"), event_id(mem, "c")
        graph = mem.engine.graph
        assert graph is not None
        reached = {on: expand({c: 1.0}, graph, RetrievalConfig(use_related_links=on),
                              visible=set)
                   for on in (True, False)}
    finally:
        mem.close()
    assert not any({"a", "c"} <= group for group in found), "not probable enough to join"
    if not links:
        assert not related and a not in reached[True]
        return
    assert related == {("a", "c")}, "the one probable mate"
    assert reached[True][a] == (pytest.approx(RetrievalConfig().hop_decay), "related")
    assert a not in reached[False]


@pytest.mark.parametrize("minutes", [30.0, 0.0])
def test_the_replies_of_one_exchange_join_its_memory(tmp_path: Path, embedder,
                                                     model_dir: Path, minutes: float) -> None:
    """Messages of one conversation sent close together are one episode however little
    the replies share ("ok"); another party's message in between, another user's
    conversation with the same person and the next message hours later are not part of
    it. ``thread_minutes`` 0 turns this off."""
    mem = MemFuse(tmp_path / "m", embedder=embedder, config=MemFuseConfig(
        model_dir=model_dir, fusion=FusionConfig(thread_minutes=minutes)))
    try:
        ingest(mem, EXCHANGE)
        found = clusters(mem)
    finally:
        mem.close()
    exchange = {"ex-ask", "ex-ok", "ex-time"}
    if not minutes:
        assert not any({"ex-ask", "ex-ok"} <= group for group in found)
        return
    (group,) = [g for g in found if exchange <= g]
    assert not group & {"ex-parcel", "ex-ben", "ex-later"}


def test_a_pair_model_of_other_features_is_refused(tmp_path: Path) -> None:
    import json

    from memfuse_lite.fusion.pairs import FEATURES, PairModel

    shipped = PairModel.load()
    assert len(shipped.weights) == len(FEATURES) + len(shipped.crosses)
    assert 0 < shipped.threshold < 1
    other = json.loads(shipped.to_json())
    other["features"] = other["features"][:-1]
    (tmp_path / "old.json").write_text(json.dumps(other))
    with pytest.raises(ValueError, match="refit"):
        PairModel.load(tmp_path / "old.json")
    with pytest.raises(ValueError):
        FusionConfig(scorer="neural")
    with pytest.raises(ValueError, match="neighbour_ef"):
        FusionConfig(neighbour_ef=0)
    with pytest.raises(ValueError, match="recent_events"):
        FusionConfig(recent_events=-1)


def test_the_fitting_script_reads_the_probabilities_fusion_joined_by(
        tmp_path: Path, embedder, model_dir: Path) -> None:
    """``FusionAgent.pairs`` (what ``bench fusion-fit`` fits on) sees an event's candidates
    with the features fusion scored them by: the pair model's probability of the
    candidate the event joined clears the join probability."""
    from collections import deque

    from memfuse_lite.fusion.model import load_views
    from memfuse_lite.fusion.pairs import FEATURES, PairModel

    cfg = MemFuseConfig(model_dir=model_dir, fusion=FusionConfig(scorer="learned"))
    mem = MemFuse(tmp_path / "m", config=cfg, embedder=embedder)
    try:
        ingest(mem, DENTIST + TRIP)
        model = PairModel.load()
        agent = FusionAgent(cfg.fusion, mem.engine.dense.search_all, model=model)
        chat = event_id(mem, "den-chat")
        with mem.engine.store.atomic() as db:
            ids = [int(r[0]) for r in db.execute("SELECT id FROM events ORDER BY id")]
            views = load_views(db, ids)
            zone = deque(views[i] for i in ids if i < chat)
            pairs = agent.pairs(db, views[chat], list(zone))
        assert pairs and all(len(f) == len(FEATURES) for _, f in pairs)
        mates = {c.id: model.probability(f) for c, f in pairs
                 if mem.fused_of(c.id) == mem.fused_of(chat)}
        assert mates and max(mates.values()) >= model.threshold
    finally:
        mem.close()


def test_a_pair_model_weighs_products_of_two_features(tmp_path: Path) -> None:
    import math

    from memfuse_lite.fusion.pairs import BRIDGE, FEATURES, PairModel

    weights = np.zeros(len(FEATURES) + 1)
    weights[FEATURES.index("bias")] = -1.0
    weights[-1] = 4.0  # rare_share x same_source
    model = PairModel(weights, 0.5, {}, (("rare_share", "same_source"),))
    row = [0.0] * len(FEATURES)
    row[FEATURES.index("bias")] = 1.0
    row[FEATURES.index("rare_share")] = 0.5
    assert model.probability(row) == pytest.approx(1 / (1 + math.e))  # other app: no product
    row[FEATURES.index("same_source")] = 1.0
    assert model.probability(row) == pytest.approx(1 / (1 + math.exp(-1.0)))
    (tmp_path / "m.json").write_text(model.to_json())
    assert PairModel.load(tmp_path / "m.json").crosses == model.crosses
    assert PairModel.load(tmp_path / "m.json").bridge == BRIDGE, "a model file names its bridge"
    (tmp_path / "m.json").write_text(replace(model, bridge=0.6).to_json())
    assert PairModel.load(tmp_path / "m.json").bridge == 0.6
    with pytest.raises(ValueError, match="at most 1"):
        replace(model, bridge=1.5)
    with pytest.raises(ValueError, match="unknown"):
        PairModel(weights, 0.5, {}, (("rare_share", "colour"),))
    with pytest.raises(ValueError, match="do not match"):
        PairModel(weights[:-1], 0.5, {}, (("rare_share", "same_source"),))


def test_the_shipped_model_scores_as_the_fitting_script_reads_it() -> None:
    """Fusion scores without building :func:`design`'s matrix; the fit reads that matrix."""
    from memfuse_lite.fusion.pairs import FEATURES, PairModel, design

    model = PairModel.load()
    assert model.crosses, "the shipped model weighs products of features"
    rows = np.random.default_rng(3).uniform(-1.0, 2.0, (40, len(FEATURES)))
    expected = 1.0 / (1.0 + np.exp(-(design(rows, model.crosses) @ model.weights)))
    assert model.probabilities(rows) == pytest.approx(expected, rel=1e-12)


def test_a_summary_less_its_layout_is_what_its_lead_member_says() -> None:
    from memfuse_lite.fusion.summary import template_summary, without_layout

    rows = [(1, "ana", "calendar", "家长会 周五 15:00 实验小学", "2025-03-03T08:00",
             "2025-03-07T15:00", None),
            (2, "ben", "chat", "ok", "2025-03-09T09:00", None, None)]
    summary, _, _ = template_summary(rows)
    assert summary.startswith("2025-03-07 – 2025-03-09: ") and "(2 reports from" in summary
    assert without_layout(summary) == "家长会 周五 15:00 实验小学"
    assert without_layout(template_summary(rows[:1])[0]) == "家长会 周五 15:00 实验小学"


def test_terms_of_an_older_format_are_made_again_before_fusing(tmp_path: Path, embedder,
                                                               model_dir: Path) -> None:
    from memfuse_lite.fusion.terms import TERMS_FORMAT

    cfg = MemFuseConfig(model_dir=model_dir, fusion=FusionConfig(scorer="learned"))
    mem = MemFuse(tmp_path / "m", config=cfg, embedder=embedder)
    ingest(mem, DENTIST)
    read = "SELECT term, event_id FROM event_terms ORDER BY term, event_id"
    with mem.engine.store.reading() as db:
        made = db.execute(read).fetchall()
    assert ("appoint", event_id(mem, "den-chat")) in made, "English words are kept stemmed"
    with mem.engine.store.atomic() as db:  # as an older version left them: unstemmed
        db.execute("UPDATE meta SET value = '1' WHERE key = 'event_terms_format'")
        db.execute("DELETE FROM event_terms")
        db.execute("INSERT INTO event_terms (term, event_id) VALUES ('appointments', ?)",
                   (event_id(mem, "den-chat"),))
    mem.close()
    again = MemFuse(tmp_path / "m", config=cfg, embedder=embedder)
    try:  # opening writes nothing (a search never waits for the terms): the next batch does
        ingest(again, TRIP)
        with again.engine.store.reading() as db:
            now = db.execute(read).fetchall()
            assert db.execute("SELECT value FROM meta WHERE key = 'event_terms_format'"
                              ).fetchone()[0] == TERMS_FORMAT
        assert set(made) < set(now)
        assert ("appointments", event_id(again, "den-chat")) not in now
    finally:
        again.close()


def view(i: int, source: str, user: str, ts: str, text: str) -> EventView:
    """An event's fusion view as extraction would make it (no vector)."""
    at = parse_ts(ts)
    span = event_time_of(source, text, {}, at)
    return view_of(EventRecord(
        id=i, text=text, audience=None, ts=to_iso(at), ts_epoch=to_epoch(at), user=user,
        source=source, event_start=to_iso(span[0]) if span else None,
        event_end=to_iso(span[1]) if span else None, entities=entities_of(text),
        actors=actors_of(source, text, {}, user), embedding=np.zeros(4, dtype=np.float32)))


def test_the_order_edge_comes_from_the_member_the_event_matches_best() -> None:
    """Within an episode, an event's order edge comes from the earlier member it matches
    best (the message a reply answers), not from whatever was recorded last."""
    ask = view(1, "chat", "ana", "2025-03-03T09:00",
               "Can you pick up the kids on Thursday? The dentist moved me to 16:00")
    photo = view(2, "photo", "ana", "2025-03-03T09:30", "Photo of the school gate")
    reply = view(3, "chat", "ben", "2025-03-03T10:00",
                 "Yes, I will pick up the kids on Thursday")
    # in score order, as fusion hands them over: the question first, the photo second
    scored = [((0.9, 0.8), ask), ((0.4, 0.3), photo)]
    order = [(ed.src, ed.dst) for ed in episode_edges(
        reply, scored, {1: 7, 2: 7}, 7, None, FusionConfig(scorer="rules")) if ed.kind == "causal"]
    assert order == [(1, 3)]


def test_the_stated_cause_is_the_latest_earlier_record_naming_it() -> None:
    """"…, so I can't make dinner": the cause is the latest earlier record holding two
    of the clause's key words, not the plan the message moves, not last week's message
    alike, nor one recorded after it, and on the day the clause names if it names a past
    one; "so far" states no cause."""
    effect = view(5, "chat", "ana", "2025-01-19T08:50",
                  "My flight is delayed, I now land in Singapore at 13:40. I moved the "
                  "meeting with Lucas Martin to tomorrow, so I can't make dinner tonight")
    plan = view(1, "calendar", "ana", "2025-01-15T09:00",
                "Meeting with Lucas Martin in Singapore, Sunday 19 January 15:00")
    last_week = view(2, "chat", "ana", "2025-01-12T08:20",
                     "My flight is delayed, I now land in Chengdu at 14:20. I moved the "
                     "meeting with Kenji Ito to tomorrow, so I can't make dinner tonight")
    booking = view(3, "email", "ana", "2025-01-16T10:00",
                   "Booking confirmed: flight CZ5502 to Singapore on Sunday 19 January")
    notice = view(4, "push", "ana", "2025-01-19T08:30",
                  "Flight CZ5502 is delayed by 2 hours due to a crew shortage")
    later = view(6, "push", "ana", "2025-01-19T09:30", "Flight CZ5502 is delayed again")
    everything = [plan, last_week, booking, notice, later]
    assert stated_cause(effect, everything) == notice
    assert stated_cause(effect, [plan, last_week, booking, later]) == booking
    assert stated_cause(effect, [plan, last_week]) is None
    sms = view(7, "sms", "mia", "2025-01-19T09:00",
               "To Li Wei: sorry, tonight's dinner is off, Ana is stuck because the flight "
               "was delayed")
    own = view(8, "chat", "mia", "2025-01-19T08:55",
               "My flight is delayed too, I land at 15:00")
    assert stated_cause(sms, [effect, own]) == effect, "the person it names comes first"
    rain = view(11, "note", "ana", "2025-08-04T20:30",
                "Exercise record, note on August 4th: due to the rain yesterday, I switched "
                "to indoor exercise")
    class_ = view(12, "push", "ana", "2025-08-03T09:55",
                  "Fitness app: your indoor exercise class starts at 10:00")
    skating = view(13, "push", "ana", "2025-08-04T18:15",
                   "Fitness app: indoor exercise completed, 40 minutes of roller skating")
    assert stated_cause(rain, [class_, skating]) == class_, "the day the clause names"
    water = view(9, "push", "ben", "2025-01-19T10:00", "Reminder: drink water (1850 ml so far)")
    assert stated_cause(water, [view(10, "push", "ben", "2025-01-19T09:00",
                                     "Reminder: drink water (900 ml so far)")]) is None


def test_names_keep_apart_what_one_app_reports_alike(open_memory) -> None:
    """A memory whose names an event does not share is another happening when the memory
    holds a record of the event's own app (next week's meeting in the calendar); an event
    from another app may name other people (the message to a friend about the meeting)."""
    from memfuse_lite.fusion.agent import _another_of_its_kind

    mem = open_memory()
    ingest(mem, [("m1", "calendar", "ben", "laptop", "2025-01-11T10:29",
                  "Meeting with Kenji Ito in Berlin, Monday 13 January 15:00", {}, "household")])
    meeting = view(event_id(mem, "m1"), "calendar", "ben", "2025-01-11T10:29",
                   "Meeting with Kenji Ito in Berlin, Monday 13 January 15:00")
    target = mem.fused_of(meeting.id)
    scored = [((0.9, 0.8), meeting)]
    fused_of = {meeting.id: target}
    next_week = view(90, "calendar", "ben", "2025-01-18T10:29",
                     "Meeting with Priya Nair in Berlin, Monday 20 January 15:00")
    to_friend = view(91, "sms", "ben", "2025-01-13T09:00",
                     "To Li Wei: the meeting in Berlin runs late, dinner tomorrow instead?")
    moved = view(92, "calendar", "ben", "2025-01-12T18:00",
                 "Meeting with Kenji Ito in Berlin moved to Tuesday 14 January 15:00")
    with mem.engine.store.reading() as db:
        assert _another_of_its_kind(db, next_week, target, scored, fused_of)
        assert not _another_of_its_kind(db, to_friend, target, scored, fused_of)
        assert not _another_of_its_kind(db, moved, target, scored, fused_of)


def test_a_report_of_a_change_replaces_the_one_plan_it_is_about() -> None:
    """A report that moves, cancels or swaps part of a plan supersedes that plan, across
    fused memories; news about a plan at its own time, plans of other days and records
    written when they happened are not what it replaces."""
    from memfuse_lite.fusion.plans import DAY, replaced_plans, restates

    cal = view(1, "calendar", "ana", "2025-02-15T08:28",
               "Eye test – Dr. Ibrahim, Wednesday 19 February 16:00 at Ibrahim Care Clinic")
    other = view(2, "calendar", "ana", "2025-02-15T09:00",
                 "Dentist – Dr. Okafor, Thursday 20 February 10:00 at Okafor Dental Clinic")
    news = view(3, "sms", "ana", "2025-02-18T10:44",
                "Ibrahim Care Clinic: we are sorry, Dr. Ibrahim double-booked the slot. Your "
                "eye test appointment on Wednesday 19 February has to be rebooked.")
    moved = view(4, "chat", "ana", "2025-02-18T11:20",
                 "The clinic rang: my eye test appointment is now Wednesday 26 February "
                 "17:30, can you take the kids?")
    reminder = view(11, "push", "mia", "2025-02-15T20:54",
                    "Family calendar: Ana's eye test appointment Wednesday 19 February 16:00")
    kids = view(12, "push", "ana", "2025-02-16T20:00",
                "Family calendar: Mia's eye test appointment Tuesday 18 February 10:00")
    week = 3 * DAY
    assert replaced_plans(moved, [cal, other, news], week) == [cal], "a week later, still it"
    assert replaced_plans(moved, [cal, other, news, reminder], week) == [cal, reminder], \
        "the plan and its copy at the same time"
    assert replaced_plans(news, [cal, other], week) == [], "news at the plan's own time"
    assert replaced_plans(cal, [other], week) == [], "a plan reports no change"
    # Ana's phone also holds Mia's appointment, a later plan of hers: the clinic's news
    # in the report's fused memory says which one moved
    assert replaced_plans(moved, [cal, kids], week) == [kids]
    assert replaced_plans(moved, [cal, kids], week, mates=[news]) == [cal]
    # another doctor's eye test the same Wednesday, written down later: the news names
    # Dr. Ibrahim's, which is the one that moved
    second = view(15, "calendar", "ana", "2025-02-16T08:00",
                  "Eye test – Dr. Moreau, Wednesday 19 February 10:00 at Moreau Care Clinic")
    assert replaced_plans(moved, [cal, second], week, mates=[news]) == [cal]
    dinner = view(5, "chat", "mia", "2025-01-07T12:48",
                  "Dinner with Wang Fang at Cafe Soleil on Wednesday 8 January 19:30, booked")
    swap = view(6, "sms", "mia", "2025-01-08T14:30",
                "From Wang Fang: Cafe Soleil is full tonight, let's meet at Trattoria Roma "
                "instead, same time")
    assert replaced_plans(swap, [dinner], week) == [dinner]
    # the same restaurant full that night, in a message from another guest: not this dinner
    # another meeting at the same hour, with a person the report names for something else
    kenji = view(19, "calendar", "ana", "2025-01-20T10:00",
                 "Meeting with Kenji Ito in Singapore, Friday 24 January 15:00")
    priya = view(20, "calendar", "ben", "2025-01-22T10:00",
                 "Meeting with Priya Nair in Berlin, Friday 24 January 15:00")
    delayed = view(21, "chat", "ana", "2025-01-24T06:20",
                   "My flight is delayed, I now land in Singapore at 13:10. I moved the meeting "
                   "with Kenji Ito to tomorrow, so I can't make dinner with Priya Nair tonight")
    assert replaced_plans(delayed, [kenji, priya], week) == [kenji]
    # (the messages' contacts, as an SMS's metadata names them)
    elsewhere = replace(view(17, "sms", "ben", "2025-01-08T14:30",
                             "来自Tom Becker：Cafe Soleil今晚满了，改去Lotus Garden吧，时间不变"),
                        actors=frozenset({"tom becker"}))
    assert replaced_plans(elsewhere, [dinner], week) == []
    from_guest = replace(view(18, "sms", "mia", "2025-01-08T14:30",
                              "来自Wang Fang：Cafe Soleil今晚满了，改去Trattoria Roma吧，时间不变"),
                         actors=frozenset({"wang fang"}))
    assert replaced_plans(from_guest, [dinner], week) == [dinner]
    party = view(7, "calendar", "ana", "2025-01-07T09:05",
                 "Wang Fang's birthday party at Cafe Soleil, Friday 10 January 18:00")
    off = view(8, "sms", "mia", "2025-01-08T09:00",
               "To Wang Fang: sorry, tonight's dinner at Cafe Soleil is cancelled")
    assert replaced_plans(off, [dinner, party], week) == [dinner], "tonight's, not Friday's"
    # "is off" cancels; with "delayed" beside it, it used to read as a move to tonight
    stuck = view(16, "sms", "mia", "2025-01-08T09:00",
                 "To Wang Fang: sorry, tonight's dinner is off, Ben is stuck because the "
                 "flight was delayed")
    assert replaced_plans(stuck, [dinner, party], week) == [dinner], "tonight's, not Friday's"
    written_after = view(9, "note", "mia", "2025-01-09T08:00",
                         "Dinner with Wang Fang at Cafe Soleil on Wednesday 8 January 19:30")
    late = view(10, "chat", "mia", "2025-01-09T09:00",
                "Dinner with Wang Fang at Cafe Soleil moved to Friday 10 January 20:00")
    assert replaced_plans(late, [written_after], week) == [], "no plan: written after it"
    # a plan made again after a cancellation that named no time restates the happening
    called_off = view(13, "sms", "ana", "2025-03-01T09:00",
                      "Dinner with the Wangs at Haidilao is cancelled")
    again = view(14, "chat", "ben", "2025-03-01T12:00",
                 "Dinner with the Wangs at Haidilao, Friday 7 March 19:00")
    assert called_off.start is None
    assert restates(again, called_off)
    # another user's entry for the same company, written after the first visit began
    visit = view(22, "calendar", "ana", "2025-01-07T09:50",
                 "FixIt Home Services technician visit, Wednesday 8 January 09:00")
    next_visit = view(23, "calendar", "ben", "2025-01-08T09:50",
                      "FixIt Home Services technician visit, Thursday 9 January 13:00")
    restated = view(24, "calendar", "ben", "2025-01-08T08:30",
                    "FixIt Home Services technician visit, Thursday 9 January 13:00")
    assert not restates(next_visit, visit), "a second visit"
    assert restates(restated, visit), "written before it was due: the same visit, moved"
