"""What a dense search filters on, per event id: when it happened and was recorded, its
user, source and audience, whether it lives. Arrays indexed by event id, so that a filter
is a few vectorised comparisons; each viewer's visible events are kept until an event
changes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..event import EventRecord
from .base import IndexFilter

HOUSEHOLD = -1
"""Audience code of a record everyone in the household may see."""
NOBODY = -2
"""Audience code of an event not described yet."""
ARRAYS = ("when", "ts", "user", "source", "aud", "live")
"""The per-event arrays (saved with the index)."""


class EventFilters:
    """The per-event arrays and the names their codes stand for."""

    def __init__(self) -> None:
        self.when = np.zeros(0, dtype=np.float64)
        self.ts = np.zeros(0, dtype=np.float64)
        self.user = np.zeros(0, dtype=np.int32)
        self.source = np.zeros(0, dtype=np.int32)
        # audience per event as a code into audiences (HOUSEHOLD: everyone; NOBODY: not
        # described yet): the visibility mask is one vectorised comparison per query
        self.aud = np.zeros(0, dtype=np.int32)
        self.live = np.zeros(0, dtype=bool)
        self.codes: dict[str, int] = {}
        self.audiences: list[frozenset[str]] = []
        self._audience_codes: dict[frozenset[str], int] = {}
        # viewer -> live events that viewer may see; emptied by changed()
        self._seen: dict[str, np.ndarray] = {}

    def changed(self) -> None:
        """Forget the viewers' visibility masks (an event's liveness or audience changed)."""
        self._seen = {}

    def reserve(self, size: int) -> None:
        """Room for event ids below ``size``."""
        self.when = grow(self.when, size, np.nan)
        self.ts = grow(self.ts, size, np.nan)
        self.user = grow(self.user, size, -1)
        self.source = grow(self.source, size, -1)
        self.aud = grow(self.aud, size, NOBODY)
        self.live = grow(self.live, size, False)

    def describe(self, rows: Sequence[EventRecord], deleted: set[int]) -> None:
        """Record what filters need of each event (room reserved)."""
        self.changed()
        for r in rows:
            self.when[r.id] = r.when_epoch
            self.ts[r.id] = r.ts_epoch
            self.user[r.id] = self._code(r.user)
            self.source[r.id] = self._code(r.source)
            self.live[r.id] = r.id not in deleted
            self.aud[r.id] = HOUSEHOLD if r.audience is None else self._audience(r.audience)

    def clear(self) -> None:
        """No event described or live (the arrays keep their size)."""
        self.aud[:] = NOBODY
        self.live[:] = False
        self.changed()

    def allowed(self, viewer: str, where: IndexFilter | None = None) -> np.ndarray:
        """Boolean mask over event ids: live, visible to ``viewer`` and within ``where``
        (a fresh array the caller may change)."""
        seen = self._seen.get(viewer)
        if seen is None:  # one table lookup per event: kept until an event changes
            seen_by_viewer = [c for c, aud in enumerate(self.audiences) if viewer in aud]
            seen = self.live & member(self.aud, [HOUSEHOLD, *seen_by_viewer],
                                      low=NOBODY, high=len(self.audiences))
            self._seen[viewer] = seen
        mask = seen.copy()
        if where is not None:
            if where.start is not None or where.end is not None:
                said = within(self.ts, where)
                planned = [self.codes[s] for s in where.scheduled if s in self.codes]
                if planned:
                    said &= ~member(self.source, planned, low=-1, high=len(self.codes))
                mask &= within(self.when, where) | said
            if where.observed_before is not None:
                mask &= self.ts <= where.observed_before
            if where.users is not None:
                codes = [self.codes[u] for u in where.users if u in self.codes]
                mask &= member(self.user, codes, low=-1, high=len(self.codes))
            if where.sources is not None:
                codes = [self.codes[s] for s in where.sources if s in self.codes]
                mask &= member(self.source, codes, low=-1, high=len(self.codes))
        return mask

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays by name (:data:`ARRAYS`), to save."""
        return {name: getattr(self, name) for name in ARRAYS}

    def names(self) -> dict[str, list[object]]:
        """What the codes stand for, to save beside the arrays."""
        return {"codes": list(self.codes), "audiences": [sorted(a) for a in self.audiences]}

    def restore(self, arrays: dict[str, np.ndarray], codes: list[str],
                audiences: list[frozenset[str]]) -> None:
        """Take saved arrays and names back."""
        for name in ARRAYS:
            setattr(self, name, arrays[name])
        self.codes = {name: i for i, name in enumerate(codes)}
        self.audiences = audiences
        self._audience_codes = {a: i for i, a in enumerate(audiences)}
        self.changed()

    def _audience(self, audience: Sequence[str]) -> int:
        key = frozenset(audience)
        if key not in self._audience_codes:
            self._audience_codes[key] = len(self.audiences)
            self.audiences.append(key)
        return self._audience_codes[key]

    def _code(self, name: str) -> int:
        return self.codes.setdefault(name, len(self.codes))


def within(times: np.ndarray, where: IndexFilter) -> np.ndarray:
    """Which of ``times`` lie in the filter's time range."""
    inside = np.ones(len(times), dtype=bool)
    if where.start is not None:
        inside &= times >= where.start
    if where.end is not None:
        inside &= times <= where.end
    return inside


def member(codes: np.ndarray, wanted: Sequence[int], *, low: int, high: int) -> np.ndarray:
    """``np.isin(codes, wanted)`` for small integer codes in [low, high): one table lookup
    per element instead of a sort."""
    table = np.zeros(high - low, dtype=bool)
    table[np.asarray(wanted, dtype=np.int64) - low] = True
    return table[codes - low]


def grow(arr: np.ndarray, size: int, fill: object) -> np.ndarray:
    out = np.full(size, fill, dtype=arr.dtype)
    out[: len(arr)] = arr
    return out
