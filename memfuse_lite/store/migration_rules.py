"""What migrations 4 and 5 read out of stored rows, as the library defined it when they
were written.

A migration must write the same rows whichever version of the library runs it, so it
never calls a function that may change (``sources.thread_of``, ``record_identity``) nor
reads the source profiles a program may have registered. A later change to how
conversations or identities are read is a new migration that rewrites the stored rows;
this module is never edited (``tests/test_store.py`` compares it with today's
definitions and names the migration to write when they part).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

_MESSAGE_THREAD = ("thread_id", "thread", "conversation_id", "chat_id", "group",
                   "contactName", "phoneNumber", "address", "participants", "with")
THREAD_FIELDS_V4: dict[str, tuple[str, ...]] = {
    "sms": _MESSAGE_THREAD, "mms": _MESSAGE_THREAD, "chat": _MESSAGE_THREAD,
}
"""Migration 4: the fields naming a message's conversation, per source (others: none)."""

_MESSAGE_IDENTITY = ("chat", "chat_id", "group", "conversation_id", "contactName", "contact",
                     "phoneNumber", "address", "number", "from", "to", "sender", "receiver",
                     "recipient", "participants", "with", "speaker", "direction", "type",
                     "box", "seq")
IDENTITY_FIELDS_V5: dict[str, tuple[str, ...]] = {
    "sms": _MESSAGE_IDENTITY, "mms": _MESSAGE_IDENTITY, "chat": _MESSAGE_IDENTITY,
    "call": ("contactName", "contact", "phoneNumber", "number", "address", "direction",
             "type", "duration_s", "duration"),
}
"""Migration 5: the ``meta`` fields of a record's identity, per source (others: all)."""


def thread_v4(source: str, meta: Mapping[str, Any]) -> str | None:
    """The conversation a stored message belongs to, as migration 4 reads it."""
    for key in THREAD_FIELDS_V4.get(source, ()):
        value = meta.get(key)
        if isinstance(value, int | float):
            names = [str(value)]
        else:
            names = sorted({" ".join(n.lower().split()) for n in _names(value)})
        if not names:
            continue
        key_text = ", ".join(names)
        digits = re.sub(r"\D", "", key_text)
        if len(digits) >= 7 and not re.search(r"[^\d\s()+\-.]", key_text):
            key_text = digits[-10:]
        return f"{key}:{key_text}"[:200]
    return None


def identity_v5(source: str, user: str, ts: str, text: str, meta: Mapping[str, Any]) -> str:
    """A stored record's identity as migration 5 computes it (``ts``: the stored ISO
    time; one without an offset is read as UTC, as a memory of that age reads it)."""
    when = datetime.fromisoformat(ts[:-1] + "+00:00" if ts.endswith(("Z", "z")) else ts)
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    instant = when.astimezone(UTC)
    written = instant.isoformat(timespec="seconds") if instant.microsecond == 0 \
        else instant.isoformat()
    fields = IDENTITY_FIELDS_V5.get(source)
    keys = sorted(meta) if fields is None else [k for k in fields if k in meta]
    payload = json.dumps([source, user, written.replace("+00:00", "Z"), text,
                          [[k, _canonical(meta[k])] for k in keys]],
                         ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _canonical(value: object) -> object:
    if isinstance(value, str):
        text = " ".join(value.lower().split())
        digits = re.sub(r"\D", "", text)
        if len(digits) >= 7 and not re.search(r"[^\d\s()+\-.]", text):
            return digits[-10:]
        return text
    if isinstance(value, list | tuple):
        items = [_canonical(v) for v in value]
        texts = [i for i in items if isinstance(i, str)]
        return sorted(texts) if len(texts) == len(items) else items
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    return value


def _names(value: object) -> list[str]:
    if isinstance(value, str):
        return [v.strip() for v in re.split(r"[,;、，/]| and ", value) if v.strip()]
    if isinstance(value, list | tuple):
        return [n for v in value for n in _names(v)]
    if isinstance(value, Mapping):
        return [n for k in ("name", "contactName") if k in value for n in _names(value[k])]
    return []
