"""Record identity: copies of one record are stored once, distinct records never merged."""

from __future__ import annotations

import json
import time
from pathlib import Path

import apsw

from memfuse_lite import Observation
from memfuse_lite.store import Store
from memfuse_lite.store.migrations import MIGRATIONS


def sms(ext: str = "", *, text: str = "Yes", device: str = "phone", to: str = "Lena",
        visibility: object = "household", ts: str = "2025-03-04T12:10",
        direction: str = "sent") -> Observation:
    return Observation(source="sms", user="ana", ts=ts, text=text, external_id=ext,
                       device=device, meta={"to": to, "direction": direction},
                       visibility=visibility)  # type: ignore[arg-type]


def statuses(store: Store, records: list[Observation]) -> list[str]:
    return [r.status for r in store.insert_observations(records)]


def test_two_replies_to_two_people_are_two_records(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    both = [sms("sms-1", to="Lena"), sms("sms-2", to="Tom", visibility="private")]
    assert statuses(store, both) == ["accepted", "accepted"]
    store.close()


def test_the_same_reply_twice_in_a_minute_from_one_device_is_two_records(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    assert statuses(store, [sms("m-1"), sms("m-2")]) == ["accepted", "accepted"]
    assert statuses(store, [sms("m-1"), sms("m-2")]) == ["duplicate", "duplicate"]
    store.close()


def test_a_copy_from_another_device_or_without_an_id_is_one_record(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    assert statuses(store, [sms("phone-81", device="phone")]) == ["accepted"]
    assert statuses(store, [sms("laptop-3", device="laptop")]) == ["duplicate"]
    assert statuses(store, [sms("", device="phone")]) == ["duplicate"]
    assert statuses(store, [sms("", device="phone")]) == ["duplicate"]  # re-import: idempotent
    assert statuses(store, [sms("", direction="received")]) == ["accepted"]
    assert statuses(store, [sms("", ts="2025-03-04T12:11")]) == ["accepted"]
    store.close()


def test_a_copy_that_would_show_more_people_is_kept(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    assert statuses(store, [sms("p-1", visibility="private")]) == ["accepted"]
    wider = sms("l-1", device="laptop")  # the household's copy: merging it would hide it
    assert statuses(store, [wider]) == ["accepted"]
    narrower = sms("t-1", device="tablet", visibility=["ben"])
    assert statuses(store, [narrower]) == ["duplicate"]  # the household copy shows it to ben
    store.close()


def test_old_memories_keep_every_record_and_stop_merging_distinct_ones(tmp_path: Path) -> None:
    """A memory written before identities (unique hash of source, user, time and text)."""
    path = tmp_path / "db"
    db = apsw.Connection(str(path))
    with db:
        db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY,"
                   " name TEXT NOT NULL, applied_at REAL NOT NULL)")
        for version, name, sql in MIGRATIONS[:4]:
            sql(db) if callable(sql) else db.execute(sql)  # type: ignore[func-returns-value]
            db.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)", (version, name, 0.0))
        old = sms("sms-1", to="Lena")
        db.execute(
            "INSERT INTO observations (source, external_id, user, device, ts, ts_epoch, text,"
            " meta, visibility, content_hash, ingested_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            ("sms", "sms-1", "ana", "phone", "2025-03-04T12:10:00", 1741090200.0, "Yes",
             json.dumps(old.meta), json.dumps("household"), "the-old-hash", time.time()))
        db.execute("INSERT INTO inbox VALUES (1, 0)")
    db.close()

    store = Store(path)
    assert store.schema_version() == MIGRATIONS[-1][0]
    assert store.load_observations([1])[0].observation == old
    assert store.pending() == [1]
    # the old key dropped this one; it is a record of its own now, and a copy stays one
    # (the memory reads times without an offset as UTC, as it always did)
    copy = sms("", device="laptop", ts="2025-03-04T12:10:00+00:00")
    assert statuses(store, [sms("sms-2", to="Tom"), copy]) == ["accepted", "duplicate"]
    store.close()
