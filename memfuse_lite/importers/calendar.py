"""iCalendar (``.ics``): one record per event occurrence within the import window.

Recurring events are expanded (``recurring-ical-events``); an occurrence that was moved
says from when, and a cancelled one says so, each as its own record, so the memory sees
"Choir practice moved from Mon 18:00 to Tue 18:00" as a report about the series.
"""

from __future__ import annotations

from collections.abc import Iterator
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
    """Every occurrence of every event in ``[ctx.since, ctx.until]``."""
    import icalendar
    import recurring_ical_events

    try:
        cal = icalendar.Calendar.from_ical(path.read_bytes())
    except OSError as exc:
        raise ImportFailed(f"cannot read the calendar: {exc}") from exc
    except ValueError as exc:
        raise ImportFailed(f"not an iCalendar file: {exc}") from exc
    now = ctx.local(datetime.now())
    since = ctx.since if ctx.since is not None else now - DEFAULT_PAST
    until = ctx.until if ctx.until is not None else now + DEFAULT_FUTURE
    occurrences: list[Any] = []
    for label, part in _series(cal, icalendar):
        if any(c.get("DTSTART") is None for c in part.walk("VEVENT")):
            yield Rejected(str(path), label, "an event without a start (no DTSTART)")
            continue
        try:
            occurrences += recurring_ical_events.of(part).between(since, until)
        except Exception as exc:  # the library raises several kinds on a bad RRULE
            yield Rejected(str(path), label, f"cannot expand the event: {exc!r}")
    zone = _calendar_zone(cal)
    for ev in occurrences:
        uid = str(ev.get("UID") or "")
        all_day = _all_day(ev)
        start = _dt(ev.get("DTSTART"), ctx, zone)
        where = f"{uid or 'event'} @ {start.isoformat() if start else '?'}"
        if start is None:
            yield Rejected(str(path), where, "no DTSTART")
            continue
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
        yield ctx.observation(
            path, where, source="calendar", ts=recorded, text=text,
            external_id=f"{uid}@{key}" if uid else stable_id(summary, key),
            meta={"title": summary, "start_time": start.isoformat(),
                  "end_time": end.isoformat(), "location": place, "attendees": people,
                  "status": status.lower() or "confirmed", "uid": uid, "all_day": all_day,
                  "original_start": original.isoformat() if original else None})


def _series(cal: Any, icalendar: Any) -> list[tuple[str, Any]]:
    """The calendar split into one calendar per event series (the events of one UID: a
    recurring event and its moved occurrences, with the time zones), so that one broken
    event is rejected alone."""
    zones = list(cal.walk("VTIMEZONE"))
    by_uid: dict[str, list[Any]] = {}
    for n, event in enumerate(cal.walk("VEVENT"), start=1):
        uid = str(event.get("UID") or "") or f"event {n}"
        by_uid.setdefault(uid, []).append(event)
    out = []
    for uid, events in by_uid.items():
        part = icalendar.Calendar()
        for component in (*zones, *events):
            part.add_component(component)
        summary = " ".join(str(events[0].get("SUMMARY") or "").split())[:60]
        out.append((f"{uid}" + (f" ({summary})" if summary else ""), part))
    return out


IMPORTER = Importer("ics", read_calendar, "iCalendar (.ics): events, recurrences expanded "
                    "within --since/--until, moved and cancelled occurrences", (".ics",))
