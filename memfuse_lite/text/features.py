"""What text says, by rule, in English and Chinese: people by role or title, a place
after "at", key entities and names, content terms, and cue words (rescheduled,
cancelled, because). Structured fields are read by :mod:`memfuse_lite.sources`."""

from __future__ import annotations

import re
from functools import lru_cache

from .tokens import tokenize, words

ROLES = {
    "mom": "mom", "mum": "mom", "mother": "mom", "mommy": "mom", "妈妈": "mom", "妈": "mom",
    "母亲": "mom", "dad": "dad", "father": "dad", "daddy": "dad", "爸爸": "dad", "爸": "dad",
    "父亲": "dad", "wife": "wife", "老婆": "wife", "妻子": "wife", "husband": "husband",
    "老公": "husband", "丈夫": "husband", "son": "son", "儿子": "son", "daughter": "daughter",
    "女儿": "daughter", "grandma": "grandma", "grandmother": "grandma", "奶奶": "grandma",
    "外婆": "grandma", "姥姥": "grandma", "grandpa": "grandpa", "grandfather": "grandpa",
    "爷爷": "grandpa", "外公": "grandpa", "姥爷": "grandpa", "boss": "boss", "老板": "boss",
    "teacher": "teacher", "老师": "teacher", "doctor": "doctor", "医生": "doctor",
    "dentist": "dentist", "牙医": "dentist",
}
STOPWORDS = frozenset("""a an the and or but if then so to of in on at by for with from about as is are
was were be been being have has had do does did will would can could should may might must i
me my we us our you your he him his she her they them their it its this that these those there
here what which who whom when where why how all any both each few more most other some such no
not only own same than too very just also now up down out over under again further once am pm
ok okay yes yeah hi hello thanks thank please let lets get got go going went come came see saw
know think want need like really one two three today tomorrow yesterday tonight morning
afternoon evening night week weekend day days time sms call photo note push chat message
monday tuesday wednesday thursday friday saturday sunday mon tue wed thu fri sat sun
january february march april may june july august september october november december
because since therefore moved cancelled canceled rescheduled postponed reminder just now
周一 周二 周三 周四 周五 周六 周日 星期一 星期二 星期三 星期四 星期五 星期六 星期天 星期日 上午 下午
晚上 中午 早上 点 分 月 日 号 改到 取消 推迟
的 了 和 是 在 我 你 他 她 它 们 这 那 就 都 也 还 要 会 能 去 来 吗 呢 吧 啊 哦 嗯 有 没 不 很 一个 我们
你们 他们 一下 什么 怎么 可以 已经 因为 所以 但是 然后 今天 明天 昨天 现在 时候""".split())

CAUSE_BEFORE = re.compile(r"[,;]\s*so\b(?!\s+(?:far|much|many|long)\b)"
                          r"|\b(therefore|thus|hence|which is why|that's why|as a result)\b"
                          r"|所以|因此|于是|导致|结果", re.I)
CAUSE_AFTER = re.compile(r"\b(because|since|due to|owing to|caused by|thanks to)\b"
                         r"|因为|由于", re.I)
RESCHEDULE = re.compile(r"\b(moved|move|rescheduled?|postponed?|pushed back|brought forward|"
                        r"changed to|delayed|now (?:at|on|departs|starts))\b"
                        r"|改到|改为|改成|推迟|延期|延误|提前到|挪到|换到|顺延", re.I)
NEW_TIME = re.compile(r"\b(rebook(?:ed|ing)?|(?:is|are) now (?:on )?"
                      r"(?:mon|tues|wednes|thurs|fri|satur|sun)day)\b|改期", re.I)
"""Further cues that a plan's time changed ("my appointment is now Friday", 改期), read
only when deciding what a report replaces (fusion's pair features keep
:data:`RESCHEDULE`, which the shipped pair model was fitted with)."""
CANCEL = re.compile(r"\b(cancel(?:l?ed)?|called off|won't happen|no longer|"
                    r"(?:dinner|lunch|breakfast|meeting|party|appointment|trip|visit|plan)"
                    r"s? (?:is|are) off)\b|取消|不去了|泡汤", re.I)
REPLACEMENT = re.compile(r"\b(instead)\b|改去|换去|改在", re.I)
"""A plan's detail swapped for another ("let's meet at X instead", 改去X)."""
_CAPS = re.compile(r"\b(?:Dr\.|Mr\.|Mrs\.|Ms\.)?\s?[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")
_AT_PLACE = re.compile(r"\b(?:at|in)\s+((?:the\s+)?[A-Z][\w'.&-]*(?:\s+[A-Z][\w'.&-]*){0,4})")


