"""Every error memfuse_lite raises on purpose derives from :class:`MemFuseError`.

    MemFuseError
    ├── InvalidObservation     a record failed validation (``.field`` names the field)
    ├── InvalidQuery           a search/ask argument is malformed
    ├── InvalidConfig          a configuration value is out of range (also a ValueError)
    ├── NotFound               an id that does not exist (or is not visible to the viewer)
    ├── StoreError             the SQLite store cannot be opened or written
    │   └── StoreCorrupt       the database file is damaged (never read as an empty memory)
    ├── IndexMismatch          a derived index was built by another embedding model
    ├── ModelError             a local model cannot be used
    │   ├── ModelNotPrepared   its files are missing (the message names the command that fixes it)
    │   └── ModelChecksumError its files do not match the pinned sha256
    ├── LLMError               the local LLM failed or returned unusable output
    ├── MemoryClosed           the memory was used after ``close()``
    └── MemoryInUse            the directory is already open (in this or another process)

Errors of apsw, hnswlib, tantivy, onnxruntime and llama.cpp are translated at the
boundary with ``raise ... from exc`` so the original stays in the traceback.
"""

from __future__ import annotations

__all__ = [
    "IndexMismatch",
    "InvalidConfig",
    "InvalidObservation",
    "InvalidQuery",
    "LLMError",
    "MemFuseError",
    "MemoryClosed",
    "MemoryInUse",
    "ModelChecksumError",
    "ModelError",
    "ModelNotPrepared",
    "NotFound",
    "StoreCorrupt",
    "StoreError",
]


class MemFuseError(Exception):
    """Base class of every memfuse_lite error."""


class InvalidObservation(MemFuseError):
    """An observation failed validation; ``field`` names the offending field."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"invalid observation: {field}: {reason}")
        self.field = field
        self.reason = reason


class InvalidQuery(MemFuseError):
    """A query or one of its arguments is malformed."""


class InvalidConfig(MemFuseError, ValueError):
    """A configuration value is out of range or of the wrong kind."""


class NotFound(MemFuseError):
    """The requested record does not exist or is not visible to the viewer."""


class StoreError(MemFuseError):
    """The SQLite store cannot be opened or written."""


class StoreCorrupt(StoreError):
    """The SQLite database file is damaged."""


class IndexMismatch(MemFuseError):
    """A derived index or the store was built with a different embedding model."""


class ModelError(MemFuseError):
    """A local model cannot be loaded or run."""


class ModelNotPrepared(ModelError):
    """A model's files are missing; the message says which command prepares them."""


class ModelChecksumError(ModelError):
    """A model file does not match the sha256 pinned in the manifest."""


class LLMError(MemFuseError):
    """The local LLM failed or produced output that could not be used."""


class MemoryClosed(MemFuseError):
    """The memory was used after it was closed."""


class MemoryInUse(MemFuseError):
    """The memory directory is already open; one ``MemFuse`` per directory at a time."""
