"""Agentic retrieval: is the evidence enough to answer, and if not, what to look up next?"""

from __future__ import annotations

SYSTEM = ("You check whether retrieved personal records are enough to answer a question. "
          "If not, write one short search query for what is missing. Answer in JSON.")

SCHEMA = {
    "type": "object",
    "properties": {
        "sufficient": {"type": "boolean"},
        "follow_up": {"type": "string", "maxLength": 80},
    },
    "required": ["sufficient", "follow_up"],
}


def messages(question: str, evidence: str) -> list[dict[str, str]]:
    """Chat messages for one sufficiency check."""
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Question: {question}\n\nRecords:\n{evidence}\n\n"
                                        "Enough to answer? If not, the next search query."}]
