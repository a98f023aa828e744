"""The SQLite store: migrations, transactions, duplicates, corruption."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest

from memfuse_lite import StoreCorrupt, StoreError
from memfuse_lite.store import Store
from memfuse_lite.store.migrations import MIGRATIONS

from .conftest import obs


def test_migrations_are_recorded_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    store.close()
    store = Store(tmp_path / "db")
    with store.reading() as db:
        rows = db.execute("SELECT version FROM schema_migrations").fetchall()
    assert [r[0] for r in rows] == [m[0] for m in MIGRATIONS]
    assert store.schema_version() == MIGRATIONS[-1][0]
    with store.reading() as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()


def test_atomic_nests_as_savepoints_and_rolls_back(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    with store.atomic() as db:
        db.execute("INSERT INTO meta VALUES ('outer', '1')")
        with pytest.raises(RuntimeError), store.atomic() as inner:
            inner.execute("INSERT INTO meta VALUES ('inner', '1')")
            raise RuntimeError("undo the inner savepoint only")
    assert store.meta_get("outer") == "1"
    assert store.meta_get("inner") is None
    with pytest.raises(StoreError), store.atomic() as db:
        db.execute("INSERT INTO meta VALUES ('x', '1')")
        db.execute("INSERT INTO meta VALUES ('x', '2')")  # primary key violation
    assert store.meta_get("x") is None
    store.close()


def test_duplicates_by_key_and_by_content(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    first = obs("dentist moved to Thursday", ext="a1", device="phone")
    same_key = obs("edited text, same record id", ext="a1")
    same_content = obs("dentist moved to Thursday", ext="other-id", device="laptop")
    results = store.insert_observations([first, same_key, same_content])
    assert [r.status for r in results] == ["accepted", "duplicate", "duplicate"]
    assert {r.observation_id for r in results} == {results[0].observation_id}
    assert store.counts()["observations"] == 1
    assert store.pending() == [results[0].observation_id]
    loaded = store.load_observations([results[0].observation_id])[0].observation
    assert loaded == first
    store.close()


def test_corrupt_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreCorrupt, match="not a readable memfuse_lite database"):
        Store(path)


def test_full_durability_syncs_every_commit(tmp_path: Path, embedder, model_dir: Path) -> None:
    import asyncio

    from memfuse_lite import MemFuse, MemFuseConfig

    full = MemFuseConfig(model_dir=model_dir, durability="full")
    mem = MemFuse(tmp_path / "m", config=full, embedder=embedder)
    with mem.engine.store.reading() as db:
        assert db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    asyncio.run(mem.ingest(obs("Dentist moved to Thursday 4pm")))
    mem.close()
    again = MemFuse(tmp_path / "m", config=MemFuseConfig(model_dir=model_dir), embedder=embedder)
    try:
        with again.engine.store.reading() as db:
            assert db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert again.stats()["observations"] == 1
    finally:
        again.close()


def test_read_once_loads_each_id_once_and_rereads_what_it_may_not_keep() -> None:
    from memfuse_lite.once import ReadOnce

    calls: list[list[int]] = []

    def load(ids: list[int]) -> dict[int, str]:
        calls.append(ids)
        return {i: f"v{i}" for i in ids if i != 9}  # 9 does not exist

    rows = ReadOnce(load, keep=lambda i: i < 5)
    assert rows.get([3, 7, 9, 3]) == {3: "v3", 7: "v7"}
    assert rows.get([7, 3]) == {7: "v7", 3: "v3"}, "in the order asked"
    assert calls == [[3, 7, 9], [7]], "3 was kept; 7 may not be kept, so it is read again"


def test_a_shared_memo_of_recent_reads_outlives_one_reader_and_drops_the_oldest() -> None:
    from memfuse_lite.once import ReadOnce, Recent

    calls: list[list[int]] = []

    def load(ids: list[int]) -> dict[int, str]:
        calls.append(ids)
        return {i: f"v{i}" for i in ids}

    memo: Recent[int, str] = Recent(2)
    assert ReadOnce(load, memo=memo).get([1, 2]) == {1: "v1", 2: "v2"}
    assert ReadOnce(load, memo=memo).get([1, 3]) == {1: "v1", 3: "v3"}, "1 came from the memo"
    assert ReadOnce(load, memo=memo).get([2, 1]) == {2: "v2", 1: "v1"}
    assert calls == [[1, 2], [3], [2]], "2 was the least recently used when 3 came"
    assert len(memo) == 2
    nothing: Recent[int, str] = Recent(0)
    ReadOnce(load, memo=nothing).get([5])
    assert len(nothing) == 0
    with pytest.raises(ValueError):
        Recent(-1)


def test_messages_stored_before_conversations_were_kept_get_theirs(tmp_path: Path, embedder,
                                                                   model_dir: Path) -> None:
    """Opening a memory written before migration 4 reads each stored message's
    conversation from its observation's fields."""
    import asyncio

    from memfuse_lite import MemFuse, MemFuseConfig

    async def write() -> None:
        async with MemFuse(tmp_path / "m", config=MemFuseConfig(model_dir=model_dir),
                           embedder=embedder) as mem:
            await mem.ingest_many([obs("are you free on Saturday?", source="sms",
                                       meta={"contactName": "Lena"}),
                                   obs("bought milk", source="note")])
            await mem.flush()

    asyncio.run(write())
    store = Store(tmp_path / "m" / "memfuse.db")
    with store.atomic() as db:  # as the schema was before
        db.execute("ALTER TABLE events DROP COLUMN thread")
        db.execute("DELETE FROM schema_migrations WHERE version = 4")
    store.close()
    store = Store(tmp_path / "m" / "memfuse.db")
    with store.reading() as db:
        threads = db.execute("SELECT source, thread FROM events ORDER BY id").fetchall()
    store.close()
    assert threads == [("sms", "contactName:lena"), ("note", None)]


