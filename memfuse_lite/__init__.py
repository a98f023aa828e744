"""memfuse_lite: an embedded, offline memory engine for personal agents.

Observations from many apps, devices and people go in (``MemFuse.ingest``); searches
come back with evidence that traces to the exact source records.
"""

from .answer import Answer, Citation, Rejected
from .answer.stream import AnswerStream
from .config import FusionConfig, IndexConfig, IngestConfig, MemFuseConfig, RetrievalConfig
from .embed import Embedder, EmbedderInfo, OnnxEmbedder
from .errors import (
    IndexMismatch,
    InvalidConfig,
    InvalidObservation,
    InvalidQuery,
    LLMError,
    MemFuseError,
    MemoryClosed,
    MemoryInUse,
    ModelChecksumError,
    ModelError,
    ModelNotPrepared,
    NotFound,
    StoreCorrupt,
    StoreError,
)
from .llm.base import LLM
from .memory import MemFuse
from .records import (
    AtomicEvent,
    Card,
    Edge,
    ForgetResult,
    FusedMemory,
    Hit,
    IngestResult,
    Observation,
    Provenance,
    SearchResult,
)
from .sources import SourceProfile, register_source
from .sync import SyncReport
from .sync_keys import SyncKey

__version__ = "0.1.0"

__all__ = [
    "Answer",
    "AnswerStream",
    "AtomicEvent",
    "Card",
    "Citation",
    "Edge",
    "Embedder",
    "EmbedderInfo",
    "ForgetResult",
    "FusedMemory",
    "FusionConfig",
    "Hit",
    "IndexConfig",
    "IndexMismatch",
    "IngestConfig",
    "IngestResult",
    "InvalidConfig",
    "InvalidObservation",
    "InvalidQuery",
    "LLM",
    "LLMError",
    "MemFuse",
    "MemFuseConfig",
    "MemFuseError",
    "MemoryClosed",
    "MemoryInUse",
    "ModelChecksumError",
    "ModelError",
    "ModelNotPrepared",
    "NotFound",
    "Observation",
    "OnnxEmbedder",
    "Provenance",
    "Rejected",
    "RetrievalConfig",
    "SearchResult",
    "SourceProfile",
    "SyncKey",
    "SyncReport",
    "StoreCorrupt",
    "StoreError",
    "register_source",
]
