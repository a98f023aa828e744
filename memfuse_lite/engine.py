"""The components of one open memory, built in one place.

:func:`open_engine` locks the directory, opens the store, checks the embedder against
the one the memory was built with, opens the indexes and brings them up to the store,
and starts fusion. Everything else (the ``MemFuse`` facade, the pipelines, the
whole-memory operations in :mod:`memfuse_lite.ops`) works on the :class:`Engine`.
"""

from __future__ import annotations

import fcntl
import json
import logging
import threading
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from .config import MemFuseConfig
from .embed.base import Embedder, EmbedderInfo
from .errors import IndexMismatch, MemoryInUse, NotFound
from .fusion.graph import FusionGraph
from .fusion.runtime import FUSED_DOCS_DIRTY, FusionRuntime, reindex_documents
from .index.base import DenseIndex, TextIndex
from .index.factory import Indexes, open_indexes
from .llm.base import LLM
from .llm.pool import LLMPool
from .ops.indexes import catch_up
from .store.sqlite import Store
from .views import MemoryViews

log = logging.getLogger("memfuse_lite")

DB_FILE = "memfuse.db"
LOCK_FILE = "memfuse.lock"
EMBEDDER_META = "embedder"


@dataclass
class Engine:
    """One open memory's components. ``lock`` serialises index updates with searches
    (SQLite has its own transactions; the indexes and the graph do not)."""

    path: Path
    config: MemFuseConfig
    store: Store
    embedder: Embedder
    indexes: Indexes
    llms: LLMPool
    fusion: FusionRuntime | None
    views: MemoryViews
    lock: threading.RLock
    lockfile: IO[bytes]

    @property
    def dense(self) -> DenseIndex:
        """The dense index."""
        return self.indexes.dense

    @property
    def text(self) -> TextIndex:
        """The text (BM25) index."""
        return self.indexes.text

    @property
    def graph(self) -> FusionGraph | None:
        """The fusion graph (None when fusion is off)."""
        return self.fusion.graph if self.fusion is not None else None

    def close(self) -> None:
        """Persist the indexes, close the store, release the models and the directory."""
        with self.lock:
            try:
                for index in self.indexes:
                    index.close()
                self.store.close()
                self.llms.close()
            finally:
                self.lockfile.close()


def require_memory(path: Path) -> None:
    """Raise :class:`NotFound` unless ``path`` holds a memory."""
    if not (path / DB_FILE).is_file():
        raise NotFound(f"no memory at {path} (no {DB_FILE} there): check the path, or "
                       "create one with `memfuse ingest --db PATH FILE.jsonl`")


def load_default_embedder(config: MemFuseConfig) -> Embedder:
    """The configured embedder (a manifest name or a prepared model directory), loaded on
    first use: opening a memory for BM25 search, ``show`` or ``stats`` loads no model."""
    from .embed.onnx import OnnxEmbedder
    from .prepare.registry import resolve_embedder_dir

    return OnnxEmbedder(resolve_embedder_dir(config.embedder, config.model_dir),
                        threads=config.threads, lazy=True)


def lock_directory(path: Path) -> IO[bytes]:
    """Hold an exclusive lock on the directory for as long as the memory is open (two
    writers would corrupt the derived indexes); released by close() or process exit."""
    handle = open(path / LOCK_FILE, "a+b")  # noqa: SIM115 - held until close()
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        handle.close()
        raise MemoryInUse(f"{path} is already open (in this or another process); close it "
                          "there first") from exc
    return handle


def embedder_meta(info: EmbedderInfo) -> str:
    """What the store records of the embedder its vectors came from."""
    return json.dumps({"model_id": info.model_id, "dims": info.dims, "pooling": info.pooling,
                       "content_hash": info.content_hash})


def check_embedder(store: Store, info: EmbedderInfo, path: Path) -> None:
    """Record the embedder in a new memory; refuse one the memory was not built with."""
    stored = store.meta_get(EMBEDDER_META)
    if stored is None:
        store.meta_set(EMBEDDER_META, embedder_meta(info))
        return
    was = json.loads(stored)
    if was != json.loads(embedder_meta(info)):
        raise IndexMismatch(
            f"{path} was built with embedder {was['model_id']} ({was['dims']}-d, "
            f"{was['content_hash'][:12]}), not {info.model_id} ({info.dims}-d, "
            f"{info.content_hash[:12]}): open it with the original embedder, or re-embed "
            f"with `memfuse reembed --db {path} --embedder {info.model_id}`"
        )


def open_engine(path: Path, *, config: MemFuseConfig, embedder: Embedder | None = None,
                llms: Mapping[str, LLM] | None = None, create: bool = True) -> Engine:
    """Open (or create) the memory in ``path`` and build its components."""
    if not create:
        require_memory(path)
    path.mkdir(parents=True, exist_ok=True)
    with ExitStack() as on_failure:  # closes what was opened if a later step fails
        lockfile = lock_directory(path)
        on_failure.callback(lockfile.close)
        store = Store(path / DB_FILE, durability=config.durability)
        on_failure.callback(store.close)
        embedder = embedder if embedder is not None else load_default_embedder(config)
        check_embedder(store, embedder.info, path)
        indexes = open_indexes(path, config.index, dims=embedder.info.dims,
                               model_key=embedder.info.key())
        for index in indexes:
            on_failure.callback(index.close)
        indexes.dense.read_vectors_from(store.vectors)
        text_refilled = catch_up(store, indexes)
        pool = LLMPool(llms, model_dir=config.model_dir, n_ctx=config.llm_ctx,
                       threads=config.threads)
        fusion = None
        if config.fusion.enabled:
            arbiter = None
            if config.fusion_llm:
                from .fusion.arbiter import LLMArbiter

                arbiter = LLMArbiter(pool.get(config.fusion_llm))
            fusion = FusionRuntime.open(store, config.fusion, indexes.dense, arbiter)
            if text_refilled or store.meta_get(FUSED_DOCS_DIRTY):
                # Refilled, or a forget committed in SQLite before its fused documents were
                # rewritten (a crash between the two): the documents may hold forgotten text.
                reindex_documents(store, indexes.text)
        on_failure.pop_all()  # opened: the engine owns them now
    return Engine(path=path, config=config, store=store, embedder=embedder, indexes=indexes,
                  llms=pool, fusion=fusion, views=MemoryViews(store, fusion, pool, config),
                  lock=threading.RLock(), lockfile=lockfile)
