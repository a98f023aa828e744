"""Grounded answers: answer only from the evidence, cite it, say when it is not there."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

SYSTEM = ("You answer a person's question about their own life using only the numbered "
          "records given (messages, calendar entries, calls, photos, notes of their "
          "household). Answer in the language of the question, in a sentence that states "
          "the facts the records give (who, what, when, where), and cite the numbers of the "
          "records you took them from. If the records do not contain the answer, say you do "
          "not know and set known to false. When records disagree, say which one is current: "
          "a record marked 'superseded by' is out of date. If the question offers lettered "
          "options, state the facts in answer (not a letter), then set choice to the letter "
          "of the option they match. Be brief. Answer in JSON.")

# An answer of at most 200 characters leaves room, within the 200 tokens an answer may
# take, for the citations after it even in Chinese: at 400, a model copying records into
# its answer ran out of tokens inside the string (8 of 150 household questions).
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "maxLength": 200},
        "citations": {"type": "array", "items": {"type": "integer"}, "maxItems": 6},
        "known": {"type": "boolean"},
    },
    "required": ["answer", "citations", "known"],
}


def schema(choices: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The answer schema; with lettered options, ``choice`` must be one of the letters."""
    if not choices:
        return SCHEMA
    properties: dict[str, Any] = dict(SCHEMA["properties"])
    properties["choice"] = {"enum": sorted(choices)}
    required: list[str] = ["choice", *SCHEMA["required"]]
    return {**SCHEMA, "properties": properties, "required": required}


_CJK = re.compile(r"[\u3400-\u9fff]")


def messages(question: str, now: str, evidence: str,
             choices: Mapping[str, str] | None = None) -> list[dict[str, str]]:
    """Chat messages for one answer."""
    options = "".join(f"\n{letter}. {text}" for letter, text in sorted(choices.items())) \
        if choices else ""
    asked = f"Question: {question}" + (f"\nOptions:{options}" if options else "")
    if _CJK.search(question):  # a small model answers in the system prompt's language
        asked += "\n请用中文回答。"
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Now: {now}\n{asked}\n\nRecords:\n{evidence}"}]
