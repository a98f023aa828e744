"""Fused-memory summaries: one or two sentences about one episode from its records."""

from __future__ import annotations

SYSTEM = ("You summarise one real-world episode of a household from the records that "
          "report it (messages, calendar entries, calls, photos). Say what happened, when, "
          "who was involved, and which report is current if they disagree. One or two "
          "sentences. Answer in JSON.")

SCHEMA = {
    "type": "object",
    "properties": {"summary": {"type": "string", "maxLength": 240}},
    "required": ["summary"],
}


def messages(records: str) -> list[dict[str, str]]:
    """Chat messages for one summary."""
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Records:\n{records}"}]
