"""vCard (``.vcf``) contacts: stored as ``contact`` observations (kept, exported and
forgotten like any record, but no events of their own), and used as the directory that
turns the phone numbers and addresses of later imports into names."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..timeutil import parse_ts
from .base import ImportContext, Importer, ImportFailed, Item, Rejected, address_key, stable_id

if TYPE_CHECKING:
    from ..memory import MemFuse

SOURCE = "contact"


def read_vcards(path: Path, ctx: ImportContext) -> list[Item]:
    """One observation per vCard with a name."""
    import vobject

    try:
        text = path.read_text(encoding="utf-8-sig")
        cards = list(vobject.readComponents(text, ignoreUnreadable=True))
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportFailed(f"cannot read vCards: {exc}") from exc
    except Exception as exc:  # vobject raises its own ParseError and plain ValueErrors
        raise ImportFailed(f"not a vCard file: {exc}") from exc
    out: list[Item] = []
    for n, card in enumerate(cards, start=1):
        if card.name != "VCARD":
            continue
        name = str(getattr(card, "fn", None) and card.fn.value or "").strip()
        if not name:
            out.append(Rejected(str(path), f"card {n}", "no name (FN)"))
            continue
        phones = [str(t.value).strip() for t in card.contents.get("tel", [])]
        emails = [str(e.value).strip() for e in card.contents.get("email", [])]
        nick = [str(x.value).strip() for x in card.contents.get("nickname", [])]
        org = [str(x.value if isinstance(x.value, str) else " ".join(x.value)).strip()
               for x in card.contents.get("org", [])]
        rev = card.contents.get("rev")
        uid = card.contents.get("uid")
        text = "Contact: " + name + "".join(f", {v}" for v in [*phones, *emails, *org])
        out.append(ctx.observation(
            path, f"card {n}", source=SOURCE, ts=_when(rev, ctx), text=text,
            external_id=str(uid[0].value) if uid else stable_id(name, *sorted(phones),
                                                                 *sorted(emails)),
            meta={"name": name, "phones": phones, "emails": emails, "nicknames": nick,
                  "org": org}))
    if not out:
        raise ImportFailed("no vCards found")
    return out


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
