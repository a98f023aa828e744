"""The components of one open memory, built in one place.

:func:`open_engine` locks the directory, opens the store, checks the embedder against
the one the memory was built with, opens the indexes and brings them up to the store,
and starts fusion. Everything else (the ``MemFuse`` facade, the pipelines, the
whole-memory operations in :mod:`memfuse_lite.ops`) works on the :class:`Engine`.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from .clock import LEGACY_ZONE, Clock, machine_zone
from .config import MemFuseConfig
from .derived import catch_up
from .embed.base import Embedder, EmbedderInfo
from .errors import IndexMismatch, MemoryInUse, NotFound
from .fusion.graph import FusionGraph
from .fusion.runtime import FUSED_DOCS_DIRTY, FusionRuntime, reindex_documents
from .index.base import DenseIndex, TextIndex
from .index.factory import Indexes, open_indexes
from .llm.base import LLM
from .llm.pool import LLMPool
from .store.sqlite import Store
from .views import MemoryViews

log = logging.getLogger("memfuse_lite")

DB_FILE = "memfuse.db"
LOCK_FILE = "memfuse.lock"
READERS_DIR = "readers"
Role = Literal["owner", "reader"]
EMBEDDER_META = "embedder"
HOME_ZONE_META = "home_tz"


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
    lockfile: IO[bytes] | None
    clock: Clock
    """Reads times given without an offset (:mod:`memfuse_lite.clock`)."""
    role: Role = "owner"
    """``owner``: this process ingests and writes the derived indexes; ``reader``: another
    process owns the memory, this one reads SQLite and a private copy of the indexes."""
    index_dir: Path | None = None
    """Where the derived indexes live (the memory's directory, or a reader's copy)."""
    data_version: int = 0
    """SQLite's data version when the indexes and graph were last brought up to it."""

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

    def close(self, *, keep_models: bool = False) -> None:
        """Persist the indexes, close the store, release the models (unless
        ``keep_models``: another engine took them over) and the directory."""
        with self.lock:
            try:
                if self.graph is not None:
                    self.graph.close()  # a background read of its edges stops
                for index in self.indexes:
                    index.close()
                self.store.close()
                if not keep_models:
                    self.llms.close()
            finally:
                if self.lockfile is not None:
                    self.lockfile.close()
                if self.role == "reader" and self.index_dir is not None:
                    shutil.rmtree(self.index_dir, ignore_errors=True)


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
    """Hold an exclusive lock on the directory for as long as the memory is open by its
    owner (two writers would corrupt the derived indexes); released by close() or process
    exit."""
    handle = try_lock(path)
    if handle is None:
        raise MemoryInUse(f"{path} is owned by another process (an MCP server, an ingest); "
                          "this needs the owner: stop that process first")
    return handle


def try_lock(path: Path) -> IO[bytes] | None:
    """The owner's lock on ``path``, or None while another process holds it."""
    handle = open(path / LOCK_FILE, "a+b")  # noqa: SIM115 - held until close()
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle


def owner_running(path: Path) -> bool:
    """Whether another process owns ``path`` now."""
    handle = try_lock(path)
    if handle is None:
        return True
    handle.close()
    return False


def reader_snapshot(path: Path) -> Path:
    """A private copy of the owner's derived index files, for a reader process: hard
    links (the owner replaces its files whole and never edits them in place, so a link
    keeps the version this reader opened), or copies where links cannot be made. The
    reader brings its copy up to SQLite and writes only there; a copy the owner was
    writing as it was taken fails its own checks and is rebuilt from SQLite."""
    root = path / READERS_DIR
    root.mkdir(exist_ok=True)
    for old in root.iterdir():  # left by readers that were killed
        pid = old.name.split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    snap = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=root))
    for item in path.iterdir():
        if item.name in (READERS_DIR, LOCK_FILE) or item.name.startswith(DB_FILE):
            continue
        _link_tree(item, snap / item.name)
    return snap


