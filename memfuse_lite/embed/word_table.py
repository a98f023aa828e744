"""A token-embedding table kept on disk and read row by row.

A multilingual encoder's table is most of its weights (250,000 rows) while a batch of
texts needs a few thousand of them. Reading those rows with ``os.pread`` keeps the table
out of the process's memory: the operating system's page cache holds the file, shared
and reclaimable, instead of a private copy in the ONNX session. Reads are positional, so
threads need no lock.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelError


class WordTable:
    """Rows of a raw ``(rows, dims)`` array in a file, looked up by token id."""

    def __init__(self, path: Path, dtype: str, shape: tuple[int, int]) -> None:
        self.path = Path(path)
        self.dtype = np.dtype(dtype)
        self.rows, self.dims = int(shape[0]), int(shape[1])
        self.row_bytes = self.dims * self.dtype.itemsize
        expected = self.rows * self.row_bytes
        if not self.path.exists() or self.path.stat().st_size != expected:
            raise ModelError(f"{self.path} should hold {self.rows} x {self.dims} "
                             f"{self.dtype} ({expected} bytes)")
        self._file = self.path.open("rb")  # closed with the table

    @classmethod
    def from_card(cls, model_dir: Path, spec: dict[str, Any]) -> WordTable:
        """The table a model card's ``word_table`` entry describes."""
        shape = spec["shape"]
        return cls(Path(model_dir) / spec["file"], spec["dtype"], (shape[0], shape[1]))

    def lookup(self, ids: np.ndarray) -> np.ndarray:
        """The rows of ``ids`` (any shape), as an array of shape ``ids.shape + (dims,)``."""
        distinct, where = np.unique(ids, return_inverse=True)
        if distinct.size and (distinct[0] < 0 or distinct[-1] >= self.rows):
            raise ModelError(f"token id outside the {self.rows}-row table in {self.path}")
        fd, width = self._file.fileno(), self.row_bytes
        data = b"".join(os.pread(fd, width, int(i) * width) for i in distinct)
        table = np.frombuffer(data, dtype=self.dtype).reshape(distinct.size, self.dims)
        return table[where.reshape(ids.shape)]

    def close(self) -> None:
        """Close the file."""
        self._file.close()
