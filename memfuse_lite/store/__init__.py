"""The SQLite store: the single source of truth."""

from .sqlite import Store, StoredObservation

__all__ = ["Store", "StoredObservation"]
