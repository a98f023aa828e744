"""What a question asks and a record states: content words, numbers, clock times and
dates, and the shapes of question (when, how many, how much) the answer step tells apart."""

from __future__ import annotations

import re

from ..records import Hit
from ..retrieve.planner import QUESTION_WORDS
from ..text.features import entities_of
from ..text.timeexpr import MONTHS_EN, WEEKDAYS_EN, ZH_WEEKDAY
from ..text.tokens import words

NUMBER = re.compile(r"\d+")
DATE = r"\d{1,2}\s*月\s*\d{1,2}\s*[日号]|\d{4}-\d{2}-\d{2}"
UNIT = re.compile(rf"\d{{1,2}}:\d{{2}}|{DATE}")
"""Clock times and dates, which an answer must quote whole: each of their numbers alone
is in many a record ("15:00" from the "2月15日" of one and the ":00" of another)."""
DATED_TIME = re.compile(rf"(?:{DATE})\D{{0,12}}?\d{{1,2}}:\d{{2}}")
"""A date and the clock time beside it ("2月15日周六 15:00", "2025-02-15 at 15:00"): one
appointment, which one record must state whole."""
ASKS_VALUE = re.compile(
    r"\b(?:when|what (?:time|date|day|year|month)|which (?:day|date|year|month)|how (?:many|"
    r"much|long|often|old|far|late|early))\b|什么时候|何时|几点|几号|哪天|哪一天|哪年|几月|"
    r"多少|几个|几次|多久|多长|多大", re.I)
"""A question that asks for a time, a date or an amount (a bare number can answer it)."""
ASKS_NUMBER = re.compile(r"\b(?:how many|what time)\b|多少|几点|几个|几次", re.I)
"""A question whose answer is a number: a count or a clock time (an amount of money:
:data:`ASKS_AMOUNT`)."""
ASKS_AMOUNT = re.compile(r"\b(?:cost|costs|price|paid|pay|spen[dt]|how much)\b|多少钱|花了|价格|费用",
                         re.I)
"""A question about money (what something cost, how much was paid)."""
AMOUNT = re.compile(r"[¥$€£]\s?\d|\d[.,]\d\d\b|\d\s*(?:元|块|yuan|rmb|cny|usd|dollars?|euros?)",
                    re.I)
"""An amount of money: a currency sign or word by a number, or a number with cents."""
FUNCTION_WORDS = frozenset("""a an the and or but of to in on at by for with from as is are was
were be been it its this that these those there here i me my mine we us our you your he him
his she her they them their what which who whom when where why how do does did will would
can could should not no yes so then than too very just also about into over after before
according said says 的 了 和 是 在 我 你 他 她 它 们 这 那 就 都 也 还 吗 呢 吧 啊""".split())


def content_words(text: str) -> frozenset[str]:
    """Content words of an answer or record, times and weekdays included."""
    return frozenset(w for w in words(text[:4000])
                     if w not in FUNCTION_WORDS and not w.isdigit())


def asked_words(question: str) -> frozenset[str]:
    """The question's content words, question words left out."""
    return content_words(question) - QUESTION_WORDS


def origin(hit: Hit) -> frozenset[str]:
    """Who wrote a record and in which app, lowercased (a record by Ben in his calendar
    speaks of "Ben's appointment" without naming him)."""
    return frozenset(x.lower() for p in hit.provenance for x in (p.user, p.source))


def about(hit: Hit) -> frozenset[str]:
    """What a record says: its content words and its :func:`origin`."""
    return content_words(hit.text) | origin(hit)


def with_time(hit: Hit) -> str:
    """A record's text and when it was recorded (what an answer may quote of it)."""
    return f"{hit.text} {hit.provenance[0].ts if hit.provenance else ''}"


def stated(text: str) -> frozenset[str]:
    """Content words and numbers of a text (what an answer asserts, or a record holds)."""
    return content_words(text) | frozenset(NUMBER.findall(text))


PART = re.compile(r"[?？]\s*\S|,\s*(?:and\s+)?(?:(?:at|in|on|for|to|with|from|by)\s+)?"
                   r"(?:what|where|when|which|who|how|why)\b|"
                   r"\band\s+(?:what|where|when|which|who|how|why)\b", re.I)


def parts_asked(question: str) -> int:
    """How many things a question asks ("When …, at what address, and what should be
    brought?" asks three; "…是几点？…说的是几点？" two)."""
    return 1 + len(PART.findall(question.strip()))


TIME_WORDS = frozenset(WEEKDAYS_EN) | frozenset(MONTHS_EN) | frozenset(
    f"{week}{day}" for week in ("周", "星期") for day in ZH_WEEKDAY if day != "末") | frozenset(
    "月 日 号 上午 下午 晚上 中午 早上".split())
"""Words that only say when (weekdays, months, parts of the day)."""


def key_words_held(words: set[str], hit: Hit) -> frozenset[str]:
    """The question's key words a record holds: in its text, among its names, or naming
    the app or user it came from ("Ana's calendar")."""
    lowered = hit.text.lower()
    names = set(entities_of(hit.text)) | origin(hit)
    return frozenset(w for w in words if w in lowered or w in names)


ENOUGH_KEY_WORDS = 4
"""Key words of a question that records must hold between them to be about it, however
long the question: a long question ("… what social interaction served as the initial
inspiration for its planning?") is mostly words about how it asks, which no record holds."""


def about_question(held: int, asked: int) -> bool:
    """Whether records holding ``held`` of a question's ``asked`` key words are about it:
    at least half of them (one at least), or :data:`ENOUGH_KEY_WORDS`."""
    return held >= min(ENOUGH_KEY_WORDS, max(1, (asked + 1) // 2))
