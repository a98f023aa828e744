"""iCalendar (``.ics``): one record per event occurrence within the import window.

Recurring events are expanded (``recurring-ical-events``); an occurrence that was moved
says from when, and a cancelled one says so, each as its own record, so the memory sees
"Choir practice moved from Mon 18:00 to Tue 18:00" as a report about the series.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .base import ImportContext, Importer, ImportFailed, Item, Rejected, stable_id
from .markup import plain  # Google Calendar and Outlook write HTML into descriptions

DEFAULT_PAST = timedelta(days=2 * 365)
DEFAULT_FUTURE = timedelta(days=365)


def _dt(value: Any, ctx: ImportContext, zone: tzinfo | None = None) -> datetime | None:
    """A property's time; a date alone (an all-day event) is its midnight in ``zone``
    (the calendar's own), else in the import's zone."""
    if value is None:
        return None
    value = getattr(value, "dt", value)
    if isinstance(value, datetime):
        return ctx.local(value)
    if isinstance(value, date):
        midnight = datetime.combine(value, time())
        return midnight.replace(tzinfo=zone) if zone is not None else ctx.local(midnight)
    return None


def _all_day(event: Any) -> bool:
    value = getattr(event.get("DTSTART"), "dt", None)
    return isinstance(value, date) and not isinstance(value, datetime)


def _calendar_zone(cal: Any) -> tzinfo | None:
    """The zone the calendar says it keeps (``X-WR-TIMEZONE``), if it names a real one."""
    name = str(cal.get("X-WR-TIMEZONE") or "").strip()
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def _people(event: Any) -> list[str]:
    raw = event.get("ATTENDEE")
    attendees = raw if isinstance(raw, list) else [raw] if raw is not None else []
    out = []
    for a in attendees:
        name = a.params.get("CN") if hasattr(a, "params") else None
        out.append(str(name or str(a).removeprefix("mailto:").removeprefix("MAILTO:")))
    return out


def read_calendar(path: Path, ctx: ImportContext) -> Iterator[Item]:
    """Every occurrence of every event in ``[ctx.since, ctx.until]``, one event series at a
    time (a calendar of decades is never parsed whole)."""
    import icalendar
    import recurring_ical_events

    try:
        layout = _layout(path)
    except OSError as exc:
        raise ImportFailed(f"cannot read the calendar: {exc}") from exc
    if not layout.calendars:
        raise ImportFailed("not an iCalendar file (no BEGIN:VCALENDAR)")
    now = ctx.local(datetime.now())
    since = ctx.since if ctx.since is not None else now - DEFAULT_PAST
    until = ctx.until if ctx.until is not None else now + DEFAULT_FUTURE
    zone = _calendar_zone(icalendar.Calendar.from_ical(layout.wrap(b"")))
    for uid, spans in layout.series.items():
        try:
            part = icalendar.Calendar.from_ical(layout.wrap(layout.read(path, spans)))
        except ValueError as exc:
            yield Rejected(str(path), uid, f"unreadable event: {exc}")
            continue
        events = list(part.walk("VEVENT"))
        summary = " ".join(str(events[0].get("SUMMARY") or "").split())[:60] if events else ""
        label = uid + (f" ({summary})" if summary else "")
        if any(c.get("DTSTART") is None for c in events):
            yield Rejected(str(path), label, "an event without a start (no DTSTART)")
            continue
        try:
            occurrences = recurring_ical_events.of(part).between(since, until)
        except Exception as exc:  # the library raises several kinds on a bad RRULE
            yield Rejected(str(path), label, f"cannot expand the event: {exc!r}")
            continue
        for ev in occurrences:
            yield _occurrence(path, ev, ctx, zone)
    for where in layout.unended:
        yield Rejected(str(path), where, "an event never ended (no END:VEVENT)")


@dataclass
class _Layout:
    """Where a calendar file keeps what: its own properties and time zones (small, held),
    and the byte spans of each event series' events (the events of one UID: a recurring
    event and its moved occurrences)."""

    head: list[bytes] = field(default_factory=list)
    zones: list[bytes] = field(default_factory=list)
    series: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    calendars: int = 0
    unended: list[str] = field(default_factory=list)

    def wrap(self, events: bytes) -> bytes:
        """A calendar of the file's properties, its time zones and ``events``."""
        return (b"BEGIN:VCALENDAR\r\n" + b"".join(self.head) + b"".join(self.zones) + events
                + b"END:VCALENDAR\r\n")

    @staticmethod
    def read(path: Path, spans: list[tuple[int, int]]) -> bytes:
        with open(path, "rb") as f:
            parts = []
            for start, end in spans:
                f.seek(start)
                parts.append(f.read(end - start))
        return b"".join(parts)


