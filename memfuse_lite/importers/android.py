"""Android "SMS Backup & Restore" XML: ``sms`` and ``mms`` messages and ``call`` logs.

Numbers are turned into names through the contacts directory (the backup's own
``contact_name`` when the directory does not know the number), so a call that carries
only a number and a chat that names the person can meet in one memory.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO
from xml.etree.ElementTree import Element

from .base import ImportContext, Importer, ImportFailed, Item, Rejected, log, stable_id

CALL_TYPES = {"1": "incoming", "2": "outgoing", "3": "missed", "4": "voicemail",
              "5": "rejected", "6": "blocked"}
SMS_BOXES = {"1": "received", "2": "sent", "3": "draft", "4": "outbox", "5": "failed",
             "6": "queued"}
MMS_FROM = "137"
OUTGOING = ("sent", "outbox", "failed", "queued")
HIDDEN_NUMBERS = {"": "an unknown number", "-1": "an unknown number", "-2": "a private number",
                  "-3": "a payphone"}
"""What Android writes in place of a number the caller withheld."""


def _elements(path: Path) -> Iterator[tuple[str, Element]]:
    """(root tag, element) for each record element of a backup, one at a time: each is
    dropped once read, so a backup of gigabytes (MMS carry their pictures) is never held
    whole."""
    from defusedxml import ElementTree
    from defusedxml.common import DefusedXmlException

    try:
        with open(path, "rb") as raw:
            yield from _records(ElementTree.iterparse(_CharRefs(raw), events=("start", "end")))
    except (OSError, DefusedXmlException) as exc:
        raise ImportFailed(f"cannot read the backup: {exc}") from exc
    except ElementTree.ParseError as exc:
        raise ImportFailed(f"not well-formed XML ({exc})") from exc


def _records(events: Iterator[tuple[str, Element]]) -> Iterator[tuple[str, Element]]:
    depth, root = 0, None
    for event, el in events:
        if event == "start":
            depth += 1
            if root is None:
                root = el
                if root.tag not in ("smses", "calls"):
                    raise ImportFailed("not an SMS Backup & Restore file (root element "
                                       f"<{root.tag}>)")
            continue
        depth -= 1
        if depth == 1 and root is not None:  # a record element, whole
            yield root.tag, el
            root.clear()  # and forgotten


class _CharRefs:
    """A backup's bytes with each UTF-16 surrogate pair written as two character references
    (``&#55357;&#56832;``: how SMS Backup & Restore writes an emoji, and what an XML parser
    rejects) turned into the character they stand for; read a block at a time."""

    _PAIR = re.compile(rb"&#(\d{5});&#(\d{5});")
    _CUT = re.compile(rb"&(?:#\d{0,5}(?:;(?:&(?:#\d{0,5})?)?)?)?$")
    """The end of a block that may be the start of a pair cut by the block's edge."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw, self._held = raw, b""

    def read(self, size: int = -1) -> bytes:
        while True:
            block = self._raw.read(size)
            data = self._PAIR.sub(self._character, self._held + block)
            self._held = b""
            if block and (cut := self._CUT.search(data)) is not None:
                data, self._held = data[:cut.start()], data[cut.start():]
            if data or not block:  # something to give, or the end
                return data

    @staticmethod
    def _character(m: re.Match[bytes]) -> bytes:
        high, low = int(m[1]), int(m[2])
        if not (0xD800 <= high <= 0xDBFF and 0xDC00 <= low <= 0xDFFF):
            return m[0]
        return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)).encode("utf-8")


SECONDS_BELOW = 100_000_000_000
"""Dates are milliseconds since 1970; a backup written by other tools in seconds has
values below this (in milliseconds it would be before March 1973)."""


def _time(ms: str | None, ctx: ImportContext) -> datetime:
    if not ms or not ms.strip().lstrip("-").isdigit():
        raise ValueError(f"no usable date (got {ms!r})")
    value = int(ms)
    seconds = value if 0 < value < SECONDS_BELOW else value / 1000.0
    utc = datetime.fromtimestamp(seconds, tz=UTC)
    return utc.astimezone(ctx.tz) if ctx.tz is not None else utc.astimezone()


def _who(number: str, backup_name: str | None, ctx: ImportContext) -> str:
    name = ctx.name_for(number) or (backup_name or "").strip()
    return "" if name in ("", "(Unknown)", "null") else name


