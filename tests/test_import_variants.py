"""Held-out variants of each export format: files written from the formats' documentation
and from the layouts real apps write (Google, Outlook, Apple, Thunderbird and WeChat
calendars; Gmail, Thunderbird and Outlook mail; Apple, Google, Android and Outlook vCards;
SMS Backup & Restore of several versions; WhatsApp on phones in four languages; Telegram
chat and account exports; Keep notes; three Timeline layouts; CSV from banks, notes,
to-do and fitness apps). ``variants-expected.json`` beside the folder holds every record each file must give (time
and text) and why the others are rejected; ``python3 -m bench import --corpus
tests/fixtures/variants`` surveys the same folder."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memfuse_lite.clock import zone_of
from memfuse_lite.importers import ImportContext, read
from memfuse_lite.importers.android import _CharRefs
from memfuse_lite.importers.table import parse_mapping
from memfuse_lite.records import Observation

VARIANTS = Path(__file__).parent / "fixtures" / "variants"
EXPECTED: dict[str, dict[str, Any]] = json.loads(
    (VARIANTS.parent / "variants-expected.json").read_text())


def _context(expected: dict[str, Any]) -> ImportContext:
    return ImportContext(user="me", device="d", tz=zone_of("UTC"),
                         options=parse_mapping(expected["map"]) if "map" in expected else {})


def test_five_variants_of_every_format_at_least() -> None:
    kinds = Counter(e["kind"] for e in EXPECTED.values())
    assert set(kinds) == {"ics", "mail", "vcf", "android-sms", "whatsapp", "telegram", "keep",
                          "timeline", "csv"}
    assert min(kinds.values()) >= 5, kinds
    on_disk = {str(p.relative_to(VARIANTS)) for p in VARIANTS.rglob("*") if p.is_file()}
    assert on_disk == set(EXPECTED), "every file has its expectations"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_variant_gives_its_records(name: str) -> None:
    expected = EXPECTED[name]
    items = read(expected["kind"], VARIANTS / name, _context(expected))
    records = [i for i in items if isinstance(i, Observation)]
    rejected = [i for i in items if not isinstance(i, Observation)]
    assert [o.text for o in records] == [text for _, text in expected["records"]]
    for record, (ts, _) in zip(records, expected["records"], strict=True):
        if ts is not None:  # a contact without a revision time is stamped at its import
            assert record.ts.isoformat() == ts, record.text
    assert sorted({r.reason for r in rejected}) == expected["rejected"]
    assert len(rejected) == expected["rejections"]
    again = read(expected["kind"], VARIANTS / name, _context(expected))
    assert [o.external_id for o in again if isinstance(o, Observation)] == \
        [o.external_id for o in records], "a re-import gives the same ids"
    assert len({o.external_id for o in records}) == len(records), "no record lost as a twin"


def test_the_survey_finds_each_file_s_importer() -> None:
    from bench.import_corpus import survey

    rows = {r["file"]: r for r in survey(VARIANTS, _context({}))}
    for name, expected in EXPECTED.items():
        if "map" in expected:  # a table whose columns have no common names
            assert "give --map" in rows[name]["reasons"][0]
            continue
        assert rows[name]["read"] == len(expected["records"]), name
        if expected["records"]:  # a file that gives nothing names no format
            assert rows[name]["kind"] == expected["kind"], name


@pytest.mark.parametrize("block", [1, 2, 3, 7, 16, 17, 64, 4096])
def test_emoji_references_cut_by_any_block_edge(block: int) -> None:
    raw = ("<a b='x &#55357;&#56832;&#10;&#55356;&#57225; y &#65; &#55357;'/>" * 5).encode()
    reader, out = _CharRefs(io.BytesIO(raw)), b""
    while piece := reader.read(block):
        out += piece
    assert out.decode() == ("<a b='x 😀&#10;🎉 y &#65; &#55357;'/>" * 5)


# -- binary formats: written here, one variant each --------------------------------------

def _photo(path: Path, when: str | None, *, ifd0_only: bool = False,
           gps: tuple[str, float, str, float] | None = None, fmt: str | None = None) -> Path:
    from PIL import Image

    exif = Image.Exif()
    exif[0x010F], exif[0x0110] = "Phone", "Model 7"
    if when is not None:
        if ifd0_only:
            exif[0x0132] = when  # DateTime only: scanners and some apps
        else:
            exif.get_ifd(0x8769)[0x9003] = when
    if gps is not None:
        place = exif.get_ifd(0x8825)
        place[1], place[3] = gps[0], gps[2]
        place[2], place[4] = (gps[1], 0.0, 0.0), (gps[3], 0.0, 0.0)
    Image.new("RGB", (8, 8), "white").save(path, format=fmt, exif=exif)
    return path


def test_photo_variants(tmp_path: Path) -> None:
    ctx = _context({})
    cases = {
        _photo(tmp_path / "scan.jpg", "2026:03:07 09:15:00", ifd0_only=True):
            ("2026-03-07T09:15:00+00:00", None),
        _photo(tmp_path / "west.jpg", "2026:03:07 10:00:00", gps=("N", 40.0, "W", 74.0)):
            ("2026-03-07T10:00:00+00:00", {"lat": 40.0, "lon": -74.0}),
        _photo(tmp_path / "no-fix.jpg", "2026:03:07 11:00:00", gps=("N", 0.0, "E", 0.0)):
            ("2026-03-07T11:00:00+00:00", None),  # 0°, 0°: a camera without a fix
        _photo(tmp_path / "shot.png", "2026:03:07 12:00:00", fmt="PNG"):
            ("2026-03-07T12:00:00+00:00", None),
        _photo(tmp_path / "shot.tif", "2026:03:07 13:00:00", ifd0_only=True, fmt="TIFF"):
            ("2026-03-07T13:00:00+00:00", None),
        _photo(tmp_path / "unset-clock.jpg", "0000:00:00 00:00:00"): (None, None),
    }
    for path, (ts, gps) in cases.items():
        (item,) = read("photos", path, ctx)
        if ts is None:
            assert not isinstance(item, Observation) and "capture time" in item.reason
            continue
        assert isinstance(item, Observation), (path.name, item)
        assert item.ts.isoformat() == ts, path.name
        assert item.meta.get("gps") == gps, path.name


def test_messages_database_variants(tmp_path: Path) -> None:
    """A group chat, a tapback, a message sent to the group, an unsent one (no text), and
    a database of an older system without the reactions column."""
    import apsw

    def database(path: Path, reactions: bool) -> Path:
        db = apsw.Connection(str(path))
        db.execute(f"""
            CREATE TABLE handle (ROWID INTEGER PRIMARY KEY, id TEXT);
            CREATE TABLE chat (ROWID INTEGER PRIMARY KEY, chat_identifier TEXT,
                               display_name TEXT);
            CREATE TABLE message (ROWID INTEGER PRIMARY KEY, guid TEXT, text TEXT,
                attributedBody BLOB, date INTEGER, is_from_me INTEGER, service TEXT,
                handle_id INTEGER{', associated_message_type INTEGER' if reactions else ''});
            CREATE TABLE chat_message_join (chat_id INTEGER, message_id INTEGER);
            INSERT INTO handle VALUES (1, '+15550100177'), (2, 'mia@example.com');
            INSERT INTO chat VALUES (1, 'chat123456', 'Wu family');""")
        at = 794563200 * 10**9  # 2026-03-07 08:00 UTC, in nanoseconds since 2001
        rows = [(1, "Dinner at 7?", at, 0, 1, 0), (2, "Yes!", at + 60 * 10**9, 0, 2, 0),
                (3, "Loved “Dinner at 7?”", at + 90 * 10**9, 0, 2, 2000),
                (4, "I'll bring dessert", at + 120 * 10**9, 1, 0, 0),
                (5, None, at + 180 * 10**9, 1, 0, 0)]
        for rowid, text, date, mine, handle, kind in rows:
            values = [rowid, f"g-{rowid}", text, None, date, mine, "iMessage", handle]
            db.execute(f"INSERT INTO message VALUES ({', '.join('?' * (len(values) + reactions))})",
                       values + ([kind] if reactions else []))
            db.execute("INSERT INTO chat_message_join VALUES (1, ?)", (rowid,))
        db.close()
        return path

    ctx = _context({})
    items = read("imessage", database(tmp_path / "chat.db", True), ctx)
    assert [i.text for i in items if isinstance(i, Observation)] == [
        "iMessage from +15550100177 in Wu family: Dinner at 7?",
        "iMessage from mia@example.com in Wu family: Yes!",
        "iMessage to Wu family: I'll bring dessert"]
    assert [i.reason for i in items if not isinstance(i, Observation)] == [
        "a reaction to a message, not a message", "no text (pictures are not stored)"]
    assert items[0].ts.isoformat() == "2026-03-07T08:00:00+00:00"  # type: ignore[union-attr]
    older = read("imessage", database(tmp_path / "older.db", False), ctx)
    assert sum(isinstance(i, Observation) for i in older) == 4, "no column, no reactions known"