def _layout(path: Path) -> _Layout:
    """One pass over the file's lines (content lines of any line ending, folded or not)."""
    out = _Layout()
    depth, offset, start, kind, n = 0, 0, 0, b"", 0
    uid: list[bytes] | None = None
    in_uid = False
    zone: list[bytes] = []
    with open(path, "rb") as f:
        for line in f:
            at, offset = offset, offset + len(line)
            upper = line.rstrip(b"\r\n").upper()
            if upper.startswith(b"BEGIN:"):
                depth += 1
                if depth == 1 and upper == b"BEGIN:VCALENDAR":
                    out.calendars += 1
                elif depth == 2:
                    start, kind, uid, zone = at, upper[6:], None, []
                if depth >= 2 and kind == b"VTIMEZONE":
                    zone.append(line)
                continue
            if upper.startswith(b"END:") and depth:
                if depth >= 2 and kind == b"VTIMEZONE":
                    zone.append(line)
                if depth == 2 and upper[4:] == kind == b"VEVENT":
                    n += 1
                    name = b"".join(uid or []).decode("utf-8", "replace").strip()
                    out.series.setdefault(name or f"event {n}", []).append((start, offset))
                elif depth == 2 and upper[4:] == kind == b"VTIMEZONE":
                    out.zones.append(b"".join(zone))
                elif depth == 2 and upper[4:] == b"VCALENDAR":  # closes what was left open
                    if kind == b"VEVENT":
                        out.unended.append(f"event at byte {start}")
                    depth -= 1
                depth -= 1
                continue
            if depth == 1:
                out.head.append(line if line.endswith(b"\n") else line + b"\r\n")
            elif depth >= 2 and kind == b"VTIMEZONE":
                zone.append(line)
            elif depth == 2 and kind == b"VEVENT":
                if upper[:4] in (b"UID:", b"UID;"):
                    uid, in_uid = [line.rstrip(b"\r\n").split(b":", 1)[1]], True
                elif line[:1] in (b" ", b"\t") and in_uid and uid is not None:
                    uid.append(line.rstrip(b"\r\n")[1:])  # a long UID folded
                else:
                    in_uid = False
    return out


def _occurrence(path: Path, ev: Any, ctx: ImportContext, zone: tzinfo | None) -> Item:
    """One occurrence of an event, as its record."""
    uid = str(ev.get("UID") or "")
    all_day = _all_day(ev)
    start = _dt(ev.get("DTSTART"), ctx, zone)
    where = f"{uid or 'event'} @ {start.isoformat() if start else '?'}"
    if start is None:
        return Rejected(str(path), where, "no DTSTART")
    end = _dt(ev.get("DTEND"), ctx, zone) or start
    original = _dt(ev.get("RECURRENCE-ID"), ctx, zone)
    recorded = (_dt(ev.get("LAST-MODIFIED"), ctx) or _dt(ev.get("DTSTAMP"), ctx)
                or _dt(ev.get("CREATED"), ctx) or start)
    summary = " ".join(str(ev.get("SUMMARY") or "(no title)").split())
    place = " ".join(str(ev.get("LOCATION") or "").split())
    people = _people(ev)
    status = str(ev.get("STATUS") or "").upper()
    if all_day:  # the end is the day after the last one
        last = max(start, end - timedelta(days=1))
        when = (f"{start:%a %d %b %Y}, all day" if last.date() == start.date()
                else f"{start:%a %d %b %Y} – {last:%a %d %b %Y}, all day")
    else:
        when = f"{start:%a %d %b %Y %H:%M}–{end:%H:%M}"
    text = f"Calendar: {summary}, {when}" + (f" at {place}" if place else "")
    if people:
        text += f" with {', '.join(people)}"
    if original is not None and original != start:
        text += f" (moved from {original:%a %d %b %H:%M})"
    if status == "CANCELLED":
        text = "Cancelled: " + text
    description = " ".join(plain(str(ev.get("DESCRIPTION") or "")).split())
    if description:
        text += f". {description[:1000]}"
    key = (original or start).isoformat()
    return ctx.observation(
        path, where, source="calendar", ts=recorded, text=text,
        external_id=f"{uid}@{key}" if uid else stable_id(summary, key),
        meta={"title": summary, "start_time": start.isoformat(),
              "end_time": end.isoformat(), "location": place, "attendees": people,
              "status": status.lower() or "confirmed", "uid": uid, "all_day": all_day,
              "original_start": original.isoformat() if original else None})


IMPORTER = Importer("ics", read_calendar, "iCalendar (.ics): events, recurrences expanded "
                    "within --since/--until, moved and cancelled occurrences", (".ics",))