def read_backup(path: Path, ctx: ImportContext) -> Iterator[Item]:
    """Every sms, mms and call element of one backup file, one at a time."""
    warned = False
    for n, (_, el) in enumerate(_elements(path), start=1):
        where = f"<{el.tag}> {n}"
        date = el.get("date") or ""
        if not warned and date.isdigit() and 0 < int(date) < SECONDS_BELOW:
            log.warning("%s gives dates in seconds, not milliseconds: read as seconds", path)
            warned = True
        try:
            if el.tag == "sms":
                yield _sms(path, where, el, ctx)
            elif el.tag == "mms":
                yield _mms(path, where, el, ctx)
            elif el.tag == "call":
                yield _call(path, where, el, ctx)
            else:
                yield Rejected(str(path), where, f"unknown element <{el.tag}>")
        except ValueError as exc:
            yield Rejected(str(path), where, str(exc))


def _sms(path: Path, where: str, el: Element, ctx: ImportContext) -> Item:
    number = el.get("address") or ""
    body = el.get("body") or ""
    box = SMS_BOXES.get(el.get("type") or "", "received")
    if box == "draft":
        raise ValueError("a draft, never sent")
    name = _who(number, el.get("contact_name"), ctx)
    party = f"{name} ({number})" if name else number
    text = f"SMS {'to' if box in OUTGOING else 'from'} {party}: {body}"
    if box == "failed":
        text += " (not delivered)"
    return ctx.observation(path, where, source="sms", ts=_time(el.get("date"), ctx), text=text,
                           external_id="sms:" + stable_id(el.get("date"), number, body),
                           meta={"contactName": name, "phoneNumber": number,
                                 "direction": box})


def _mms(path: Path, where: str, el: Element, ctx: ImportContext) -> Item:
    texts = [p.get("text") or "" for p in el.iter("part")
             if (p.get("ct") or "").startswith("text/plain")]
    body = " ".join(t for t in texts if t.strip())
    if not body:
        raise ValueError("an MMS without text (pictures are not stored)")
    numbers = list(dict.fromkeys(a.get("address") or "" for a in el.iter("addr")))
    sender = next((a.get("address") or "" for a in el.iter("addr")
                   if a.get("type") == MMS_FROM), el.get("address") or "")
    sent = (el.get("msg_box") or "") == "2"
    # a group message's contact_name lists everyone in it: only its sender wrote it
    group = len([x for x in numbers if x]) > 2 or "~" in (el.get("address") or "")
    if sent:
        names = [_who(x, None, ctx) or x for x in numbers if x and x != sender]
    else:
        names = [_who(sender, None if group else el.get("contact_name"), ctx) or sender]
    party = ", ".join(n for n in names if n) or (el.get("address") or "")
    text = f"MMS {'to' if sent else 'from'} {party}: {body}"
    meta: dict[str, object] = {"contactName": party,
                               "phoneNumber": el.get("address") if sent or not sender
                               else sender,
                               "direction": "sent" if sent else "received"}
    if group:
        everyone = sorted(_who(x, None, ctx) or x for x in numbers if x)
        meta["participants"] = everyone
        meta["group"] = ", ".join(everyone)
    return ctx.observation(path, where, source="sms", ts=_time(el.get("date"), ctx), text=text,
                           external_id="mms:" + stable_id(el.get("date"), el.get("address"),
                                                          body),
                           meta=meta)


def _call(path: Path, where: str, el: Element, ctx: ImportContext) -> Item:
    number = el.get("number") or ""
    kind = CALL_TYPES.get(el.get("type") or "", "call")
    name = _who(number, el.get("contact_name"), ctx)
    hidden = number.strip() in HIDDEN_NUMBERS or (el.get("presentation") or "1") != "1"
    party = (f"{name} ({number})" if name else
             HIDDEN_NUMBERS.get(number.strip(), "a private number") if hidden else number)
    if hidden:
        number = ""
    seconds = int(el.get("duration") or 0) if (el.get("duration") or "0").isdigit() else 0
    length = (f", {seconds // 60} min {seconds % 60} s" if seconds >= 60
              else f", {seconds} s" if seconds else "")
    preposition = "to" if kind == "outgoing" else "from"
    text = (f"Voicemail from {party}{length}" if kind == "voicemail"
            else f"{kind.capitalize()} call {preposition} {party}{length}")
    return ctx.observation(path, where, source="call", ts=_time(el.get("date"), ctx), text=text,
                           external_id="call:" + stable_id(el.get("date"), number, kind),
                           meta={"contactName": name, "phoneNumber": number,
                                 "direction": kind, "duration_s": seconds})


IMPORTER = Importer("android-sms", read_backup, '"SMS Backup & Restore" XML (sms, mms, '
                    "calls)", (".xml",))
