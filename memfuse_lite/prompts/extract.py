"""Event extraction: refine the rule-based fields of one observation."""

from __future__ import annotations

SYSTEM = ("You read one record from a phone (a message, calendar entry, call, photo…) and "
          "extract the real-world event it is about. Resolve relative dates against the "
          "record time. Use ISO-8601 (YYYY-MM-DDTHH:MM) or null. Answer in JSON.")

SCHEMA = {
    "type": "object",
    "properties": {
        "event_start": {"type": ["string", "null"], "maxLength": 20},
        "event_end": {"type": ["string", "null"], "maxLength": 20},
        "actors": {"type": "array", "items": {"type": "string", "maxLength": 40},
                   "maxItems": 5},
        "place": {"type": ["string", "null"], "maxLength": 60},
        "description": {"type": "string", "maxLength": 160},
    },
    "required": ["event_start", "actors", "place", "description"],
}

MAX_CHARS = 600


def messages(source: str, user: str, ts: str, text: str) -> list[dict[str, str]]:
    """Chat messages for one record (its text truncated)."""
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Record from {source} of {user} at {ts}:\n"
                                        f"{text[:MAX_CHARS]}"}]
