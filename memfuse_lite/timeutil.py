"""Timestamps: parsing, the canonical ISO form and the numeric form stored for ordering.

A memory makes every time it is given an instant at its boundary
(:mod:`memfuse_lite.clock`: a time without an offset is read in the memory's home zone);
what is stored keeps its offset and is ordered by true epoch seconds. A naive time that
reaches :func:`to_epoch` is read as UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache

from .errors import InvalidQuery

MIN_YEAR = 1900
MAX_YEAR = 2200


def parse_ts(value: object) -> datetime:
    """Parse an ISO-8601 string, a datetime or epoch seconds; raise ValueError if impossible."""
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, bool):
        raise ValueError("a boolean is not a timestamp")
    elif isinstance(value, int | float):
        try:
            dt = datetime.fromtimestamp(float(value), tz=UTC)
        except (OverflowError, OSError, ValueError) as exc:
            raise ValueError(f"epoch seconds out of range: {value!r}") from exc
    elif isinstance(value, str):
        text = value.strip()
        if not text:
            raise ValueError("empty timestamp")
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError as exc:
            raise ValueError(f"not an ISO-8601 timestamp: {value!r}") from exc
    else:
        raise ValueError(f"unsupported timestamp type {type(value).__name__}")
    if not MIN_YEAR <= dt.year <= MAX_YEAR:
        raise ValueError(f"year {dt.year} outside {MIN_YEAR}..{MAX_YEAR}")
    return dt


def time_argument(value: object, what: str) -> datetime | None:
    """A ``now``/``before``-style argument: a datetime, an ISO-8601 string or None (no
    bound); anything else is an :class:`~memfuse_lite.errors.InvalidQuery` naming
    ``what``."""
    if value is None or isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return parse_ts(value)
        except ValueError as exc:
            raise InvalidQuery(f"{what}: {exc}") from exc
    raise InvalidQuery(f"{what} must be a datetime or an ISO-8601 string, not "
                       f"{type(value).__name__}")


def to_epoch(dt: datetime) -> float:
    """Seconds since the epoch; a naive datetime is read as UTC (ordering only)."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


@lru_cache(maxsize=4096)
def epoch_of(text: str) -> float:
    """Epoch seconds of a stored ISO time (:func:`to_epoch` of :func:`parse_ts`),
    remembered: the same times recur across nearby events (a full cache of 65,536 times
    held 12 MB)."""
    return to_epoch(parse_ts(text))


@lru_cache(maxsize=4096)
def offset_of(text: str) -> float:
    """Seconds east of UTC of a stored ISO time (0 for one without an offset)."""
    delta = parse_ts(text).utcoffset()
    return 0.0 if delta is None else delta.total_seconds()


def in_zone_of(dt: datetime, ref: datetime) -> datetime:
    """``dt`` unchanged if it has an offset, else read in ``ref``'s zone (a day a question
    names is a day where it is asked)."""
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=ref.tzinfo)


def instant_key(dt: datetime) -> str:
    """The instant as one text whatever offset it was written with (UTC, ``Z``); a naive
    time as written."""
    if dt.tzinfo is None:
        return to_iso(dt)
    return to_iso(dt.astimezone(UTC)).replace("+00:00", "Z")


def to_iso(dt: datetime) -> str:
    """The canonical text form stored in SQLite and written to JSONL."""
    return dt.isoformat(timespec="seconds") if dt.microsecond == 0 else dt.isoformat()
