"""Grounded answers: answer only from the evidence, cite it, say when it is not there."""

from __future__ import annotations

SYSTEM = ("You answer a person's question about their own life using only the numbered "
          "records given (messages, calendar entries, calls, photos, notes of their "
          "household). Cite the records you use by number. If the records do not contain "
          "the answer, say you do not know and set known to false. When records disagree, "
          "say which one is current: a record marked 'superseded by' is out of date. If the "
          "question offers lettered options (A. … B. …), begin the answer with the letter "
          "of the best option. Be brief. Answer in JSON.")

SCHEMA = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "maxLength": 400},
        "citations": {"type": "array", "items": {"type": "integer"}, "maxItems": 6},
        "known": {"type": "boolean"},
    },
    "required": ["answer", "citations", "known"],
}


def messages(question: str, now: str, evidence: str) -> list[dict[str, str]]:
    """Chat messages for one answer."""
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Now: {now}\nQuestion: {question}\n\nRecords:\n"
                                        f"{evidence}"}]
