"""Forgetting observations and everything derived from them.

SQLite commits first; the indexes and the graph follow. A crash in between is repaired
on the next open: index labels the store no longer has are dropped, and fused documents
are rewritten because the dirty flag set inside the transaction is still there.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from ..engine import Engine
from ..errors import InvalidQuery
from ..fusion.agent import FusionChange
from ..fusion.runtime import (
    FUSED_DOCS_DIRTY,
    apply_documents,
    fused_documents,
    mark_documents_stale,
)
from ..records import ForgetResult
from ..store.forget import delete_observations, select_observations
from ..store.sync import record_tombstones
from ..timeutil import to_epoch

log = logging.getLogger("memfuse_lite")


def forget(engine: Engine, *, observation: int | Sequence[int] | None = None,
           source: str | None = None, user: str | None = None,
           before: datetime | None = None) -> ForgetResult:
    """Delete the observations matching every given criterion, and what came from them
    (``before``: an instant, as :meth:`memfuse_lite.MemFuse.forget` makes it)."""
    if observation is None and source is None and user is None and before is None:
        raise InvalidQuery("forget() needs observation, source, user or before")
    if isinstance(observation, bool) or (observation is not None and not isinstance(
            observation, int | list | tuple)):
        raise InvalidQuery("observation must be an observation id or a list of ids")
    ids = [observation] if isinstance(observation, int) else observation
    cutoff = to_epoch(before) if before is not None else None
    store = engine.store
    with engine.lock:
        with store.atomic() as db:
            chosen = select_observations(db, observations=ids, source=source, user=user,
                                         before=cutoff)
            record_tombstones(db, chosen)  # a memory that syncs tells its other devices
            gone = delete_observations(db, chosen)
            change = FusionChange(removed=set(gone.fused_removed), events_removed=gone.events,
                                  fused_docs=fused_documents(db, gone.fused_changed))
            if gone.fused_removed or gone.fused_changed:
                mark_documents_stale(db)
        erase = engine.config.index.erase_on_forget
        engine.dense.remove(gone.events)
        if erase:  # the old documents of the touched fused memories held forgotten text
            engine.text.erase_documents(gone.events, sorted({*gone.fused_removed,
                                                             *gone.fused_changed}))
        else:
            engine.text.remove(gone.events)
        if engine.fusion is not None:
            engine.fusion.apply(change, engine.text)
            with store.reading() as db:
                engine.fusion.agent.load_zone(db)
        else:
            apply_documents(change, engine.text)
        compacted = engine.dense.compact_if_worthwhile(store.index_rows)
        if erase:
            engine.text.erase()
            if not compacted:
                engine.dense.erase()
        for index in engine.indexes:
            index.persist()
        store.meta_delete(FUSED_DOCS_DIRTY)
        engine.views.invalidate()
        store.checkpoint()
    log.info("forgot %d observations, %d events, %d fused memories", len(gone.observations),
             len(gone.events), len(gone.fused_removed))
    return ForgetResult(observations=len(gone.observations), events=len(gone.events),
                        edges=gone.edges, fused_removed=len(gone.fused_removed),
                        fused_updated=len(gone.fused_changed), dense_compacted=compacted)
