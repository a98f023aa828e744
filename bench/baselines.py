"""The long-context baseline: everything the viewer may see, recorded before the
question, in time order, cut to the LLM's window from the most recent end.

Tokens are counted with the embedder's XLM-R tokenizer (a proxy for the LLM's own; both
are subword vocabularies covering Chinese and English).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from memfuse_lite.timeutil import parse_ts, to_epoch


class LongContext:
    """Observations by time, with token counts, for window-cut contexts."""

    def __init__(self, observations: Iterable[dict[str, Any]], tokenizer_dir: Path,
                 window_tokens: int = 4096) -> None:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
        tok.no_truncation()
        rows = sorted(observations, key=lambda o: to_epoch(parse_ts(o["ts"])))
        self.rows = rows
        self.epochs = [to_epoch(parse_ts(o["ts"])) for o in rows]
        texts = [f"{o['ts'][:16]} {o['user']} {o['source']}: {o['text']}" for o in rows]
        self.tokens = [len(e.ids) for e in tok.encode_batch(texts)]
        self.window = window_tokens

    @staticmethod
    def visible(viewer: str, o: dict[str, Any]) -> bool:
        """The engine's visibility rule on a raw observation."""
        vis = o.get("visibility", "household")
        return vis == "household" or o["user"] == viewer or (isinstance(vis, list)
                                                              and viewer in vis)

    def context(self, viewer: str, now: datetime | None) -> list[dict[str, Any]]:
        """The most recent visible observations before ``now`` that fit the window."""
        end = len(self.rows) if now is None else bisect.bisect_right(self.epochs, to_epoch(now))
        out, used = [], 0
        for i in range(end - 1, -1, -1):
            o = self.rows[i]
            if not self.visible(viewer, o):
                continue
            if used + self.tokens[i] > self.window:
                break
            used += self.tokens[i]
            out.append(o)
        return out[::-1]