RECORDS_OF_EVERY_KIND = [
    ("sms", "ana", "2025-03-02T09:15:00", "ok", {"contactName": "Lena  Park", "type": 1}),
    ("sms", "ana", "2025-03-02T09:15:00+01:00", "ok", {"phoneNumber": "+1 (555) 010-2000"}),
    ("chat", "ben", "2025-03-02T09:15:00Z", "see you", {"participants": ["Mia", "ana"],
                                                        "seq": 2, "device_id": "x"}),
    ("chat", "ben", "2025-03-02T09:15:30.250000", "群里好", {"group": "家人，朋友"}),
    ("mms", "mia", "2025-03-02T09:15:00", "photo", {"thread_id": 42, "address": "5550102000"}),
    ("call", "ana", "2025-03-02T10:00:00", "call", {"contact": {"name": "Dr. Tanaka"},
                                                     "duration_s": 60, "direction": "in"}),
    ("calendar", "ana", "2025-03-02T10:00:00", "Dentist", {"location": "Main St",
                                                           "start": "2025-03-06T15:00"}),
    ("photo", "ben", "2025-03-02T10:00:00", "IMG_1.jpg", {"file": "IMG_1.jpg"}),
    ("unregistered", "ben", "2025-03-02T10:00:00", "x", {}),
]


def test_the_rules_migrations_4_and_5_were_written_with_still_hold() -> None:
    """Migrations 4 and 5 read stored rows by their own frozen copy of the rules. When
    today's ``thread_of`` or ``record_identity`` part from it, stored rows no longer agree
    with what new records get: write a migration that rewrites them, then update this."""
    from memfuse_lite.sources import record_identity, thread_of
    from memfuse_lite.store.migration_rules import identity_v5, thread_v4
    from memfuse_lite.timeutil import instant_key, parse_ts

    for source, user, ts, text, meta in RECORDS_OF_EVERY_KIND:
        when = parse_ts(ts)
        when = when if when.tzinfo else when.replace(tzinfo=UTC)
        assert thread_v4(source, meta) == thread_of(source, meta), (source, meta)
        assert identity_v5(source, user, ts, text, meta) == record_identity(
            source, user, instant_key(when), text, meta), (source, meta)
    assert thread_v4("sms", {"contactName": "Lena  Park"}) == "contactName:lena park"


def test_migrations_run_no_code_that_may_change() -> None:
    """Only SQL, the standard library and the frozen rules: what a migration writes is
    fixed when it is written."""
    import ast

    from memfuse_lite.store import migrations

    tree = ast.parse(Path(migrations.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for alias in node.names}
    assert imported <= {"__future__", "json", "collections.abc", "apsw", "migration_rules"}


def test_a_write_after_another_connection_committed_waits_instead_of_failing(
        tmp_path: Path) -> None:
    """Two processes' connections (a reader handing records over, the owner committing a
    batch): the one that read first must not fail when it writes after the other
    committed; it takes the write lock as its transaction begins."""
    import threading

    first, second = Store(tmp_path / "db"), Store(tmp_path / "db")
    done: list[object] = []
    with second.atomic() as db:
        db.execute("SELECT count(*) FROM observations").fetchone()  # a read snapshot
        other = threading.Thread(target=lambda: done.append(
            first.insert_observations([obs("from the other process", ext="o1")])))
        other.start()
        other.join(timeout=1.0)  # it waits for this transaction (or, unfixed, commits now)
        db.execute("INSERT INTO meta VALUES ('written', 'after the other began')")
    other.join()
    assert second.meta_get("written") and len(done) == 1
    assert first.counts()["observations"] == 1
    first.close()
    second.close()
