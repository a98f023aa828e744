"""One clock per memory: its home time zone, in which times given without an offset are read.

A memory records its home zone when it is created (``MemFuseConfig.tz``, else this
machine's zone); a memory made before home zones existed read such times as UTC and keeps
doing so. Every time that enters the memory — an observation's ``ts``, ``now``, a
``before`` or ``since`` — is made an instant here, at the boundary, so records from an
importer (with offsets), from JSONL (without) and from an assistant compare on one
clock. Instants are stored with the offset they were given (or the home zone's offset at
that time) and ordered by their true epoch seconds.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import replace
from datetime import datetime, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import InvalidConfig
from .records import Observation
from .timeutil import time_argument

LEGACY_ZONE = "UTC"
"""The zone a memory made before home zones read offset-less times in."""


def zone_of(name: str) -> ZoneInfo:
    """The IANA zone ``name`` (``Europe/Berlin``, ``Asia/Shanghai``, ``UTC``)."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidConfig(f"unknown time zone {name!r} (use an IANA name such as "
                            "Europe/Berlin)") from exc


def machine_zone() -> str:
    """This machine's IANA zone: ``$TZ``, else where /etc/localtime points, else
    /etc/timezone, else UTC."""
    env = os.environ.get("TZ", "").lstrip(":")
    candidates = [env] if env else []
    with contextlib.suppress(OSError):
        target = os.path.realpath("/etc/localtime")
        if "zoneinfo/" in target:
            candidates.append(target.split("zoneinfo/", 1)[1])
    with contextlib.suppress(OSError):
        candidates.append(Path("/etc/timezone").read_text().strip())
    for name in candidates:
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            continue
        return name
    return "UTC"


class Clock:
    """Reads times in one zone: a time with an offset is kept as it is, one without is
    read as wall-clock time there (the earlier of a repeated hour when clocks go back)."""

    def __init__(self, zone: str) -> None:
        self.zone_name = zone
        self.zone: tzinfo = zone_of(zone)

    def localise(self, dt: datetime) -> datetime:
        """``dt`` as an instant."""
        return dt if dt.tzinfo is not None else dt.replace(tzinfo=self.zone)

    def instant(self, value: object, what: str) -> datetime | None:
        """A ``now``/``before``-style argument (a datetime, an ISO-8601 string or None) as
        an instant; anything else is an :class:`InvalidQuery` naming ``what``."""
        found = time_argument(value, what)
        return None if found is None else self.localise(found)

    def observation(self, obs: Observation) -> Observation:
        """``obs`` with its time as an instant (an id made from its identity is made
        again: the identity holds the instant)."""
        if obs.ts.tzinfo is not None:
            return obs
        return replace(obs, ts=self.localise(obs.ts),
                       external_id=obs.external_id if obs.has_own_id else "")
