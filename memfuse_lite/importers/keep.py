"""Google Keep notes from Google Takeout: the ``Keep`` folder's ``.json`` files (or one).

A note is recorded when it was last edited (``userEditedTimestampUsec``; else when it was
created); its text is its title and its text or its checklist ("☐ milk, ☑ eggs"), with
its labels kept in ``meta``. Notes in the trash are rejected; archived ones are kept
(``meta.archived``). The ``.html`` copies beside the ``.json`` files are not read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .base import ImportContext, Importer, Item, Rejected, json_files, stable_id


def read_keep(path: Path, ctx: ImportContext) -> Iterator[Item]:
    """Every note of a Keep folder (or one note's ``.json`` file)."""
    for file, note in json_files(path, "Keep notes"):
        if isinstance(note, Rejected):
            yield note
            continue
        if not isinstance(note, Mapping) or not ({"textContent", "listContent", "title"}
                                                 & set(note)):
            yield Rejected(str(file), "", "not a Keep note")
            continue
        yield _note(file, note, ctx)


def _note(file: Path, note: Mapping[str, Any], ctx: ImportContext) -> Item:
    if note.get("isTrashed"):
        return Rejected(str(file), "", "in the trash")
    title = " ".join(str(note.get("title") or "").split())
    body = " ".join(str(note.get("textContent") or "").split())
    items = [f"{'☑' if i.get('isChecked') else '☐'} {' '.join(str(i.get('text') or '').split())}"
             for i in note.get("listContent") or [] if isinstance(i, Mapping)]
    content = body or ", ".join(items)
    if not title and not content:
        return Rejected(str(file), "", "an empty note")
    micros = note.get("userEditedTimestampUsec") or note.get("createdTimestampUsec")
    try:
        ts = datetime.fromtimestamp(int(str(micros)) / 1e6, tz=UTC).astimezone(ctx.zone)
    except (TypeError, ValueError, OverflowError):
        return Rejected(str(file), "", f"no usable time (got {micros!r})")
    labels = [str(label.get("name")) for label in note.get("labels") or []
              if isinstance(label, Mapping) and label.get("name")]
    text = "Note: " + (f"{title}: {content}" if title and content else title or content)
    created = note.get("createdTimestampUsec")
    return ctx.observation(
        file, "", source="note", ts=ts, text=text,
        external_id="keep:" + stable_id(created or file.stem, title),
        meta={"title": title, "labels": labels, "archived": bool(note.get("isArchived")),
              "pinned": bool(note.get("isPinned"))})


IMPORTER = Importer("keep", read_keep, "Google Keep notes from Google Takeout (the Keep "
                    "folder, or one note's .json)", (".json",))
