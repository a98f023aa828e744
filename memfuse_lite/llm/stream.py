"""Streaming one string field out of a JSON object while a model writes it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r",
            "t": "\t"}


class FieldStream:
    """Fed the raw text of a JSON object piece by piece (:meth:`feed`), passes the decoded
    characters of the top-level string field ``name`` to ``sink`` as they arrive: the
    answer a schema-constrained model writes, shown while it writes the rest. Escapes split
    across pieces are held until whole; the field's closing quote ends it."""

    def __init__(self, name: str, sink: Callable[[str], None]) -> None:
        self._opening = re.compile(r'^\s*\{.*?"' + re.escape(name) + r'"\s*:\s*"', re.S)
        self._sink = sink
        self._seen = ""  # raw text before the field's value opens
        self._pending = ""  # raw value text not yet decoded (an escape cut in two)
        self.state = "before"  # before → inside → done

    def feed(self, piece: str) -> None:
        """Take the next piece of the model's raw output."""
        if self.state == "done" or not piece:
            return
        if self.state == "before":
            self._seen += piece
            found = self._opening.match(self._seen)
            if found is None:
                return
            self.state, piece = "inside", self._seen[found.end():]
        self._decode(self._pending + piece)

    def _decode(self, raw: str) -> None:
        out, i = [], 0
        while i < len(raw):
            ch = raw[i]
            if ch == '"':
                self.state = "done"
                break
            if ch != "\\":
                out.append(ch)
                i += 1
                continue
            if i + 1 >= len(raw):
                break  # the escape goes on in the next piece
            kind = raw[i + 1]
            if kind == "u":
                # a character beyond the first plane is written as two escapes
                width = 12 if 0xD800 <= int(raw[i + 2:i + 6] or "0", 16) < 0xDC00 else 6
                if i + width > len(raw) or i + 6 > len(raw):
                    break
                out.append(json.loads(f'"{raw[i:i + width]}"'))
                i += width
                continue
            out.append(_ESCAPES.get(kind, kind))
            i += 2
        self._pending = raw[i:] if self.state == "inside" else ""
        if out:
            self._sink("".join(out))
