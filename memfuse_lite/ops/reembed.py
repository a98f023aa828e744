"""Recomputing every event's embedding (a new model, or a canonical order)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..config import MemFuseConfig
from ..embed.base import Embedder
from ..engine import (
    DB_FILE,
    EMBEDDER_META,
    embedder_meta,
    load_default_embedder,
    lock_directory,
    require_memory,
)
from ..store.sqlite import Store


def reembed_events(store: Store, embedder: Embedder, *, batch: int = 1024) -> int:
    """Embed every event again, in id order and fixed batches; returns the count.

    The order and batch size are fixed because a dynamically quantised model's output
    depends slightly on the other texts of its batch, enough to tip a borderline fusion
    decision: the same events always get the same vectors."""
    last = done = 0
    while True:
        with store.reading() as db:
            rows: list[tuple[Any, ...]] = db.execute(
                "SELECT id, text FROM events WHERE id > ? ORDER BY id LIMIT ?",
                (last, batch)).fetchall()
        if not rows:
            return done
        vectors = embedder.embed([str(r[1]) for r in rows])
        with store.atomic() as db:
            db.executemany("UPDATE events SET embedding = ? WHERE id = ?",
                           [(np.asarray(v, np.float32).tobytes(), r[0])
                            for r, v in zip(rows, vectors, strict=True)])
        done += len(rows)
        last = int(rows[-1][0])


def reembed(path: str | Path, *, config: MemFuseConfig | None = None,
            embedder: Embedder | None = None, batch: int = 256) -> int:
    """Recompute every event's embedding with a new model; returns events re-embedded.

    The memory must be closed; the dense index is rebuilt from the new vectors the next
    time it opens."""
    config = config if config is not None else MemFuseConfig()
    embedder = embedder if embedder is not None else load_default_embedder(config)
    root = Path(path).expanduser()
    require_memory(root)
    lock = lock_directory(root)
    try:
        store = Store(root / DB_FILE, durability=config.durability)
    except BaseException:
        lock.close()
        raise
    try:
        done = reembed_events(store, embedder, batch=batch)
        store.meta_set(EMBEDDER_META, embedder_meta(embedder.info))
    finally:
        store.close()
        lock.close()
    for name in ("dense.hnsw", "dense.json"):
        (root / name).unlink(missing_ok=True)
    return done
