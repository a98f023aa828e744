"""vCard (``.vcf``) contacts: stored as ``contact`` observations (kept, exported and
forgotten like any record, but no events of their own), and used as the directory that
turns the phone numbers and addresses of later imports into names."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..timeutil import parse_ts
from .base import ImportContext, Importer, ImportFailed, Item, Rejected, address_key, stable_id

if TYPE_CHECKING:
    from ..memory import MemFuse

SOURCE = "contact"


def read_vcards(path: Path, ctx: ImportContext) -> Iterator[Item]:
    """One observation per vCard with a name; a card that cannot be read is rejected
    alone."""
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as f:
            yield from _cards(path, ctx, (line.rstrip("\r\n") for line in f))
    except OSError as exc:
        raise ImportFailed(f"cannot read vCards: {exc}") from exc


def _cards(path: Path, ctx: ImportContext, lines: Iterator[str]) -> Iterator[Item]:
    import vobject

    n = 0
    for n, block in enumerate(_card_blocks(lines), start=1):
        where = f"card {n}"
        try:
            card = vobject.readOne(block, ignoreUnreadable=True)
        except Exception as exc:  # vobject raises its own ParseError and plain ValueErrors
            yield Rejected(str(path), where, f"unreadable vCard: {exc}")
            continue
        name = _text(getattr(card, "fn", None) and card.fn.value).strip()
        if not name and "n" in card.contents:
            n_value = card.n.value
            name = " ".join(_text(getattr(n_value, part, "")) for part in
                            ("prefix", "given", "additional", "family", "suffix")).strip()
        org = [_text(x.value).strip() for x in card.contents.get("org", [])]
        name = " ".join(name.split()) or next((o for o in org if o), "")  # a business card
        if not name:
            yield Rejected(str(path), where, "no name (FN, N or ORG)")
            continue
        phones = [_phone(_text(t.value)) for t in card.contents.get("tel", [])]
        emails = [_text(e.value).strip().removeprefix("mailto:")
                  for e in card.contents.get("email", [])]
        nick = [_text(x.value).strip() for x in card.contents.get("nickname", [])]
        rev = card.contents.get("rev")
        uid = card.contents.get("uid")
        text = "Contact: " + name + "".join(f", {v}" for v in [*phones, *emails, *org]
                                            if v and v != name)
        yield ctx.observation(
            path, where, source=SOURCE, ts=_when(rev, ctx), text=text,
            external_id=str(uid[0].value) if uid else stable_id(name, *sorted(phones),
                                                            *sorted(emails)),
            meta={"name": name, "phones": phones, "emails": emails, "nicknames": nick,
                  "org": org})
    if n == 0:
        raise ImportFailed("no vCards found (BEGIN:VCARD … END:VCARD)")


def _phone(value: str) -> str:
    """A number as written; a vCard 4 ``tel:`` URI without its scheme and parameters
    (``tel:+1-555-010-0178;ext=12`` is ``+1-555-010-0178``)."""
    value = value.strip()
    if value.lower().startswith("tel:"):
        value = value[4:].split(";", 1)[0]
    return value


BINARY = ("PHOTO", "LOGO", "SOUND", "KEY")
"""Properties that carry files (base64 pictures): never stored, dropped before parsing."""


def _card_blocks(lines: Iterator[str]) -> Iterator[str]:
    """Each BEGIN:VCARD … END:VCARD block, one at a time, with quoted-printable soft line
    breaks joined (vCard 2.1) and picture and sound properties left out."""
    current: list[str] | None = None
    skipping = False
    for line in lines:
        upper = line.strip().upper()
        if upper == "BEGIN:VCARD":
            current, skipping = [line], False
            continue
        if current is None:
            continue
        if upper == "END:VCARD":
            current.append(line)
            yield "\r\n".join(current) + "\r\n"
            current = None
            continue
        if skipping and (not line.strip() or line[:1] in " \t" or ":" not in line):
            continue  # base64 continuation lines (2.1 ends them with a blank line)
        head = line.split(":", 1)[0].upper()
        skipping = head.split(";", 1)[0].rsplit(".", 1)[-1] in BINARY
        if skipping:
            continue
        if "QUOTED-PRINTABLE" in head:
            while line.endswith("="):  # a soft line break
                more = next(lines, None)
                if more is None:
                    break
                line = line[:-1] + more.lstrip()
        current.append(line)


def _text(value: object) -> str:
    """A property's value as text (structured values, such as ORG's parts, joined)."""
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return ", ".join(t for t in (_text(v).strip() for v in value) if t)
    return str(value)


def _when(rev: object, ctx: ImportContext) -> datetime:
    if rev:
        try:
            return ctx.local(parse_ts(str(rev[0].value)))  # type: ignore[index]
        except ValueError:
            pass
    return ctx.local(datetime.now().replace(microsecond=0))


def directory(mem: MemFuse, user: str) -> dict[str, str]:
    """Phone numbers and addresses → names, from the contacts ``user`` may see."""
    out: dict[str, str] = {}
    with mem.engine.store.reading() as db:
        rows = db.execute("SELECT user, meta, visibility FROM observations WHERE source = ?"
                          " ORDER BY ts_epoch, id", (SOURCE,)).fetchall()
    for owner, meta, visibility in rows:
        vis = json.loads(str(visibility))
        if owner != user and vis != "household" and user not in vis:
            continue
        data = json.loads(str(meta))
        for address in [*data.get("phones", []), *data.get("emails", [])]:
            key = address_key(str(address))
            if key:
                out[key] = str(data.get("name") or "")
    return out


IMPORTER = Importer("vcf", read_vcards, "vCard contacts (.vcf); import them first: later "
                    "imports name the numbers they know", (".vcf",))
