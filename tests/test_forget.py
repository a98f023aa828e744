"""forget(): observations and everything derived from them go, everywhere, for good."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from pathlib import Path

import pytest

from memfuse_lite import InvalidQuery, MemFuse, MemFuseConfig, NotFound, Observation
from memfuse_lite.config import FusionConfig, IndexConfig, IngestConfig
from memfuse_lite.fusion.runtime import FUSED_DOCS_DIRTY
from memfuse_lite.fusion.terms import event_terms
from memfuse_lite.index import EVENT, FUSED

from .conftest import FakeEmbedder
from .scenarios import DENTIST, TRIP, observations

PIPELINES = ("bm25", "dense", "hybrid", "fused", "agentic")
SECRET = "zebracrossing"  # a word only the forgotten records contain


def text_docs(mem: MemFuse, word: str) -> set[tuple[str, int]]:
    """(kind, id) of every event and fused-memory document matching ``word``."""
    return {(h.kind, h.id) for h in mem.engine.text.search(word, "ana", 50,
                                                           kinds=(EVENT, FUSED))}


def _config(tmp_path: Path, ratio: float = 0.1) -> MemFuseConfig:
    # the learned fusion scorer keeps each event's words (event_terms): forgetting must
    # remove those too
    return MemFuseConfig(model_dir=tmp_path, ingest=IngestConfig(batch_size=4,
                         batch_latency_s=0.005), index=IndexConfig(compact_deleted_ratio=ratio),
                         fusion=FusionConfig(scorer="learned"))


def _build(path: Path, config: MemFuseConfig, extra: list[Observation] = ()) -> MemFuse:
    mem = MemFuse(path, config=config, embedder=FakeEmbedder())

    async def run() -> None:
        await mem.ingest_many(observations(DENTIST + TRIP) + list(extra))
        await mem.flush()

    asyncio.run(run())
    return mem


FRUIT = ("papaya", "quince", "lychee", "durian")


def secret_chats() -> list[Observation]:
    return [Observation(source="chat", user="ana", ts=f"2025-03-04T12:{m:02d}",
                        text=f"dentist {SECRET} note {FRUIT[m - 11]}: Dr. Lin clinic",
                        external_id=f"z{m}") for m in range(11, 15)]


def assert_consistent(mem: MemFuse) -> set[int]:
    with mem.engine.store.reading() as db:
        events = {int(r[0]) for r in db.execute("SELECT id FROM events")}
        orphans = db.execute("SELECT count(*) FROM fused_memories f WHERE NOT EXISTS (SELECT 1"
                             " FROM fused_members m WHERE m.fused_id = f.id)").fetchone()[0]
        dangling = db.execute("SELECT count(*) FROM edges WHERE src NOT IN (SELECT id FROM"
                              " events) OR dst NOT IN (SELECT id FROM events)").fetchone()[0]
        dangling += db.execute("SELECT count(*) FROM event_terms WHERE event_id NOT IN"
                               " (SELECT id FROM events)").fetchone()[0]
    assert mem.engine.dense.labels() == events == mem.engine.text.labels()
    assert orphans == 0 and dangling == 0
    return events


def assert_nothing_of(mem: MemFuse, sources: set[str], word: str) -> None:
    # no event nor fused-memory document
    assert mem.engine.text.search(word, "ana", 50, kinds=(EVENT, FUSED)) == []
    with mem.engine.store.reading() as db:
        term, = event_terms(word)
        assert db.execute("SELECT count(*) FROM event_terms WHERE term = ?",
                          (term,)).fetchone()[0] == 0, "no term of it is kept"
    for viewer in ("ana", "ben"):
        for pipeline in PIPELINES:
            result = mem.search(f"dentist {word}", viewer=viewer, pipeline=pipeline, k=50)
            for hit in result.hits:
                assert word not in hit.text
                assert not {p.source for p in hit.provenance} & sources
            for fused in result.fused:
                assert word not in fused.summary
    with mem.engine.store.reading() as db:
        fids = [int(r[0]) for r in db.execute("SELECT id FROM fused_memories")]
    checked = 0
    for fid in fids:
        for viewer in ("ana", "ben"):
            try:
                fused, members, edges = mem.timeline(fid, viewer=viewer)
            except NotFound:  # no member of this memory is visible to this viewer
                continue
            checked += 1
            assert all(word not in e.text and e.source not in sources for e in members)
            assert word not in fused.summary
    assert checked >= len(fids), "every remaining memory is visible to someone and checked"


def test_forget_by_source_removes_everything_derived(tmp_path: Path) -> None:
    mem = _build(tmp_path / "m", _config(tmp_path), secret_chats())
    before = mem.stats()
    assert any(SECRET in h.text for h in mem.search(SECRET, viewer="ana", pipeline="bm25").hits)
    with mem.engine.store.reading() as db:
        assert db.execute("SELECT count(*) FROM event_terms WHERE term = ?",
                          ("zebracross",)).fetchone()[0] == 4, "its words were kept, stemmed"
    result = mem.forget(source="chat")
    assert result.observations == 4 + sum(1 for r in DENTIST + TRIP if r[1] == "chat")
    assert result.events >= result.observations
    after = mem.stats()
    assert after["observations"] == before["observations"] - result.observations
    assert after["events"] == before["events"] - result.events
    assert_consistent(mem)
    assert_nothing_of(mem, {"chat"}, SECRET)
    mem.close()
    again = MemFuse(tmp_path / "m", config=_config(tmp_path), embedder=FakeEmbedder())
    assert_consistent(again)  # nothing resurrected by the reopen
    assert_nothing_of(again, {"chat"}, SECRET)
    again.close()


def test_forgotten_text_is_gone_from_the_sqlite_files(tmp_path: Path) -> None:
    mem = _build(tmp_path / "m", _config(tmp_path), secret_chats())
    mem.forget(source="chat")
    blob = b"".join(p.read_bytes() for p in (tmp_path / "m").glob("memfuse.db*"))
    assert SECRET.encode() not in blob
    mem.close()


def test_forgetting_one_member_rewrites_its_fused_memory(open_memory) -> None:
    mem = open_memory()  # the real embedder: the dentist records fuse into one memory

    async def run() -> None:
        await mem.ingest_many(observations(DENTIST))
        await mem.flush()

    asyncio.run(run())
    chat = mem.get_event(mem.events_of_observation(
        mem.engine.store.observation_id("ana", "chat", "den-chat"))[0])
    fid = mem.fused_of(chat.id)
    assert fid is not None and len(mem.get_fused(fid, viewer="ana").member_ids) > 1
    # "just" is the forgotten chat's alone ("called" would stem to the call log's "call")
    assert (FUSED, fid) in text_docs(mem, "just")
    result = mem.forget(observation=chat.provenance[0].observation_id)
    assert result.fused_updated == 1 and result.fused_removed == 0
    assert text_docs(mem, "just") == set()  # the fused document was rewritten
    fused = mem.get_fused(fid, viewer="ana")
    assert chat.id not in fused.member_ids and "called" not in fused.summary
    assert (FUSED, fid) in text_docs(mem, "Lin")
    assert_consistent(mem)


def test_forget_by_user_observation_and_time(tmp_path: Path) -> None:
    mem = _build(tmp_path / "m", _config(tmp_path))
    ben = mem.forget(user="ben")
    assert ben.observations == sum(1 for r in DENTIST + TRIP if r[2] == "ben")
    with mem.engine.store.reading() as db:
        assert db.execute("SELECT count(*) FROM events WHERE user = 'ben'").fetchone()[0] == 0
        first = db.execute("SELECT min(id) FROM observations").fetchone()[0]
    one = mem.forget(observation=first)
    assert one.observations == 1
    old = mem.forget(before="2025-03-05T00:00")
    with mem.engine.store.reading() as db:
        assert db.execute("SELECT count(*) FROM observations WHERE ts < '2025-03-05'"
                          ).fetchone()[0] == 0
    assert old.observations > 0
    assert mem.forget(source="no-such-app").observations == 0
    with pytest.raises(InvalidQuery):
        mem.forget()
    assert_consistent(mem)
    mem.close()


def test_a_forgotten_record_can_be_ingested_again(tmp_path: Path) -> None:
    mem = _build(tmp_path / "m", _config(tmp_path), secret_chats())
    mem.forget(source="chat")

    async def again() -> list:
        results = await mem.ingest_many(secret_chats())
        await mem.flush()
        return results

    assert {r.status for r in asyncio.run(again())} == {"accepted"}
    hits = mem.search(SECRET, viewer="ana", pipeline="bm25").hits
    assert hits and all(SECRET in h.text for h in hits)
    assert_consistent(mem)
    mem.close()


def test_dense_index_is_compacted_when_enough_is_deleted(tmp_path: Path) -> None:
    mem = _build(tmp_path / "m", _config(tmp_path, ratio=0.05), secret_chats())
    result = mem.forget(source="chat")
    assert result.dense_compacted
    live = assert_consistent(mem)
    assert mem.engine.dense.index.get_current_count() == len(live)  # no deleted vectors kept
    lazy = _build(tmp_path / "n", _config(tmp_path, ratio=1.0), secret_chats())
    assert not lazy.forget(source="chat").dense_compacted
    assert_consistent(lazy)
    mem.close()
    lazy.close()


CRASH_CHILD = """
import os, sys
from tests.conftest import FakeEmbedder
from tests.test_forget import _config
from pathlib import Path
from memfuse_lite import MemFuse
from memfuse_lite.fusion.runtime import FUSED_DOCS_DIRTY
from memfuse_lite.fusion.terms import event_terms
from memfuse_lite.store.forget import delete_observations, select_observations
mem = MemFuse(sys.argv[1], config=_config(Path(sys.argv[1])), embedder=FakeEmbedder())
with mem.engine.store.atomic() as db:  # what forget() commits first; then the power fails
    gone = delete_observations(db, select_observations(
        db, observations=None, source="chat", user=None, before=None))
    db.execute("INSERT OR REPLACE INTO meta VALUES (?, '1')", (FUSED_DOCS_DIRTY,))
