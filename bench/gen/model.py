"""What the generator produces: observation drafts, scenes (ground-truth happenings with
causal links) and question drafts with answer checklists."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

CATEGORIES = ("cross-source causality", "cross-source fusion", "cross-user aggregation",
              "cross-user query", "conflict arbitration", "perspective difference")


@dataclass
class Draft:
    """One observation before it gets an opaque external id; ``key`` names its role."""

    key: str
    source: str
    user: str
    device: str
    ts: datetime
    text: str
    visibility: str | list[str] = "household"
    meta: dict[str, Any] = field(default_factory=dict)
    external_id: str = ""

    def to_json(self) -> dict[str, Any]:
        """The CLI's observation JSONL format."""
        return {"source": self.source, "external_id": self.external_id, "user": self.user,
                "device": self.device, "ts": self.ts.isoformat(timespec="minutes"),
                "text": self.text, "meta": self.meta, "visibility": self.visibility}


@dataclass
class QuestionDraft:
    """A question about one scene; ``checklist`` items are alias lists, ``slot`` names
    what a distractor must not also answer."""

    category: str
    viewer: str
    text: str
    answer: str
    checklist: list[list[str]]
    evidence: list[str]
    slot: str


@dataclass
class Scene:
    """One happening of the household: its observations, causal links and questions."""

    kind: str
    lang: str
    start: datetime
    drafts: list[Draft]
    links: list[tuple[str, str, str]] = field(default_factory=list)  # (cause, effect, kind)
    questions: list[QuestionDraft] = field(default_factory=list)
    slots: dict[str, Any] = field(default_factory=dict)
    id: str = ""
    distractor_of: str | None = None

    def draft(self, key: str) -> Draft:
        """The draft with this role."""
        return next(d for d in self.drafts if d.key == key)

    @property
    def end(self) -> datetime:
        """When the last observation was recorded."""
        return max(d.ts for d in self.drafts)
