"""Google Maps Timeline: place visits become ``location`` observations.

Two layouts are read: Google Takeout's "Semantic Location History" (a folder of monthly
files of ``timelineObjects``: ``placeVisit`` with a place's name and address, times as
ISO strings or ``…TimestampMs``), and the on-device Timeline export of 2024 onwards
(``semanticSegments`` with ``visit.topCandidate``: a place id, a kind such as HOME, and
"lat°, lng°"; the iPhone's export is a list of such segments with ``geo:lat,lng``).
Journeys (activity segments, paths) are rejected: they are not visits.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .base import ImportContext, Importer, Item, Rejected, json_files, stable_id

_LATLNG = re.compile(r"(-?\d+(?:\.\d+)?)°?\s*,\s*(-?\d+(?:\.\d+)?)°?")


def read_timeline(path: Path, ctx: ImportContext) -> Iterator[Item]:
    """Every visit of one Timeline file, or of every ``.json`` file in a folder."""
    for file, data in json_files(path, "Timeline files"):
        if isinstance(data, Rejected):
            yield data
            continue
        segments = list(_segments(data))
        if not segments:
            yield Rejected(str(file), "", "no timelineObjects or semanticSegments")
            continue
        for n, segment in enumerate(segments, start=1):
            yield _visit(file, f"segment {n}", segment, ctx)


def _segments(data: object) -> Iterator[Mapping[str, Any]]:
    if isinstance(data, list):  # the iPhone's export
        yield from (s for s in data if isinstance(s, Mapping))
    elif isinstance(data, Mapping):
        for key in ("timelineObjects", "semanticSegments"):
            if isinstance(data.get(key), list):
                yield from (s for s in data[key] if isinstance(s, Mapping))


def _visit(file: Path, where: str, segment: Mapping[str, Any], ctx: ImportContext) -> Item:
    if "placeVisit" in segment:
        visit = segment["placeVisit"]
        location = visit.get("location") or {}
        duration = visit.get("duration") or {}
        start, end = _time(duration, "start"), _time(duration, "end")
        name = str(location.get("name") or "").strip()
        address = " ".join(str(location.get("address") or "").split())
        kind = _kind(location.get("semanticType"))
        lat, lng = _e7(location.get("latitudeE7")), _e7(location.get("longitudeE7"))
        place_id = str(location.get("placeId") or "")
    elif "visit" in segment:
        top = (segment["visit"] or {}).get("topCandidate") or {}
        start, end = _iso(segment.get("startTime")), _iso(segment.get("endTime"))
        name, address = "", ""
        kind = _kind(top.get("semanticType"))
        location = top.get("placeLocation")
        text = location.get("latLng") if isinstance(location, Mapping) else location
        match = _LATLNG.search(str(text or ""))
        lat, lng = (float(match[1]), float(match[2])) if match else (None, None)
        place_id = str(top.get("placeID") or top.get("placeId") or "")
    else:
        return Rejected(str(file), where, "a journey, not a visit")
    if start is None:
        return Rejected(str(file), where, "a visit without a start time")
    ended = end is not None and end >= start
    end = end if end is not None and ended else start
    spot = f"{lat:.5f}, {lng:.5f}" if lat is not None and lng is not None else ""
    place = name or address or kind or spot or "an unnamed place"
    # an instant (UTC) is shown on the import's clock; a time written with the place's
    # own offset stays on the place's clock
    if not start.utcoffset():
        start, end = start.astimezone(ctx.zone), end.astimezone(ctx.zone)
    text = f"Visited {place}" + (f" ({address})" if name and address else "") + \
        (f" [{kind}]" if kind and kind != place else "") + \
        f", {start:%a %d %b %Y %H:%M}" + (f"–{end:%H:%M}" if ended else "")
    meta: dict[str, Any] = {"place": ", ".join(p for p in (name, address) if p) or place,
                            "start_time": start.isoformat(), "end_time": end.isoformat(),
                            "place_id": place_id, "kind": kind}
    if spot:
        meta["gps"] = {"lat": lat, "lon": lng}
    return ctx.observation(file, where, source="location", ts=start, text=text,
                           external_id="visit:" + stable_id(  # the instant, on no clock
                               place_id or spot or place, start.astimezone(UTC).isoformat()),
                           meta=meta)


NO_KIND = {"", "UNKNOWN", "SEARCHED_ADDRESS", "ALIASED_LOCATION"}
"""Place kinds that say nothing of the place."""


def _kind(value: object) -> str:
    """A place's kind as a word ("TYPE_HOME", "INFERRED_HOME" → "Home"; "" when it says
    nothing)."""
    kind = str(value or "").upper().replace(" ", "_").removeprefix("TYPE_").removeprefix(
        "INFERRED_")
    return "" if kind in NO_KIND else kind.replace("_", " ").title()


def _time(duration: Mapping[str, Any], edge: str) -> datetime | None:
    millis = duration.get(f"{edge}TimestampMs")
    if millis is not None and str(millis).isdigit():
        return datetime.fromtimestamp(int(str(millis)) / 1000, tz=UTC)
    return _iso(duration.get(f"{edge}Timestamp"))


def _iso(value: object) -> datetime | None:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        found = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


def _e7(value: object) -> float | None:
    try:
        return int(str(value)) / 1e7 if value is not None else None
    except ValueError:
        return None


IMPORTER = Importer("timeline", read_timeline, "Google Maps Timeline: Takeout's Semantic "
                    "Location History or the on-device export; place visits", (".json",))
