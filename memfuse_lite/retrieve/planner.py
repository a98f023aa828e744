"""The rule-based query planner: rewrites and constraints (time, user, contact, source).

A constraint at confidence >= ``RetrievalConfig.constraint_min_confidence`` (0.6) filters
inside the index queries; below it, it only boosts matching events.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ..text.features import entities_of
from ..text.timerange import find_time_range
from ..timeutil import in_zone_of, to_epoch

# A source filters when the question names it as where the answer is recorded ("in my
# calendar", "the text", 短信里); a bare mention ("a chat with", 打电话, 拍照) only boosts.
_IN = r"(?:里|中|上)"
SOURCE_WORDS: list[tuple[str, str, float]] = [
    # (pattern, source, confidence when named explicitly as where the record is)
    (rf"\b(?:in|on|from) my calendar\b|\bcalendar (?:entry|event|says)\b|(?:日历|日程){_IN}",
     "calendar", 0.8),
    (rf"\b(?:the|a|my) (?:text|sms|text message)s?\b|\btexted\b|短信{_IN}", "sms", 0.7),
    (r"\b(?:the|a|my) (?:call|phone call)s?\b|\bcall log\b|通话记录", "call", 0.7),
    (rf"\b(?:the|a|my) (?:photo|picture|pic)s?\b|(?:照片|相册){_IN}", "photo", 0.7),
    (rf"\b(?:in|from) my notes?\b|(?:备忘录|笔记){_IN}", "note", 0.7),
    (rf"\b(?:the|a) (?:notification|push)s?\b|(?:通知|推送){_IN}", "push", 0.7),
    (rf"\b(?:the|an|my) e-?mails?\b|邮件{_IN}", "email", 0.7),
    # a chat is any conversation (texts, calls, an app): it only boosts chat records
    (r"\b(?:the|our|a) chat\b|聊天|微信", "chat", 0.5),
]
WEAK_SOURCE = {"call": r"\bcall(?:ed|s)?\b|\brang\b|电话|来电",
               "photo": r"\bphoto|picture|拍|照片|相册",
               "sms": r"\bmessage|text\b|短信", "calendar": r"\bschedul|日程|日历",
               "note": r"备忘录|笔记", "push": r"通知|推送", "email": r"邮件"}
ASKS_WHY = re.compile(r"\b(?:why|how come|what caused|reason)\b|为什么|为何|原因|怎么会", re.I)
"""A question that asks for a cause."""
QUESTION_WORDS = frozenset("""what when where who whom whose which why how did does do is are was were
will would could should can have has had the a an my me i of to in on at for about with from
please tell remember recall 什么 什么时候 哪里 哪儿 谁 为什么 怎么 怎样 怎么样 哪个 哪家 哪些 哪位
哪天 几点 几号 多少 多久 是否 吗 呢 了 的 我 我的""".split())


@dataclass(frozen=True, slots=True)
class Constraint:
    """One thing the question restricts: ``kind`` is time, user, contact or source."""

    kind: str
    value: str | tuple[float, float]
    confidence: float
    phrase: str


@dataclass(frozen=True, slots=True)
class Plan:
    """Up to three rewrites of the question and its constraints."""

    question: str
    rewrites: tuple[str, ...]
    constraints: tuple[Constraint, ...] = field(default=())

    def applied(self, min_confidence: float) -> tuple[Constraint, ...]:
        """Constraints strong enough to filter."""
        return tuple(c for c in self.constraints if c.confidence >= min_confidence)

    def boosts(self, min_confidence: float) -> tuple[Constraint, ...]:
        """Constraints that only boost."""
        return tuple(c for c in self.constraints if c.confidence < min_confidence)


def keywords(question: str, drop: Sequence[str] = ()) -> str:
    """The question's content words (time phrases and question words removed)."""
    text = question
    for phrase in drop:
        text = text.replace(phrase, " ")
    words = [w for w in entities_of(text) if w not in QUESTION_WORDS]
    return " ".join(words)


def plan_query(question: str, now: datetime | None, *, users: Sequence[str] = (),
               contacts: Sequence[str] = ()) -> Plan:
    """Rewrites and constraints of a question asked at ``now`` (None: no time constraint)."""
    constraints: list[Constraint] = []
    phrases: list[str] = []
    if now is not None:
        rng = find_time_range(question, now)
        if rng is not None:
            span = (to_epoch(in_zone_of(rng.start, now)), to_epoch(in_zone_of(rng.end, now)))
            constraints.append(Constraint("time", span, rng.confidence, rng.phrase))
            phrases.extend(rng.phrases)
    lowered = question.lower()
    for pattern, source, conf in SOURCE_WORDS:
        m = re.search(pattern, lowered)
        if m:
            constraints.append(Constraint("source", source, conf, m.group(0)))
            break
    else:
        for source, pattern in WEAK_SOURCE.items():
            m = re.search(pattern, lowered)
            if m:
                constraints.append(Constraint("source", source, 0.4, m.group(0)))
                break
    for user in users:
        if user and re.search(rf"(?<!\w){re.escape(user.lower())}(?!\w)", lowered):
            # "Ben's calendar" / "from Ben" names whose record it is; a bare name may
            # just be who the record is about.
            name = re.escape(user.lower())
            owned = re.search(rf"{name}'s (?:calendar|messages?|texts?|sms|notes?|photos?|"
                              rf"pictures?|phone|e-?mails?|chats?|calls?)|(?:from|by) {name}\b"
                              rf"|{name}的(?:日历|短信|照片|笔记|手机|消息)", lowered)
            constraints.append(Constraint("user", user, 0.65 if owned else 0.4, user))
    for contact in contacts:
        if len(contact) >= 2 and contact.lower() in lowered and contact not in users:
            constraints.append(Constraint("contact", contact, 0.5, contact))
    rewrites = [question]
    kw = keywords(question, phrases)
    if kw and kw.lower() != question.lower():
        rewrites.append(kw)
    people = [c.value for c in constraints if c.kind in ("contact", "user")]
    if people and isinstance(people[0], str):
        words = list(dict.fromkeys([str(p) for p in people] + kw.split()))
        focus = " ".join(words)
        if focus.lower() not in (r.lower() for r in rewrites):
            rewrites.append(focus)
    return Plan(question, tuple(rewrites[:3]), tuple(constraints))
