"""Durable asynchronous ingestion: inbox, queue, batch processor."""

from .processor import BatchProcessor, StageTimes
from .queue import IngestQueue

__all__ = ["BatchProcessor", "IngestQueue", "StageTimes"]
