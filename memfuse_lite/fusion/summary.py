"""Template summaries of fused memories, built only from what a viewer may see."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import apsw

from ..records import can_see
from ..store import fused as fused_sql
from ..store.fused import MemberRow
from ..timeutil import epoch_of


def template_summary(rows: Sequence[MemberRow]) -> tuple[str, str | None, str | None]:
    """(summary, start, end) from member rows, oldest first."""
    if not rows:
        return "", None, None
    times: list[str] = [t for r in rows if (t := r[5] or r[4])]
    start, end = (min(times), max(times)) if times else (None, None)
    lead = max(rows, key=lambda r: (len(r[3]) if len(r[3]) < 400 else 0, -r[0]))[3]
    lead = " ".join(lead.split())[:240]
    sources = sorted({r[2] for r in rows})
    users = sorted({r[1] for r in rows})
    day = (start or "")[:10]
    span = f"{day}" if not end or end[:10] == day else f"{day} – {end[:10]}"
    return (f"{span}: {lead} ({len(rows)} reports from {', '.join(sources)}; "
            f"{', '.join(users)})", start, end)


_SPAN = re.compile(r"^\s*(?:Summary:\s*)?\d{4}-\d{2}-\d{2}(?: – \d{4}-\d{2}-\d{2})?:\s+")
_TAIL = re.compile(r"\s*\(\d+ reports from [^()]*\)\s*$")


def without_layout(text: str) -> str:
    """``text`` less a :func:`template_summary`'s layout: the days it starts with and the
    count of reports and their apps and users it ends with (what a small model copies
    from a summary into an answer, though no record says it)."""
    return _TAIL.sub("", _SPAN.sub("", text, count=1), count=1)


def household_rows(rows: Sequence[MemberRow]
                   ) -> list[MemberRow]:
    """Only members visible to the whole household."""
    return [r for r in rows if r[6] is None]


def viewer_rows(rows: Sequence[MemberRow],
                viewer: str) -> list[MemberRow]:
    """Only members the viewer may see."""
    return [r for r in rows if can_see(viewer, None if r[6] is None else json.loads(r[6]))]


def refresh_summary(db: apsw.Connection, fused_id: int) -> tuple[str, float]:
    """Recompute the stored household summary and span of one fused memory; returns the
    household-visible members' text and start (what the sparse index holds for it)."""
    rows = fused_sql.member_rows(db, fused_id)
    visible = household_rows(rows)
    summary, _, _ = template_summary(visible)
    _, start, end = template_summary(rows)
    fused_sql.set_summary(db, fused_id, summary, start, end)
    return document_of(rows)


def document_of(rows: Sequence[MemberRow]) -> tuple[str, float]:
    """What the sparse index holds for a fused memory of these members: the household-
    visible members' text (none for a single one) and its start (epoch seconds)."""
    visible = household_rows(rows)
    _, start, _ = template_summary(rows)
    text = "\n".join(r[3] for r in visible) if len(visible) > 1 else ""
    return text, epoch_of(start) if start else 0.0
