"""A deterministic checklist score for open questions: how much of what a reference
checklist requires an answer states.

A LifeBench question's ``score_points`` are sentences of a grader's rubric ("Point out that
on February 11th, watch the Taobao University course and take notes." — "答案中包含“全额
退款”这一解决方案"). The items a point requires are read from it, without a model:

- the phrases it quotes ("…", “…”, 「…」, 《…》), each one item, when it quotes any;
- else its dates ("February 11th" and "2月11日" are both 2-11), numbers and content words that the
  reference answer states too (the facts it names, not the rubric's own wording: point
  out, comparison, 指出, 答案中包含 …), less the event ids some points cite and the words
  of the question (an answer need not repeat them);
- when that leaves nothing ("Clarify the specific date of the father's reunion."), the
  dates and content words of the reference answer that the question does not hold.

A point's share is the share of its items the answer states (a quoted phrase counts when
the answer holds it or seven in ten of its content words); the question's score is the
points' shares weighted by their scores. The same function scores every mode, the
extractive answer and the gold evidence records joined (the ceiling of answering from the
evidence alone).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memfuse_lite.answer.wording import FUNCTION_WORDS
from memfuse_lite.text.timeexpr import MONTH_NAMES
from memfuse_lite.text.tokens import stems, words

QUOTED = re.compile(r"[\"“「『《‘]([^\"”」』》’]{2,}?)[\"”」』》’]")
EVENT_IDS = re.compile(r"[(（]\s*(?:event\s*ids?|事件\s*id)[^)）]*[)）]", re.I)
MONTHS = MONTH_NAMES
DATE_EN = re.compile(r"\b(" + "|".join(m[:3] for m in MONTHS) + r")[a-z]*\.?\s+(\d{1,2})"
                     r"(?:st|nd|rd|th)?\b", re.I)
DATE_ZH = re.compile(r"(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]")
DATE_ISO = re.compile(r"\b\d{4}-(\d{2})-(\d{2})\b")
RUBRIC = frozenset("""point points out indicate indicated indicates state stated states
mention mentioned mentions answer answers clearly clarify accurately accurate specify specific
specifically explicitly must need needs include includes including included correctly
correct describe described note noted list listed identify identified it that should
give given provide provided via through reflect reflects show shows explain explained emphasize
emphasized whether fact mentioning stating pointing requires required 指出 明确 说明 答案 包含
准确 需 需要 提到 提及 列出 具体 正确 描述 这一 应 应该 能够 回答 表明 强调 其中 以及 并且 说出
给出 体现""".split())
QUOTE_SHARE = 0.7
"""Share of a quoted phrase's content words an answer must hold to state it."""


def dates(text: str) -> set[str]:
    """Month-day dates of a text as "M-D" (English month names, 月日, ISO)."""
    out = {f"{MONTHS.index(next(x for x in MONTHS if x.startswith(m.group(1).lower()))) + 1}"
           f"-{int(m.group(2))}" for m in DATE_EN.finditer(text)}
    out |= {f"{int(m.group(1))}-{int(m.group(2))}" for m in DATE_ZH.finditer(text)}
    out |= {f"{int(m.group(1))}-{int(m.group(2))}" for m in DATE_ISO.finditer(text)}
    return out


def numbers(text: str) -> set[str]:
    """The numbers of a text outside its dates, as "#N" ("78.5 kg" → #78.5)."""
    for pattern in (DATE_EN, DATE_ZH, DATE_ISO):
        text = pattern.sub(" ", text)
    return {"#" + n for n in re.findall(r"\d+(?:\.\d+)?", text)}


def terms(text: str) -> set[str]:
    """Stemmed content words of a text (no function words, rubric words, month names or
    bare numbers: dates are compared whole)."""
    kept = [w for w in words(text) if w not in FUNCTION_WORDS and w not in RUBRIC
            and not w.isdigit() and w not in MONTHS and not re.fullmatch(r"\d+(st|nd|rd|th)", w)
            and not re.fullmatch(r"[\u3400-\u9fff]", w)]  # one Chinese character: a particle
    return set(stems(kept))


def facts(text: str) -> set[str]:
    """What a text states, as items: its dates, numbers and stemmed content words."""
    return dates(text) | numbers(text) | terms(text)


def point_items(description: str, question: str, reference: str) -> list[str | set[str]]:
    """The items a rubric point requires: quoted phrases (as text), or dates and words."""
    description = EVENT_IDS.sub(" ", description)
    quoted = [q.strip() for q in QUOTED.findall(description) if terms(q) or dates(q)]
    if quoted:
        return list(quoted)
    asked = facts(question)
    answered = facts(reference) - asked
    items = facts(description) & answered or answered
    return [{item} for item in sorted(items)]


def states(answer: str, item: str | set[str], said: set[str]) -> bool:
    """Whether an answer (``said``: its dates and terms) states one item."""
    if isinstance(item, set):
        return bool(item & said)
    if _squeeze(item) in _squeeze(answer):
        return True
    need = facts(item)
    return len(need & said) >= QUOTE_SHARE * len(need)


def checklist_score(answer: str, points: Sequence[tuple[str, float]], question: str,
                    reference: str) -> float:
    """The weighted share of the rubric ``points`` (description, score) ``answer`` states."""
    said = facts(answer)
    total = got = 0.0
    for description, score in points:
        items = point_items(description, question, reference)
        if not items:
            continue
        total += score
        got += score * sum(states(answer, i, said) for i in items) / len(items)
    return got / total if total else 0.0


def _squeeze(text: str) -> str:
    """Lowercase, without spaces and punctuation (for phrase containment)."""
    return re.sub(r"[\W_]+", "", text.lower())
