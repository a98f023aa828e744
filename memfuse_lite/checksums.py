"""sha256 of files: every model file is checked before it is loaded, an index file
against its sidecar."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

from .errors import ModelChecksumError, ModelNotPrepared


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def verify_files(directory: Path, expected: Mapping[str, str]) -> None:
    """Raise unless every named file exists under ``directory`` with the given sha256."""
    for name, digest in expected.items():
        path = Path(directory) / name
        if not path.exists():
            raise ModelNotPrepared(f"{path} is missing: run `memfuse models prepare`")
        actual = sha256_file(path)
        if actual != digest:
            raise ModelChecksumError(
                f"{path} has sha256 {actual[:16]}…, expected {digest[:16]}…: the file is "
                "corrupt or was replaced; delete it and run `memfuse models prepare`"
            )
