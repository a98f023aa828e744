"""Keeping the derived indexes in line with SQLite (at open, and rebuilt on demand)."""

from __future__ import annotations

import logging

from .index.factory import Indexes
from .store.sqlite import Store

log = logging.getLogger("memfuse_lite")


def catch_up(store: Store, indexes: Indexes) -> bool:
    """Bring every index up to the store's last event: rebuild an index that is ahead of
    the store, add what it lacks, drop what the store no longer has. Returns whether the
    text index had events added (its fused-memory documents then need rewriting)."""
    top = store.max_event_id()
    text_refilled = False
    if not indexes.dense.described:
        for batch in store.index_rows(after=0, batch=5000, vectors=False):
            indexes.dense.describe(batch)
        indexes.dense.described = True
    stored = store.counts()["events"]
    live: set[int] | None = None
    for index in indexes:
        if index.watermark > top:
            log.warning("%s index is ahead of the store; rebuilding it", index.name)
            index.reset()
        behind = 0
        for rows in store.index_rows(after=index.watermark):
            index.add(rows)
            behind += len(rows)
        # An index that is not behind and holds as many events as the store holds the same
        # ones; only otherwise are its labels listed and compared: a forget interrupted
        # before the indexes followed leaves events the store no longer has, one
        # interrupted while the text index wrote a segment's documents again leaves
        # events below the watermark out.
        stale: set[int] = set()
        if behind or index.event_count() != stored:
            live = store.event_ids() if live is None else live
            held = index.labels()
            stale = held - live
            missing = sorted(live - held)
            if missing:
                index.add(store.index_rows_of(missing, vectors=index is indexes.dense))
                behind += len(missing)
        if stale and index is indexes.text:
            indexes.text.erase_documents(sorted(stale), ())
        elif stale:
            index.remove(sorted(stale))
        if stale:
            index.erase()
        if behind and index is indexes.text:
            text_refilled = True
        if behind or stale:
            if index.rebuilt_reason:
                log.warning("rebuilt the %s index from SQLite (%d events): %s", index.name,
                            behind, index.rebuilt_reason)
            else:
                log.info("%s index caught up %d events, dropped %d", index.name, behind,
                         len(stale))
            index.persist()
    return text_refilled


def rebuild(store: Store, indexes: Indexes) -> bool:
    """Drop and rebuild every index from SQLite; returns :func:`catch_up`'s answer."""
    for index in indexes:
        index.reset()
    return catch_up(store, indexes)

