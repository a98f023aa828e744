"""Telegram Desktop "Export chat history" / "Export Telegram data" in machine-readable
JSON (``result.json``): one chat, or every chat of an account export (``chats.list``).

A message's time is its ``date_unixtime`` (an instant) when the export has it, else its
``date`` (wall-clock time, read in the import's zone). Formatted text (a list of plain
strings and entities such as links and mentions) is read as its plain text; service
messages (a group created, a member added, a call) are notices, not messages; a message
with nothing but a photo, sticker or file is rejected (no media is stored).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .base import ImportContext, Importer, ImportFailed, Item, Rejected

CHAT_TYPES = {"saved_messages": "Saved Messages"}
"""Names of chats the export leaves unnamed."""


CHATS = ("", "chats.list.item")
"""Where a chat lies in the JSON: the whole file (one chat's export), or each item of an
account export's chat list."""
MESSAGES = ("messages.item", "chats.list.item.messages.item")


def read_export(path: Path, ctx: ImportContext) -> Iterator[Item]:
    """Every message of every chat in one ``result.json``, read as a stream (``ijson``): an
    account export of gigabytes is never held whole, one message at a time is. A chat's
    name and id come before its messages in the files Telegram writes."""
    import ijson

    chats = 0
    try:
        with open(path, "rb") as f:
            head = f.read(3)
            if head != b"\xef\xbb\xbf":  # a byte order mark is skipped
                f.seek(0)
            for chat, message in _stream(ijson.parse(f, use_float=True)):
                if message is None:
                    chats += 1
                    continue
                name = str(chat.get("name") or CHAT_TYPES.get(str(chat.get("type")), "")
                           or chat.get("type") or "chat")
                chat_id = str(chat.get("id") or name)
                yield _message(path, f"{name}, message {message.get('id', '?')}", message,
                               name, chat_id, ctx)
    except OSError as exc:
        raise ImportFailed(f"cannot read the export: {exc}") from exc
    except (ijson.JSONError, UnicodeDecodeError) as exc:
        raise ImportFailed(f"not JSON: {exc}") from exc
    if not chats:
        raise ImportFailed("no Telegram chats found (a 'messages' list, or 'chats' → "
                           "'list' of an account export)")


def _stream(events: Iterator[tuple[str, str, Any]]
            ) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any] | None]]:
    """(chat, message) for each message as the parser's events complete it, and (chat,
    None) when a chat's message list begins."""
    from ijson.common import ObjectBuilder

    chat: dict[str, Any] = {}
    builder, depth = None, 0
    for prefix, event, value in events:
        if builder is not None:
            builder.event(event, value)
            depth += event in ("start_map", "start_array")
            depth -= event in ("end_map", "end_array")
            if depth == 0:
                if isinstance(builder.value, Mapping):
                    yield chat, builder.value
                builder = None
            continue
        where, _, key = prefix.rpartition(".")
        if event == "start_map" and prefix == "chats.list.item":
            chat = {}
        elif where in CHATS and key in ("name", "type", "id"):
            chat[key] = value
        elif event == "start_array" and key == "messages" and where in CHATS:
            yield chat, None
        elif event == "start_map" and prefix in MESSAGES:
            builder, depth = ObjectBuilder(), 1
            builder.event(event, value)


def _message(path: Path, where: str, m: Mapping[str, Any], chat: str, chat_id: str,
             ctx: ImportContext) -> Item:
    if m.get("type") != "message":
        what = m.get("action") or m.get("type")
        return Rejected(str(path), where, f"a notice, not a message ({what})")
    text = " ".join((plain_text(m.get("text")) or _shared(m)).split())
    if not text:
        return Rejected(str(path), where, "no text (photos, stickers and files are not stored)")
    try:
        ts = _time(m)
    except ValueError as exc:
        return Rejected(str(path), where, f"bad date: {exc}")
    who = str(m.get("from") or m.get("author") or "unknown")
    meta: dict[str, Any] = {"sender": who, "chat": chat, "chat_id": chat_id}
    if m.get("reply_to_message_id") is not None:
        meta["reply_to"] = m["reply_to_message_id"]
    if m.get("forwarded_from"):
        meta["forwarded_from"] = str(m["forwarded_from"])
    # an instant is shown on the import's clock; a wall-clock time is read there
    ts = ctx.local(ts) if ts.tzinfo is None else ts.astimezone(ctx.zone)
    if meta.get("forwarded_from"):
        text += f" (forwarded from {meta['forwarded_from']})"
    return ctx.observation(path, where, source="chat", ts=ts,
                           text=f"{who}: {text}", external_id=f"tg:{chat_id}:{m.get('id')}",
                           meta=meta)


def _shared(m: Mapping[str, Any]) -> str:
    """What a message without text shares that is itself information: a poll, a place, a
    contact ("" for pictures, stickers and files)."""
    poll = m.get("poll")
    if isinstance(poll, Mapping):
        answers = [str(a.get("text") or "") for a in poll.get("answers") or []
                   if isinstance(a, Mapping)]
        return f"Poll: {poll.get('question') or ''} ({' / '.join(answers)})"
    place = m.get("location_information")
    if isinstance(place, Mapping):
        where = " ".join(str(place.get(k) or "") for k in ("title", "address")).strip()
        return (f"Location: {where + ' ' if where else ''}"
                f"({place.get('latitude')}, {place.get('longitude')})")
    card = m.get("contact_information")
    if isinstance(card, Mapping):
        name = " ".join(str(card.get(k) or "") for k in ("first_name", "last_name")).strip()
        return f"Contact: {name} {card.get('phone_number') or ''}"
    return ""


def plain_text(value: object) -> str:
    """The plain text of a message's ``text``: a string, or a list of strings and
    entities (``{"type": "link", "text": …}``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(plain_text(part) for part in value)
    if isinstance(value, Mapping):
        return str(value.get("text") or "")
    return ""


def _time(m: Mapping[str, Any]) -> datetime:
    unix = m.get("date_unixtime")
    if unix is not None and str(unix).strip().lstrip("-").isdigit():
        return datetime.fromtimestamp(int(unix), tz=UTC)
    value = m.get("date")
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"no date (got {value!r})")
    return datetime.fromisoformat(value.strip())


IMPORTER = Importer("telegram", read_export, 'Telegram Desktop export, JSON ("result.json": '
                    "one chat or a whole account)", (".json",))