def _link_tree(src: Path, dst: Path) -> None:
    if src.is_dir():
        dst.mkdir()
        for child in src.iterdir():
            if not child.name.endswith(".lock"):  # a lock is the owner's own
                _link_tree(child, dst / child.name)
        return
    try:
        os.link(src, dst)
    except FileNotFoundError:
        return  # replaced or deleted by the owner meanwhile: the index checks catch it
    except OSError:
        with contextlib.suppress(FileNotFoundError):
            shutil.copy2(src, dst)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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


def home_zone(store: Store, config: MemFuseConfig) -> str:
    """The memory's home zone, recorded when it is first opened: ``config.tz`` or this
    machine's zone for a new memory, UTC for one that holds records from before home zones
    (it read offset-less times as UTC)."""
    recorded = store.meta_get(HOME_ZONE_META)
    if recorded is None:
        legacy = store.counts()["observations"] > 0
        recorded = LEGACY_ZONE if legacy else (config.tz or machine_zone())
        store.meta_set(HOME_ZONE_META, recorded)
    return recorded


def open_engine(path: Path, *, config: MemFuseConfig, embedder: Embedder | None = None,
                llms: Mapping[str, LLM] | None = None, create: bool = True,
                mode: Literal["auto", "owner"] = "auto") -> Engine:
    """Open (or create) the memory in ``path`` and build its components: as its owner
    when no other process owns it, else (``mode="auto"``) as a reader."""
    if not create:
        require_memory(path)
    path.mkdir(parents=True, exist_ok=True)
    with ExitStack() as on_failure:  # closes what was opened if a later step fails
        lockfile = lock_directory(path) if mode == "owner" else try_lock(path)
        role: Role = "owner" if lockfile is not None else "reader"
        if lockfile is not None:
            on_failure.callback(lockfile.close)
        store = Store(path / DB_FILE, durability=config.durability, migrate=role == "owner")
        on_failure.callback(store.close)
        data_version = store.data_version()
        embedder = embedder if embedder is not None else load_default_embedder(config)
        check_embedder(store, embedder.info, path)
        home = home_zone(store, config)
        clock = Clock(config.tz or home)
        index_dir = path if role == "owner" else reader_snapshot(path)
        if role == "reader":
            on_failure.callback(shutil.rmtree, index_dir, ignore_errors=True)
        indexes = open_indexes(index_dir, config.index, dims=embedder.info.dims,
                               model_key=embedder.info.key())
        for index in indexes:
            on_failure.callback(index.close)
        indexes.dense.read_vectors_from(store.vectors)
        text_refilled = catch_up(store, indexes)
        from .prepare.registry import resolve_llm_file

        pool = LLMPool(llms, resolve=functools.partial(resolve_llm_file,
                                                       model_dir=config.model_dir),
                       n_ctx=config.llm_ctx, threads=config.threads)
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
                reindex_documents(store, indexes.text, write=role == "owner")
        on_failure.pop_all()  # opened: the engine owns them now
    return Engine(path=path, config=config, store=store, embedder=embedder, indexes=indexes,
                  llms=pool, fusion=fusion, views=MemoryViews(store, fusion, pool, config),
                  lock=threading.RLock(), lockfile=lockfile, clock=clock, role=role,
                  index_dir=index_dir, data_version=data_version)


def refresh(engine: Engine) -> bool:
    """Bring a reader's indexes, graph and caches up to what the owner has committed
    since (a no-op while SQLite is unchanged); returns whether anything was read."""
    if engine.role != "reader":
        return False
    version = engine.store.data_version()
    if version == engine.data_version:
        return False
    with engine.lock:
        text_refilled = catch_up(engine.store, engine.indexes)
        if engine.fusion is not None:
            engine.fusion.graph.close()
            engine.fusion.graph = FusionGraph.load(engine.store)
            if text_refilled:
                reindex_documents(engine.store, engine.text, write=False)
        engine.views.invalidate()
        engine.data_version = version
    return True
