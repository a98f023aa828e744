"""Time ranges named in a question ("mid-January", "last week", "上周", "1月中旬",
"去年冬天"), resolved against the moment the question is asked, with a confidence."""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from ..fusion.timeexpr import MONTHS_EN, zh_number


@dataclass(frozen=True, slots=True)
class TimeRange:
    """An inclusive range of days and how sure the planner is about it."""

    start: datetime
    end: datetime
    confidence: float
    phrase: str


def _month_span(year: int, month: int, part: str = "") -> tuple[date, date]:
    last = calendar.monthrange(year, month)[1]
    if part in ("early", "beginning of", "start of", "初", "上旬"):
        return date(year, month, 1), date(year, month, 10)
    if part in ("mid", "middle of", "中旬", "中"):
        return date(year, month, 11), date(year, month, 20)
    if part in ("late", "end of", "下旬", "底", "末"):
        return date(year, month, 21), date(year, month, last)
    return date(year, month, 1), date(year, month, last)


def _recent_year(month: int, now: date, explicit: int | None) -> int:
    if explicit:
        return explicit
    return now.year if month <= now.month else now.year - 1


SEASONS = {"spring": (3, 5), "summer": (6, 8), "autumn": (9, 11), "fall": (9, 11),
           "winter": (12, 2), "春天": (3, 5), "夏天": (6, 8), "秋天": (9, 11), "冬天": (12, 2)}

_EN_MONTH = "|".join(sorted((m for m in MONTHS_EN if len(m) > 3 or m == "may"),
                            key=len, reverse=True))
_RE_EN_MONTH = re.compile(
    rf"\b(?:(early|mid|late|beginning of|middle of|end of|start of)[\s-]+)?({_EN_MONTH})"
    rf"(?:\s+(\d{{1,2}})(?:st|nd|rd|th)?)?(?:,?\s+(\d{{4}}))?\b", re.I)
_RE_ZH_MONTH = re.compile(r"(?:(\d{4}|去|今)年)?([0-9一二三四五六七八九十]{1,3})月"
                          r"(?:([0-9一二三四五六七八九十]{1,3})[日号]|(初|中旬|上旬|下旬|底|末|中))?")
_RE_EN_REL = re.compile(r"\b(yesterday|today|last week|this week|past week|last month|"
                        r"this month|last weekend|this weekend|last year|this year|recently|"
                        r"lately|the other day|(\d+) days ago|(last|this) "
                        r"(spring|summer|autumn|fall|winter))\b", re.I)
_RE_ZH_REL = re.compile(r"((?:去年|今年)?(?:春天|夏天|秋天|冬天)|昨天|今天|前天|上周末|上周|上星期|这周|"
                        r"本周|上个月|这个月|本月|去年|今年|最近)")


def _range(a: date, b: date, confidence: float, phrase: str) -> TimeRange:
    return TimeRange(datetime.combine(a, time(0, 0)), datetime.combine(b, time(23, 59, 59)),
                     confidence, phrase)


def _season(name: str, which: str, now: date) -> tuple[date, date]:
    first, last = SEASONS[name]
    year = now.year - (1 if which in ("last", "去年") else 0)
    if first > last:  # winter spans the new year
        if which in ("last", "去年"):
            return date(year, 12, 1), date(year + 1, 2, calendar.monthrange(year + 1, 2)[1])
        return date(year - 1, 12, 1), date(year, 2, calendar.monthrange(year, 2)[1])
    if which not in ("last", "去年") and first > now.month:
        year -= 1
    return date(year, first, 1), date(year, last, calendar.monthrange(year, last)[1])


