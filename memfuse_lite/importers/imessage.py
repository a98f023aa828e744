"""Messages on a Mac or an iPhone backup: the ``chat.db`` SQLite database, opened
read-only (never written; a copy works as well as the original).

Times are Apple's: since 2001-01-01 UTC, in nanoseconds (macOS 10.13 and later) or
seconds. Newer systems leave ``text`` empty and keep the words in ``attributedBody``
(an archived NSAttributedString): its string is read from there. A message with
neither (a picture, a reaction) is rejected.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .base import ImportContext, Importer, ImportFailed, Item, Rejected

APPLE_EPOCH = datetime(2001, 1, 1, tzinfo=UTC)
NANOSECONDS_ABOVE = 10**12
"""A ``date`` above this counts nanoseconds (in seconds it would be after the year 33,000)."""

QUERY = """
SELECT m.ROWID, m.guid, m.text, m.attributedBody, m.date, m.is_from_me, m.service, h.id,
       c.chat_identifier, c.display_name, {reaction}
FROM message m
LEFT JOIN handle h ON h.ROWID = m.handle_id
LEFT JOIN chat_message_join j ON j.message_id = m.ROWID
LEFT JOIN chat c ON c.ROWID = j.chat_id
ORDER BY m.date, m.ROWID
"""
REACTIONS = range(2000, 4000)
"""``associated_message_type`` of a tapback ("Loved “…”", 2000–2005) or of its removal
(3000–3005): a reaction to a message, not one (macOS 10.12 and later keep the column)."""


def read_chat_db(path: Path, ctx: ImportContext) -> Iterator[Item]:
    """Every message of one ``chat.db``, row by row."""
    import apsw

    try:
        db = apsw.Connection(f"file:{path.resolve()}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY
                             | apsw.SQLITE_OPEN_URI)
    except apsw.Error as exc:
        raise ImportFailed(f"not a Messages database ({exc})") from exc
    try:
        try:
            columns = {str(r[1]) for r in db.execute("PRAGMA table_info(message)")}
            rows = db.execute(QUERY.format(reaction="m.associated_message_type" if
                                           "associated_message_type" in columns else "0"))
        except apsw.Error as exc:
            raise ImportFailed(f"not a Messages database ({exc})") from exc
        empty = True
        for row in rows:
            empty = False
            yield _message(path, row, ctx)
        if empty:
            raise ImportFailed("no messages in this database")
    finally:
        db.close()


def _message(path: Path, row: tuple[Any, ...], ctx: ImportContext) -> Item:
    rowid, guid, text, body, date, from_me, service, handle, chat_id, chat_name, reaction = row
    where = f"message {rowid}"
    if int(reaction or 0) in REACTIONS:
        return Rejected(str(path), where, "a reaction to a message, not a message")
    words = " ".join(str(text or "").replace("\ufffc", " ").split()) or \
        " ".join(archived_string(body).split())
    if not words:
        return Rejected(str(path), where, "no text (pictures are not stored)")
    try:
        ts = apple_time(date)
    except (TypeError, ValueError, OverflowError) as exc:
        return Rejected(str(path), where, f"bad date {date!r}: {exc}")
    address = str(handle or chat_id or "")
    name = ctx.name_for(address) or ""
    party = f"{name} ({address})" if name else (address or "an unknown sender")
    sent = bool(from_me)
    group = str(chat_name or "")  # only group chats are named
    if group and (sent or not handle):
        party = group
    elif group:
        party += f" in {group}"
    kind = "SMS" if str(service or "") == "SMS" else "iMessage"
    return ctx.observation(
        path, where, source="sms" if kind == "SMS" else "chat",
        ts=ts.astimezone(ctx.zone), text=f"{kind} {'to' if sent else 'from'} {party}: {words}",
        external_id=f"imessage:{guid or rowid}",
        meta={"contactName": name, "phoneNumber": address, "direction":
              "sent" if sent else "received", "chat": str(chat_name or chat_id or address),
              "service": kind})


def apple_time(value: object) -> datetime:
    """A Messages ``date`` as an instant."""
    number = int(value)  # type: ignore[call-overload]
    seconds = number / 1e9 if abs(number) > NANOSECONDS_ABOVE else float(number)
    return APPLE_EPOCH + timedelta(seconds=seconds)


def archived_string(blob: object) -> str:
    """The string of an archived NSAttributedString (``attributedBody``), or "": after
    the ``NSString`` class name come five bytes, then the length (one byte, or 0x81 and
    two bytes little-endian), then the UTF-8 text."""
    if not isinstance(blob, bytes | bytearray | memoryview):
        return ""
    data = bytes(blob)
    at = data.find(b"NSString")
    if at < 0:
        return ""
    i = at + len(b"NSString") + 5
    if i >= len(data):
        return ""
    length = data[i]
    i += 1
    if length == 0x81:
        length = int.from_bytes(data[i : i + 2], "little")
        i += 2
    return data[i : i + length].decode("utf-8", "replace")


IMPORTER = Importer("imessage", read_chat_db, "Messages (iMessage and SMS) chat.db from a Mac "
                    "or an iPhone backup, read-only", (".db",))
