"""When every stored event was observed and what time it refers to, held in memory for
fusion: the events observed around a moment, the plans due in a span and the times of
candidates are asked for several times per new event, and a statement per question cost
more than the answer.

The timeline is derived from SQLite (``events.ts_epoch``, ``event_start``, ``source``): it
is read at its first use, follows each fused batch, and is dropped whenever stored events
change otherwise (a forget, a rebuild: :meth:`Timeline.clear`). About 50 bytes an event
with its two orders (5 MB per 100k events).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import apsw
import numpy as np

from ..sources import profile_of
from ..timeutil import epoch_of
from .model import DAY, EventView

UNSORTED_TAIL = 512
"""Rows appended since an order was last brought up to date that are scanned, not
searched; then they are merged into it (a copy of the order per this many events)."""

PLAN_LOOKUP = 200
"""At most this many scheduled events are read as what a report of a change may replace."""


class _Order:
    """Row positions sorted by one column's values (NaN rows left out) for the rows before
    ``upto``; the rows after it are scanned until merged in."""

    def __init__(self) -> None:
        self.upto = 0
        self.rows = np.zeros(0, dtype=np.int64)
        self.keys = np.zeros(0, dtype=np.float64)

    def cut(self, n: int) -> None:
        """Rows from ``n`` on are gone."""
        if n < self.upto:
            kept = self.rows < n
            self.rows, self.keys, self.upto = self.rows[kept], self.keys[kept], n

    def between(self, column: np.ndarray, n: int, lo: float, hi: float) -> np.ndarray:
        """Positions of the first ``n`` rows whose value is from ``lo`` to ``hi``."""
        if n - self.upto > UNSORTED_TAIL:
            self._merge(column, n)
        found = self.rows[self.keys.searchsorted(lo, "left") : self.keys.searchsorted(hi, "right")]
        if n == self.upto:
            return found
        tail = column[self.upto : n]
        return np.concatenate([found, self.upto + np.flatnonzero((tail >= lo) & (tail <= hi))])

    def _merge(self, column: np.ndarray, n: int) -> None:
        new = np.arange(self.upto, n)
        new = new[~np.isnan(column[new])]
        new = new[np.argsort(column[new], kind="stable")]
        at = np.searchsorted(self.keys, column[new], side="right")
        self.rows = np.insert(self.rows, at, new)
        self.keys = np.insert(self.keys, at, column[new])
        self.upto = n


class Timeline:
    """Observation time, ``when`` (event start, else observation time), event start and app
    of every stored event, by id; rows appended in increasing id order. Not locked: fusion
    runs under the engine's lock."""

    def __init__(self) -> None:
        self._loaded = False
        self._n = 0
        self._ids = np.zeros(0, dtype=np.int64)
        self._ts = np.zeros(0, dtype=np.float64)
        self._start = np.zeros(0, dtype=np.float64)  # NaN: no event time
        self._source = np.zeros(0, dtype=np.int32)
        self._sources: dict[str, int] = {}
        self._by_ts = _Order()
        self._by_start = _Order()

    def __len__(self) -> int:
        return self._n

    def clear(self) -> None:
        """Forget everything: read again from SQLite at the next :meth:`begin`."""
        self.__init__()  # type: ignore[misc]

    def begin(self, db: apsw.Connection, events: Sequence[EventView]) -> None:
        """Hold what fusing ``events`` (already inserted, in ``db``) may ask about: every
        stored event below the first of them, then them. Read at its first use; held rows
        from the first of ``events`` on are dropped and appended again (a rolled-back
        batch's ids are given out again; a rebuild fuses stored events again)."""
        first = min((e.id for e in events), default=None)
        if not self._loaded:
            self._load(db, first)
        elif first is not None:
            cut = int(np.searchsorted(self._ids[: self._n], first))
            if cut < self._n:
                self._n = cut
                self._by_ts.cut(cut)
                self._by_start.cut(cut)
        for e in sorted(events, key=lambda v: v.id):
            self.append(e.id, e.ts, e.start, e.source)

    def append(self, event_id: int, ts: float, start: float | None, source: str) -> None:
        """Add an event newer than all held (an event already held is left as it is)."""
        if self._n and event_id <= self._ids[self._n - 1]:
            return
        if self._n == len(self._ids):
            grow = max(1024, self._n)
            self._ids = np.concatenate([self._ids, np.zeros(grow, dtype=np.int64)])
            self._ts = np.concatenate([self._ts, np.zeros(grow)])
            self._start = np.concatenate([self._start, np.zeros(grow)])
            self._source = np.concatenate([self._source, np.zeros(grow, dtype=np.int32)])
        self._ids[self._n] = event_id
        self._ts[self._n] = ts
        self._start[self._n] = math.nan if start is None else start
        self._source[self._n] = self._sources.setdefault(source, len(self._sources))
        self._n += 1

    def within(self, ids: Sequence[int], ts: float, when: float, window: float) -> list[int]:
        """Those of ``ids`` held that were observed within ``window`` seconds of ``ts`` or
        whose ``when`` is within it of ``when`` (in the order given)."""
        if not ids or not self._n:
            return []
        wanted = np.fromiter(ids, dtype=np.int64, count=len(ids))
        held = self._ids[: self._n]
        pos = np.minimum(held.searchsorted(wanted), self._n - 1)
        seen, start = self._ts[pos], self._start[pos]
        close = (np.abs(seen - ts) <= window) | (
            np.abs(np.where(np.isnan(start), seen, start) - when) <= window)
        return [int(i) for i in wanted[(held[pos] == wanted) & close].tolist()]

    def nearest(self, at: float, before: int, n: int) -> list[int]:
        """Up to ``n`` events with ids below ``before`` observed within a day of ``at``,
        closest first (ties: lower id first)."""
        if n <= 0 or not self._n:
            return []
        pos = self._by_ts.between(self._ts, self._n, at - DAY, at + DAY)
        ids = self._ids[pos]
        earlier = ids < before
        ids, gap = ids[earlier], np.abs(self._ts[pos[earlier]] - at)
        if len(gap) > n:  # the n closest and their ties, before ordering them
            close = gap <= np.partition(gap, n - 1)[n - 1]
            ids, gap = ids[close], gap[close]
        return [int(i) for i in ids[np.lexsort((ids, gap))[:n]].tolist()]

    def plans(self, before: int, start: float, end: float, written_by: float) -> list[int]:
        """Plans among the latest :data:`PLAN_LOOKUP` events with ids below ``before`` whose
        event time falls within a day of the span from ``start`` to ``end``, the latest
        first: reported schedules (from apps that do not record the moment of recording)
        due in the span, written down by ``written_by`` and before they were due."""
        if not self._n:
            return []
        pos = self._by_start.between(self._start, self._n, start - DAY, end + DAY)
        pos = np.sort(pos[self._ids[pos] < before])[::-1][:PLAN_LOOKUP]  # rows: id order
        due, ts = self._start[pos], self._ts[pos]
        moment = np.asarray([profile_of(s).records_moment for s in self._sources], dtype=bool)
        keep = ((start <= due) & (due <= end) & (ts < due) & (ts <= written_by)
                & ~moment[self._source[pos]])
        return [int(i) for i in self._ids[pos[keep]].tolist()]

    def _load(self, db: apsw.Connection, below: int | None) -> None:
        """Read every stored event below ``below`` at once, each distinct time text
        parsed once."""
        rows = db.execute("SELECT id, ts_epoch, event_start, source FROM events WHERE id < ?"
                          " ORDER BY id", (below if below is not None else 2**62,)).fetchall()
        n, room = len(rows), len(rows) + 1024
        ids, ts, starts, sources = zip(*rows, strict=True) if rows else ((), (), (), ())
        epochs = {text: epoch_of(str(text)) for text in set(starts) if text is not None}
        codes = self._sources
        self._ids = np.zeros(room, dtype=np.int64)
        self._ts = np.zeros(room)
        self._start = np.zeros(room)
        self._source = np.zeros(room, dtype=np.int32)
        self._ids[:n] = ids
        self._ts[:n] = ts
        self._start[:n] = [math.nan if text is None else epochs[text] for text in starts]
        self._source[:n] = [codes.setdefault(str(name), len(codes)) for name in sources]
        self._n = n
        self._loaded = True
