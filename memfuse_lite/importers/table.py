"""Any CSV file, by a column mapping (``memfuse import csv FILE --map ts=Date,text=Body``;
without one, the time and word columns are found by their names when they have common
ones: ``Date``, ``Timestamp``, ``时间`` …; ``Subject``, ``Body``, ``内容`` …).

Keys of the mapping: ``ts`` and ``text`` (required; ``text=Subject+Body`` joins several
columns), ``id`` (the record's id in its source), ``source`` (a column, or ``:NAME`` for
one source for every row; default ``note``) and ``ts_format`` (a ``strptime`` format;
default: ISO 8601, epoch seconds or milliseconds, or one of a few common layouts). Every
other column is kept in the record's ``meta``. The delimiter (``,``, ``;`` or tab) is
read from the file.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from ..errors import MemFuseError
from .base import ImportContext, Importer, ImportFailed, Item, Rejected, log, stable_id

LAYOUTS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y/%m/%d %H:%M:%S", "%Y/%m/%d %H:%M",
           "%d.%m.%Y %H:%M:%S", "%d.%m.%Y %H:%M", "%Y-%m-%d")
"""Layouts tried after ISO 8601 and epoch numbers (day-first or month-first slashes are
ambiguous: give ``ts_format`` for them)."""
KEYS = ("ts", "text", "id", "source", "ts_format")


def parse_mapping(value: str) -> dict[str, str]:
    """``ts=Date,text=Subject+Body,source=:sms`` as a dict; an unknown key is an error."""
    out: dict[str, str] = {}
    for part in (p for p in value.split(",") if p.strip()):
        key, sep, column = part.partition("=")
        key = key.strip()
        if not sep or not column.strip():
            raise MemFuseError(f"--map: {part!r} is not KEY=COLUMN")
        if key not in KEYS:
            raise MemFuseError(f"--map: unknown key {key!r}; use {', '.join(KEYS)}")
        out[key] = column.strip()
    return out


TIME_NAMES = ("timestamp", "datetime", "date_time", "date", "time", "when", "created",
              "created_at", "sent", "start", "时间", "日期", "时间戳", "datum", "fecha")
TIME_WORDS = ("date", "time", "日期", "时间")
"""Then a column whose name holds one of these ("Due Date", "Start time")."""
TEXT_NAMES = ("title", "subject", "summary", "task", "event", "activity", "text", "body",
              "message", "content", "note", "notes", "description", "标题", "主题", "事件",
              "事项", "内容", "正文", "备注", "nachricht", "notiz", "texto")
"""Column names read as the time and the words when no mapping is given (case ignored;
the words in this order)."""


def read_table(path: Path, ctx: ImportContext) -> Iterator[Item]:
    """One observation per row."""
    mapping = dict(ctx.options)
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            sample = f.read(4096)
            f.seek(0)
            try:
                dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(sample, ",;\t")
            except csv.Error:
                dialect = csv.excel
            rows = csv.DictReader(f, dialect=dialect)
            header = rows.fieldnames or []
            if "ts" not in mapping or "text" not in mapping:
                mapping = _guess(path, header, mapping)
            wanted = [c for key in ("ts", "id") if key in mapping for c in [mapping[key]]]
            wanted += mapping["text"].split("+")
            if not mapping.get("source", ":").startswith(":"):
                wanted.append(mapping["source"])
            absent = [c for c in wanted if c not in header]
            if absent:
                raise ImportFailed(f"no column {absent[0]!r} (columns: {', '.join(header)})")
            seen: dict[str, int] = {}
            for row in rows:
                # a row without an id is known by all it holds, and by its place among
                # rows alike in everything (two "ok" in one minute are two messages)
                key = stable_id(*sorted((k or "", v or "") for k, v in row.items()))
                seen[key] = nth = seen.get(key, 0) + 1
                yield _row(path, f"line {rows.line_num}", row, mapping, ctx,
                           f"csv:{key}" + (f"#{nth}" if nth > 1 else ""))
            return
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ImportFailed(f"cannot read the table: {exc}") from exc


def _guess(path: Path, header: Sequence[str], given: dict[str, str]) -> dict[str, str]:
    """The time and word columns by their names, when the mapping does not give them."""
    lower = {c.strip().lower(): c for c in header}
    guess = dict(given)
    if "ts" not in guess:
        found = next((lower[n] for n in TIME_NAMES if n in lower), None) or next(
            (c for n, c in lower.items() if any(w in n for w in TIME_WORDS)), None)
        if found is not None:
            guess["ts"] = found
    if "text" not in guess:
        words = [lower[n] for n in TEXT_NAMES if n in lower and lower[n] != guess.get("ts")]
        if words:
            guess["text"] = "+".join(words)
    missing = [k for k in ("ts", "text") if k not in guess]
    if missing:
        raise ImportFailed(f"give --map with {' and '.join(missing)} (e.g. --map "
                           f"ts=Date,text=Message; columns: {', '.join(header)})")
    log.warning("%s: no --map given; read as --map %s (from the column names)", path,
                ",".join(f"{k}={v}" for k, v in guess.items()))
    return guess


def _row(path: Path, where: str, row: Mapping[str, str | None], mapping: Mapping[str, str],
         ctx: ImportContext, fallback_id: str) -> Item:
    raw = (row.get(mapping["ts"]) or "").strip()
    try:
        ts = _time(raw, mapping.get("ts_format"))
    except ValueError as exc:
        return Rejected(str(path), where, f"bad time {raw!r}: {exc}")
    text = " — ".join(v for c in mapping["text"].split("+") if (v := (row.get(c) or "").strip()))
    source = mapping.get("source", ":note")
    source = source[1:] if source.startswith(":") else (row.get(source) or "").strip()
    used = {mapping["ts"], *mapping["text"].split("+"), mapping.get("id"), mapping.get("source")}
    meta = {k: v for k, v in row.items() if k and k not in used and v not in (None, "")}
    ident = (row.get(mapping["id"]) or "").strip() if "id" in mapping else ""
    return ctx.observation(path, where, source=source or "note", ts=ctx.local(ts) if
                           ts.tzinfo is None else ts.astimezone(ctx.zone), text=text,
                           external_id=ident or fallback_id, meta=meta)


def _time(value: str, layout: str | None) -> datetime:
    if not value:
        raise ValueError("empty")
    if layout:
        return datetime.strptime(value, layout)
    if value.isdigit():  # epoch seconds, or milliseconds
        number = int(value)
        return datetime.fromtimestamp(number / 1000 if number >= 100_000_000_000 else number,
                                      tz=UTC)
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        pass
    for candidate in LAYOUTS:
        try:
            return datetime.strptime(value, candidate)
        except ValueError:
            continue
    raise ValueError("not ISO 8601, an epoch number or a known layout: give ts_format")


IMPORTER = Importer("csv", read_table, "any CSV by a column mapping: --map ts=COLUMN,"
                    "text=COLUMN[+COLUMN],id=COLUMN,source=COLUMN|:NAME,ts_format=FORMAT",
                    (".csv", ".tsv"))
