"""E-mail: ``mbox`` mailboxes and single ``.eml`` messages (standard library only)."""

from __future__ import annotations

import email
import mailbox
from email import policy
from email.message import EmailMessage
from email.utils import getaddresses, parsedate_to_datetime
from html.parser import HTMLParser
from pathlib import Path

from .base import ImportContext, Importer, ImportFailed, Item, Rejected, stable_id

BODY_CHARS = 4000


class _Text(HTMLParser):
    """HTML reduced to its text (scripts and styles dropped)."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag in ("br", "p", "div", "li", "tr"):
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    """The readable text of an HTML body."""
    parser = _Text()
    parser.feed(html)
    parser.close()
    return "\n".join(" ".join(line.split()) for line in "".join(parser.parts).splitlines()
                     if line.strip())


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


def _message(path: Path, where: str, msg: EmailMessage, ctx: ImportContext) -> Item:
    if msg.get("Date") is None:
        return Rejected(str(path), where, "no Date header")
    try:
        sent = parsedate_to_datetime(str(msg["Date"]))
    except (TypeError, ValueError):
        return Rejected(str(path), where, f"unreadable Date header {msg['Date']!r}")
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


def read_mail(path: Path, ctx: ImportContext) -> list[Item]:
    """Every message of an mbox file, or the one message of an ``.eml`` file."""
    try:
        if path.suffix.lower() == ".eml":
            with open(path, "rb") as f:
                messages = [(path.name, email.message_from_binary_file(f, policy=policy.default))]
        else:
            if path.stat().st_size and not path.read_bytes()[:5] == b"From ":
                raise ImportFailed("not an mbox file (it does not start with 'From ')")
            box = mailbox.mbox(str(path), factory=None, create=False)
            messages = [(f"message {n}", email.message_from_bytes(box.get_bytes(key),
                                                                  policy=policy.default))
                        for n, key in enumerate(box.keys(), start=1)]
    except OSError as exc:
        raise ImportFailed(f"cannot read the mail: {exc}") from exc
    out: list[Item] = []
    for where, msg in messages:
        try:
            out.append(_message(path, where, msg, ctx))
        except (ValueError, TypeError, LookupError) as exc:
            out.append(Rejected(str(path), where, f"unreadable message: {exc}"))
    return out


IMPORTER = Importer("mail", read_mail, "e-mail: an mbox file or .eml messages",
                    (".mbox", ".eml"))