print(len(gone.events), flush=True)
os._exit(0)
"""


def test_a_crash_between_sqlite_and_the_indexes_is_repaired_on_open(tmp_path: Path) -> None:
    mem = _build(tmp_path / "m", _config(tmp_path), secret_chats())
    mem.close()
    child = subprocess.run([sys.executable, "-c", CRASH_CHILD, str(tmp_path / "m")],
                           capture_output=True, text=True, cwd=Path(__file__).parents[1],
                           timeout=120)
    assert child.returncode == 0, child.stderr
    assert int(child.stdout.split()[-1]) > 0
    again = MemFuse(tmp_path / "m", config=_config(tmp_path), embedder=FakeEmbedder())
    assert again.engine.store.meta_get(FUSED_DOCS_DIRTY) is None
    assert_consistent(again)  # the indexes dropped what SQLite no longer has
    assert_nothing_of(again, {"chat"}, SECRET)
    again.close()


def test_after_forget_nothing_of_a_record_can_be_read_from_the_directory(
        tmp_path: Path) -> None:
    """Every file's raw bytes, the text index's term statistics and the dense index's
    vectors (deleted ones included), after forget and close; the index is large enough
    that nothing is compacted away."""
    import hnswlib
    import numpy as np
    import tantivy

    from memfuse_lite.index.sparse import index_terms

    path = tmp_path / "m"
    secret = f"the {SECRET} quokkafinch code is 4471"
    others = [Observation(source="note", user="ana", ts=f"2025-03-{1 + i % 28:02d}T10:00",
                          text=f"errand {i}: groceries and the {'pharmacy' if i % 2 else 'post'}",
                          external_id=f"o{i}") for i in range(60)]
    mem = _build(path, _config(tmp_path, ratio=0.9), [
        *others[:30], Observation(source="note", user="ana", ts="2025-03-04T10:05",
                                  text=secret, external_id="secret"), *others[30:]])
    term = index_terms(SECRET)[0]
    assert len(mem.engine.text) > 0  # commits what the writer holds
    searcher = mem.engine.text.index.searcher()  # type: ignore[attr-defined]
    assert searcher.doc_freq("text", term) == 1
    oid = mem.engine.store.observation_id("ana", "note", "secret")
    assert oid is not None
    events = mem.stats()["events"]
    assert mem.forget(observation=oid).events == 1
    mem.close()

    for file in path.rglob("*"):
        if file.is_file():
            raw = file.read_bytes()
            assert SECRET.encode() not in raw and b"quokkafinch" not in raw, file
    index = tantivy.Index.open(str(path / "sparse"))
    assert index.searcher().doc_freq("text", term) == 0
    assert index.searcher().doc_freq("text", index_terms("pharmacy")[0]) == 30
    dense = hnswlib.Index(space="cosine", dim=FakeEmbedder().info.dims)
    dense.load_index(str(path / "dense.hnsw"))
    labels = dense.get_ids_list()
    for label in labels:  # read the deleted points' vectors too
        with contextlib.suppress(RuntimeError):  # not deleted
            dense.unmark_deleted(label)
    vectors = np.asarray(dense.get_items(labels), dtype=np.float32)
    wanted = FakeEmbedder().embed([secret], "passage")[0]
    wanted = wanted / np.linalg.norm(wanted)
    assert float((vectors @ wanted).max()) < 0.9, "the forgotten vector is still in the file"
    with MemFuse(path, embedder=FakeEmbedder(), config=_config(tmp_path)) as again:
        assert again.stats()["events"] == events - 1
        assert not again.search(SECRET, viewer="ana", pipeline="bm25").hits
        assert len(again.search("pharmacy", viewer="ana", pipeline="bm25", k=50).hits) == 30


@pytest.mark.parametrize("step", ["erase_documents", "upsert_fused", "erase"])
def test_a_forget_interrupted_while_the_text_index_is_rewritten_is_repaired_on_open(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str) -> None:
    from memfuse_lite.index.sparse import TantivyIndex

    path = tmp_path / "m"
    mem = _build(path, _config(tmp_path, ratio=0.9), secret_chats())
    oid = mem.engine.store.observation_id("ana", "chat", "z11")
    assert oid is not None

    def killed(self: TantivyIndex, *args: object, **kwargs: object) -> None:
        raise RuntimeError("killed while writing the text index")

    monkeypatch.setattr(TantivyIndex, step, killed)
    with pytest.raises(RuntimeError, match="killed"):
        mem.forget(observation=oid)
    monkeypatch.undo()
    mem.close()
    with MemFuse(path, embedder=FakeEmbedder(), config=_config(tmp_path)) as again:
        live = again.engine.store.event_ids()
        assert again.engine.text.labels() == live == again.engine.dense.labels()
        found = again.search(SECRET, viewer="ana", pipeline="bm25").hits
        assert sorted(h.provenance[0].external_id for h in found) == ["z12", "z13", "z14"]