def find_time_range(question: str, now: datetime) -> TimeRange | None:
    """The first time range a question names, or None."""
    today = now.date()
    m = _RE_ZH_MONTH.search(question)
    if m:
        month = zh_number(m.group(2))
        if month and 1 <= month <= 12:
            year_word = m.group(1)
            explicit = (today.year - 1 if year_word == "去" else today.year if year_word == "今"
                        else int(year_word) if year_word else None)
            year = _recent_year(month, today, explicit)
            if m.group(3):
                day = zh_number(m.group(3))
                if day and 1 <= day <= calendar.monthrange(year, month)[1]:
                    d = date(year, month, day)
                    return _range(d, d, 0.9, m.group(0))
            a, b = _month_span(year, month, m.group(4) or "")
            return _range(a, b, 0.85, m.group(0))
    m = _RE_ZH_REL.search(question)
    if m:
        return _relative(m.group(0), today)
    m = _RE_EN_MONTH.search(question)
    if m and not (m.group(2).lower() == "may" and not (m.group(3) or m.group(4) or m.group(1))):
        month = MONTHS_EN[m.group(2).lower()]
        year = _recent_year(month, today, int(m.group(4)) if m.group(4) else None)
        if m.group(3):
            day = int(m.group(3))
            if 1 <= day <= calendar.monthrange(year, month)[1]:
                d = date(year, month, day)
                return _range(d, d, 0.9, m.group(0))
        a, b = _month_span(year, month, (m.group(1) or "").lower())
        return _range(a, b, 0.85, m.group(0))
    m = _RE_EN_REL.search(question)
    if m:
        return _relative(m.group(0).lower(), today, days_ago=m.group(2))
    return None


def _relative(word: str, today: date, days_ago: str | None = None) -> TimeRange | None:
    monday = today - timedelta(days=today.weekday())
    first_of_month = today.replace(day=1)
    prev_month_end = first_of_month - timedelta(days=1)
    table = {
        "yesterday": (today - timedelta(days=1), today - timedelta(days=1), 0.85),
        "昨天": (today - timedelta(days=1), today - timedelta(days=1), 0.85),
        "前天": (today - timedelta(days=2), today - timedelta(days=2), 0.85),
        "today": (today, today, 0.85), "今天": (today, today, 0.85),
        "last week": (monday - timedelta(days=7), monday - timedelta(days=1), 0.8),
        "上周": (monday - timedelta(days=7), monday - timedelta(days=1), 0.8),
        "上星期": (monday - timedelta(days=7), monday - timedelta(days=1), 0.8),
        "past week": (today - timedelta(days=7), today, 0.75),
        "this week": (monday, today, 0.8), "这周": (monday, today, 0.8),
        "本周": (monday, today, 0.8),
        "last weekend": (monday - timedelta(days=2), monday - timedelta(days=1), 0.8),
        "上周末": (monday - timedelta(days=2), monday - timedelta(days=1), 0.8),
        "this weekend": (monday + timedelta(days=5), monday + timedelta(days=6), 0.8),
        "last month": (prev_month_end.replace(day=1), prev_month_end, 0.8),
        "上个月": (prev_month_end.replace(day=1), prev_month_end, 0.8),
        "this month": (first_of_month, today, 0.8), "这个月": (first_of_month, today, 0.8),
        "本月": (first_of_month, today, 0.8),
        "last year": (date(today.year - 1, 1, 1), date(today.year - 1, 12, 31), 0.75),
        "去年": (date(today.year - 1, 1, 1), date(today.year - 1, 12, 31), 0.75),
        "this year": (date(today.year, 1, 1), today, 0.7), "今年": (date(today.year, 1, 1), today, 0.7),
        "recently": (today - timedelta(days=14), today, 0.4),
        "lately": (today - timedelta(days=14), today, 0.4),
        "最近": (today - timedelta(days=14), today, 0.4),
        "the other day": (today - timedelta(days=7), today, 0.4),
    }
    if word in table:
        a, b, conf = table[word]
        return _range(a, b, conf, word)
    if days_ago:
        d = today - timedelta(days=int(days_ago))
        return _range(d - timedelta(days=1), d + timedelta(days=1), 0.75, word)
    for season in SEASONS:
        if season in word:
            which = "last" if ("last" in word or "去年" in word) else "this"
            a, b = _season(season, which, today)
            return _range(a, b, 0.7, word)
    return None
