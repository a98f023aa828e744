"""Query planning: rewrites and constraints for a question about personal records."""

from __future__ import annotations

SYSTEM = ("You plan a search over a person's phone records (sms, calendar, call, photo, note, "
          "push, chat, email). Given a question and the current date, give up to two short "
          "keyword rewrites, the date range it asks about (ISO dates, or null), the app it "
          "names (or null) and the people it names (or an empty list). Answer in JSON.")

SOURCES = ["sms", "calendar", "call", "photo", "note", "push", "chat", "email"]

SCHEMA = {
    "type": "object",
    "properties": {
        "rewrites": {"type": "array", "items": {"type": "string", "maxLength": 60},
                     "maxItems": 2},
        "start": {"type": ["string", "null"], "maxLength": 10},
        "end": {"type": ["string", "null"], "maxLength": 10},
        "source": {"enum": [*SOURCES, None]},
        "people": {"type": "array", "items": {"type": "string", "maxLength": 30},
                   "maxItems": 3},
    },
    "required": ["rewrites", "start", "end", "source", "people"],
}


def messages(question: str, today: str) -> list[dict[str, str]]:
    """Chat messages for one plan."""
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Today: {today}\nQuestion: {question}"}]
