"""E-mail: ``mbox`` mailboxes and single ``.eml`` messages (standard library only)."""

from __future__ import annotations

import email
import mailbox
import re
from collections.abc import Iterator
from datetime import datetime
from email import policy
from email.message import EmailMessage
from email.utils import getaddresses, parsedate_to_datetime
from pathlib import Path

from .base import ImportContext, Importer, ImportFailed, Item, Rejected, stable_id
from .markup import html_to_text

BODY_CHARS = 4000
_QUOTED_FROM = re.compile(rb"(?m)^>(>*From )")


def _names(header: str | None) -> list[str]:
    return [name or addr for name, addr in getaddresses([header or ""]) if name or addr]


def _body(msg: EmailMessage) -> str:
    part = msg.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    try:
        content = part.get_content()
    except (LookupError, UnicodeError):  # an unknown or lying charset
        payload = part.get_payload(decode=True)
        content = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else ""
    if part.get_content_subtype() == "html":
        content = html_to_text(str(content))
    return " ".join(str(content).split())[:BODY_CHARS]


def _sent(msg: EmailMessage, envelope: str | None) -> datetime | None:
    """When a message was sent: its Date header, else when the first server received it
    (the last Received header), else the mbox ``From_`` line's date."""
    candidates = [str(msg["Date"])] if msg.get("Date") is not None else []
    received = msg.get_all("Received") or []
    if received:
        candidates.append(str(received[-1]).rsplit(";", 1)[-1])
    if envelope:
        parts = envelope.split(None, 1)  # "sender Mon Jan  6 09:00:00 2025"
        if len(parts) == 2:
            candidates.append(parts[1])
    for value in candidates:
        try:
            found = parsedate_to_datetime(value.strip())
        except (TypeError, ValueError, IndexError):
            continue
        if found is not None:
            return found
    return None


def _message(path: Path, where: str, msg: EmailMessage, ctx: ImportContext,
             envelope: str | None = None) -> Item:
    sent = _sent(msg, envelope)
    if sent is None:
        return Rejected(str(path), where, "no date: no readable Date or Received header")
    sender = _names(msg.get("From"))
    to = _names(msg.get("To")) + _names(msg.get("Cc"))
    subject = " ".join(str(msg.get("Subject") or "").split())
    body = _body(msg)
    if not subject and not body:
        return Rejected(str(path), where, "neither subject nor text")
    text = (f"Email from {', '.join(sender) or 'unknown'} to {', '.join(to) or 'unknown'}: "
            f"{subject}" + (f" — {body}" if body else ""))
    msg_id = str(msg.get("Message-ID") or "").strip()
    return ctx.observation(path, where, source="email", ts=ctx.local(sent), text=text,
                           external_id=msg_id or stable_id(msg.get("Date"), sender, subject),
                           meta={"from": sender, "to": to, "subject": subject,
                                 "message_id": msg_id})


def read_mail(path: Path, ctx: ImportContext) -> Iterator[Item]:
    """Every message of an mbox file, or the one message of an ``.eml`` file."""
    try:
        for where, msg, envelope in _messages(path):
            try:
                yield _message(path, where, msg, ctx, envelope)
            except (ValueError, TypeError, LookupError) as exc:
                yield Rejected(str(path), where, f"unreadable message: {exc}")
    except OSError as exc:
        raise ImportFailed(f"cannot read the mail: {exc}") from exc


def _messages(path: Path) -> Iterator[tuple[str, EmailMessage, str | None]]:
    """(where, message, mbox ``From_`` line) one at a time: a mailbox of gigabytes is
    read message by message, never whole."""
    if path.suffix.lower() == ".eml":
        with open(path, "rb") as f:
            yield path.name, email.message_from_binary_file(f, policy=policy.default), None
        return
    with open(path, "rb") as f:
        if path.stat().st_size and f.read(5) != b"From ":
            raise ImportFailed("not an mbox file (it does not start with 'From ')")
    box = mailbox.mbox(str(path), factory=None, create=False)
    for n, key in enumerate(box.iterkeys(), start=1):
        raw = box.get_bytes(key, from_=True)
        head, _, rest = raw.partition(b"\n")
        envelope = head.decode("utf-8", "replace")[5:].strip() if head.startswith(b"From ") \
            else None
        # a body line that began with "From " was written as ">From " (mboxo and mboxrd)
        body = _QUOTED_FROM.sub(rb"\1", rest if envelope is not None else raw)
        yield f"message {n}", email.message_from_bytes(body, policy=policy.default), envelope


IMPORTER = Importer("mail", read_mail, "e-mail: an mbox file or .eml messages",
                    (".mbox", ".eml"))
