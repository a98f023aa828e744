"""Held-out variants of each export format: files written from the formats' documentation
and from the layouts real apps write (Google, Outlook, Apple, Thunderbird and WeChat
calendars; Gmail, Thunderbird and Outlook mail; Apple, Google, Android and Outlook vCards;
SMS Backup & Restore of several versions; WhatsApp on phones in four languages; Telegram
chat and account exports; Keep notes; three Timeline layouts; CSV from banks, notes,
to-do and fitness apps). ``expected.json`` holds every record each file must give (time
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
EXPECTED: dict[str, dict[str, Any]] = json.loads((VARIANTS / "expected.json").read_text())


def _context(expected: dict[str, Any]) -> ImportContext:
    return ImportContext(user="me", device="d", tz=zone_of("UTC"),
                         options=parse_mapping(expected["map"]) if "map" in expected else {})


def test_five_variants_of_every_format_at_least() -> None:
    kinds = Counter(e["kind"] for e in EXPECTED.values())
    assert set(kinds) == {"ics", "mail", "vcf", "android-sms", "whatsapp", "telegram", "keep",
                          "timeline", "csv"}
    assert min(kinds.values()) >= 5, kinds
    on_disk = {str(p.relative_to(VARIANTS)) for p in VARIANTS.rglob("*")
               if p.is_file() and p.name != "expected.json"}
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