def people_in(text: str) -> list[str]:
    """People a text names by role ("mom", "牙医") or title ("Dr. Lin")."""
    found: list[str] = []
    lowered = text.lower()
    for word, role in ROLES.items():
        if (word.isascii() and re.search(rf"\b{re.escape(word)}\b", lowered)) or (
                not word.isascii() and word in text):
            found.append(role)
    found.extend(m.group(0).strip() for m in re.finditer(r"\b(?:Dr|Mr|Mrs|Ms)\.\s?[A-Z][a-z]+",
                                                         text))
    return found


def place_in(text: str) -> str | None:
    """A place the text names: 'at <Capitalised Name>'."""
    m = _AT_PLACE.search(text)
    return m.group(1)[:200] if m else None


@lru_cache(maxsize=4096)
def entities_of(text: str) -> tuple[str, ...]:
    """Key content words: titled phrases and the rarest-looking content tokens (fusion
    asks again for the texts of recent events: the last few thousand are remembered)."""
    ents: dict[str, None] = {}
    for m in _CAPS.finditer(text):
        phrase = m.group(0).strip()
        if len(phrase) > 2 and phrase.lower() not in STOPWORDS:
            ents.setdefault(phrase.lower(), None)
    for tok in tokenize(text[:2000]):
        if tok in STOPWORDS or tok.isdigit() or len(tok) < (2 if not tok.isascii() else 4):
            continue
        ents.setdefault(tok, None)
        if len(ents) >= 12:
            break
    return tuple(ents)


_NAME = re.compile(r"\b(?:Dr|Mr|Mrs|Ms)\.\s?[A-Z][a-z]+|\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)+")
_TITLES = frozenset({"dr.", "mr.", "mrs.", "ms."})


def name_tokens(text: str, actors: frozenset[str] = frozenset()) -> frozenset[str]:
    """Words of the proper names an event mentions: titled names ('Dr. Lin'), multi-word
    capitalised names ('Golden Key Services', 'Zhou Tao') and its structured actors.
    Two events that both name someone or something, and share none of the words, are
    most likely about different happenings however alike their wording."""
    words: set[str] = set()
    for m in _NAME.finditer(text):
        words.update(w for w in m.group(0).lower().split() if w not in _TITLES)
    for actor in actors:
        if actor.isascii() and actor[:1].isalpha() and " " in actor.strip():
            words.update(w for w in actor.lower().split() if w not in _TITLES)
    return frozenset(words)


def has_reschedule(text: str) -> bool:
    """A rescheduling cue (moved to, postponed, 改到, 推迟 …)."""
    return bool(RESCHEDULE.search(text))


_SENTENCE_END = re.compile(r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<!\bSt\.)"
                           r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+")


def change_sentences(text: str) -> str:
    """The sentences of ``text`` that carry a cue of a change (moved, cancelled,
    instead …), lowercased and joined: what a long text says changed is said there."""
    return " ".join(part for part in _SENTENCE_END.split(text[:2000])
                    if RESCHEDULE.search(part) or NEW_TIME.search(part)
                    or CANCEL.search(part) or REPLACEMENT.search(part)).lower()


def has_new_time(text: str) -> bool:
    """A cue of a changed time beyond :func:`has_reschedule` (is now Friday, 改期 …)."""
    return bool(NEW_TIME.search(text))


def has_replacement(text: str) -> bool:
    """A replacement cue: something in a plan swapped for another (instead, 改去 …)."""
    return bool(REPLACEMENT.search(text))


def has_cancel(text: str) -> bool:
    """A cancellation cue (cancelled, called off, 取消 …)."""
    return bool(CANCEL.search(text))


def cause_clause(text: str) -> str | None:
    """The part of the text that names a cause, if an explicit causal cue is present."""
    m = CAUSE_AFTER.search(text)
    if m:
        return text[m.end():][:300]
    m = CAUSE_BEFORE.search(text)
    if m:
        return text[: m.start()][-300:]
    return None


LOOKALIKE = 0.6
"""Share of their content words two records of one app must share to be reports of the
same kind of happening (the flight delayed again, another payment for the party)."""


def lookalikes(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two records' content words ``a`` and ``b`` share :data:`LOOKALIKE` of the
    wordier one's."""
    return len(a & b) >= LOOKALIKE * max(len(a), len(b), 1)


def terms_of(text: str) -> frozenset[str]:
    """Distinct content words: no stop words, numbers or very short words."""
    out = set()
    for tok in words(text[:2000]):
        if tok in STOPWORDS or tok.isdigit() or len(tok) < (3 if tok.isascii() else 2):
            continue
        out.add(tok)
    return frozenset(out)
