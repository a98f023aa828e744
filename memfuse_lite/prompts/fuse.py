"""Fusion arbitration: is a new report part of the same real-world episode?"""

from __future__ import annotations

from collections.abc import Sequence

SYSTEM = ("You decide whether a new phone record describes the same real-world episode as "
          "earlier records (the same appointment, trip, dinner, delivery…), possibly "
          "rescheduled or reported by another app or person. Answer in JSON.")

SCHEMA = {
    "type": "object",
    "properties": {"same_episode": {"type": "boolean"}},
    "required": ["same_episode"],
}

MAX_CHARS = 220


def messages(new: str, new_meta: str, earlier: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """Chat messages for one decision; texts are truncated to keep the call short."""
    lines = [f"- ({meta}) {text[:MAX_CHARS]}" for text, meta in earlier]
    user = ("Earlier records:\n" + "\n".join(lines)
            + f"\n\nNew record: ({new_meta}) {new[:MAX_CHARS]}\n\nSame episode?")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
