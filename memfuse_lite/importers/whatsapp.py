"""WhatsApp "Export chat" text files, Android and iPhone, 12- and 24-hour clocks,
messages over several lines, the date layouts of phones set to other languages (year
first, Finnish ``klo``, ``13. 6. 2018.``). Whether dates are day-first is read from the
file itself (a day above 12 settles it; day-first when nothing does); year-first dates
are year, month, day. Notices (encryption, a group created) are not messages."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from .base import ImportContext, Importer, ImportFailed, Item, Rejected, stable_id

# "12/01/2025, 14:05 - Ana: text"   "[12/01/25, 2:05:33 PM] Ana: text"
# "13.6.2018 klo 21.25.15 - Ana: text" (Finnish)   "13. 6. 2018. 21:25 - Ana: text"
# "2019/01/01, 11:25 - Ana: text"   "[2019-04-16 02:09] Ana: text"   "2019-10-20, 10:16 - …"
# "2026/3/8 下午3:30 - Ana: text" (Chinese, Japanese and Korean phones: the half of the day
# before the hour)
_LINE = re.compile(
    r"^\u200e?\[?(?:"
    r"(?P<Y>\d{4})[./-](?P<M>\d{1,2})[./-](?P<D>\d{1,2})"  # year first: year, month, day
    r"|(?P<a>\d{1,2})[./-]\s?(?P<b>\d{1,2})[./-]\s?(?P<y>\d{2,4})\.?"
    r"),?\s+(?:klo\s+)?(?P<half>上午|下午|午前|午後|오전|오후)?\s*"
    r"(?P<h>\d{1,2})[:.](?P<m>\d{2})(?:[:.](?P<s>\d{2}))?\s*(?P<ampm>[AaPp]\.?\s?[Mm]\.?)?"
    r"\]?\s*(?:-\s)?\s*(?P<rest>.*)$")
NOTICE_MARK = "\u200e"
AFTERNOON = ("下午", "午後", "오후")
PLACEHOLDER = re.compile(r"^<[^<>]{1,60}>$")
"""What Android writes for a picture, video or document left out ("<Media omitted>")."""
DELETED = ("This message was deleted", "You deleted this message")
CHAT_FILE_PREFIXES = ("WhatsApp Chat with ", "WhatsApp Chat - ", "WhatsApp-Chat mit ")
_SENDER = re.compile(r"^(?P<who>[^:]{1,80}):(?P<space>\s?)(?P<text>.*)$", re.S)
NAME_WORDS = 4
"""Some exports write "Ana:." with no space after the colon; a sender so written has at
most this many words (a notice with a colon in it has more: "Ana changed the group
description:")."""


def read_chat(path: Path, ctx: ImportContext) -> Iterator[Item]:
    """Every message of one exported chat, read line by line (twice: the first pass only
    settles the date order), so a chat of any length takes little memory."""
    day_first = _day_first(path)
    chat = _chat_name(path)
    seen: dict[str, int] = {}  # the messages of the current minute
    minute: datetime | None = None
    for n, m, body in _messages(path):
        where = f"line {n}"
        sender = _SENDER.match(body)
        if sender is not None and not sender["space"] and (
                len(sender["who"].split()) > NAME_WORDS or not sender["text"].strip()):
            sender = None
        if sender is None or sender["text"].startswith(NOTICE_MARK):
            # iPhone exports write notices ("Messages and calls are end-to-end encrypted",
            # "Ana created group") under the chat's name, marked by a left-to-right mark
            yield Rejected(str(path), where, "a notice, not a message")
            continue
        if PLACEHOLDER.match(sender["text"].strip()):
            yield Rejected(str(path), where, "media left out of the export (not stored)")
            continue
        if sender["text"].strip() in DELETED:
            yield Rejected(str(path), where, "a deleted message")
            continue
        try:
            ts = _when(m, day_first)
        except ValueError as exc:
            yield Rejected(str(path), where, f"bad date or time: {exc}")
            continue
        who, text = sender["who"].strip(), sender["text"].strip()
        key = stable_id(chat, ts.isoformat(), who, text)
        if ts != minute:  # messages come in time order: a new minute forgets the last
            seen, minute = {}, ts
        # the same words sent twice in one minute are two messages: the second is "#2"
        seen[key] = nth = seen.get(key, 0) + 1
        meta: dict[str, object] = {"sender": who, "chat": chat}
        if nth > 1:
            meta["seq"] = nth
        yield ctx.observation(
            path, where, source="chat", ts=ctx.local(ts), text=f"{who}: {text}",
            external_id="wa:" + key + (f"#{nth}" if nth > 1 else ""), meta=meta)


def _chat_name(path: Path) -> str:
    """The chat's name, from the file's (an iPhone's ``_chat.txt`` takes its folder's)."""
    stem = path.parent.name if path.stem == "_chat" else path.stem
    for prefix in CHAT_FILE_PREFIXES:
        stem = stem.removeprefix(prefix)
    return stem.strip()


def _lines(path: Path) -> Iterator[str]:
    try:
        with open(path, encoding="utf-8-sig") as f:
            for line in f:
                yield line.rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportFailed(f"cannot read the chat: {exc}") from exc


def _day_first(path: Path) -> bool:
    """Whether the file's dates are day-first: a day above 12 settles it; day-first when
    nothing does."""
    found = first_above_12 = second_above_12 = False
    for line in _lines(path):
        if (m := _LINE.match(line)) is None:
            continue
        found = True
        if m["a"] is not None:
            first_above_12 |= int(m["a"]) > 12
            second_above_12 |= int(m["b"]) > 12
    if not found:
        raise ImportFailed("no WhatsApp message lines (\"date, time - name: text\") found")
    return not second_above_12 or first_above_12


def _messages(path: Path) -> Iterator[tuple[int, re.Match[str], str]]:
    """(line number, head match, whole text) of each message, its later lines joined."""
    head: tuple[int, re.Match[str]] | None = None
    more: list[str] = []
    for n, line in enumerate(_lines(path), start=1):
        if (m := _LINE.match(line)) is None:
            more.append(line)
            continue
        if head is not None:
            yield head[0], head[1], "\n".join([head[1]["rest"], *more]).strip()
        head, more = (n, m), []
    if head is not None:
        yield head[0], head[1], "\n".join([head[1]["rest"], *more]).strip()


def _when(m: re.Match[str], day_first: bool) -> datetime:
    if m["Y"] is not None:
        year, month, day = int(m["Y"]), int(m["M"]), int(m["D"])
    else:
        a, b, year = int(m["a"]), int(m["b"]), int(m["y"])
        day, month = (a, b) if day_first else (b, a)
    year += 2000 if year < 100 else 0
    hour = int(m["h"])
    if m["ampm"] or m["half"]:
        pm = (m["ampm"] or "").lower().startswith("p") or m["half"] in AFTERNOON
        if not 1 <= hour <= 12:
            raise ValueError(f"hour {hour} on a 12-hour clock")
        hour = hour % 12 + (12 if pm else 0)
    return datetime(year, month, day, hour, int(m["m"]), int(m["s"] or 0))


IMPORTER = Importer("whatsapp", read_chat, 'WhatsApp "Export chat" .txt (12h/24h, '
                    "Android/iPhone)", (".txt",))
