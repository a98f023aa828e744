"""Time ranges named in a question ("last Friday", "in May", "two weeks ago", "上周五",
"1月中旬", "去年夏天"), resolved against the moment the question is asked, with a
confidence (the planner filters at >= 0.6; vaguer words such as "recently" only boost).

A range between two days ("from January 9th to 11th", "1月9日至11日", "between 2025-01-09
and 2025-01-11") is the days from the first to the second; a question naming several
times of one kind ("on September 4th, September 7th and September 11th", "at the beginning
of January ... at the end of January") covers them all, from the earliest to the latest.
"The first week of March" / 3月第一周 is March 1-7 (the last week: the month's last seven
days).

Questions look back: a month or date without a year is its latest occurrence up to now,
"last Friday" / 上周五 is that day of the previous week, a bare "on Monday" / 周一 the latest
Monday before today, "N weeks ago" the calendar week holding that day, "N months ago" that
calendar month. A month name counts only as a time: after a preposition ("in May", "end of
March") or beside a day or year in English; in Chinese, with a year, a day, a part of the
month or 份, or followed by who or what did something ("五月我们去了", not "五月天").
Precision and recall are measured on bench/data/timeexpr (``python3 -m bench timeexpr``).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from .timeexpr import MONTHS_EN, WEEKDAYS_EN, ZH_WEEKDAY, en_number, zh_number


@dataclass(frozen=True, slots=True)
class TimeRange:
    """An inclusive range of days and how sure the planner is about it."""

    start: datetime
    end: datetime
    confidence: float
    phrases: tuple[str, ...]
    """The words that name the range (several: "in May and August")."""

    @property
    def phrase(self) -> str:
        """The first words that name the range."""
        return self.phrases[0]


Days = tuple[date, date]

SEASONS = {"spring": (3, 5), "summer": (6, 8), "autumn": (9, 11), "fall": (9, 11),
           "winter": (12, 2), "春天": (3, 5), "夏天": (6, 8), "秋天": (9, 11), "冬天": (12, 2)}
PARTS = {"early": "early", "beginning of": "early", "start of": "early", "初": "early",
         "上旬": "early", "mid": "mid", "middle of": "mid", "中旬": "mid", "中": "mid",
         "late": "late", "end of": "late", "下旬": "late", "底": "late", "末": "late"}
HOLIDAYS_EN = [(r"valentine'?s(?: day)?", (2, 14), (2, 14)),
               (r"christmas eve", (12, 24), (12, 24)), (r"christmas(?: day)?", (12, 25), (12, 25)),
               (r"new year'?s eve", (12, 31), (12, 31)), (r"new year'?s(?: day)?", (1, 1), (1, 1)),
               (r"halloween", (10, 31), (10, 31))]
HOLIDAYS_ZH = [("情人节", (2, 14), (2, 14)), ("平安夜", (12, 24), (12, 24)),
               ("圣诞节", (12, 25), (12, 25)), ("跨年夜", (12, 31), (12, 31)),
               ("元旦", (1, 1), (1, 1)), ("国庆节|国庆假期|十一假期", (10, 1), (10, 7)),
               ("劳动节|五一假期|五一", (5, 1), (5, 5))]

_EN_MONTH = "|".join(sorted(MONTHS_EN, key=len, reverse=True))
_EN_LONG_MONTH = "|".join(sorted((m for m in MONTHS_EN if len(m) > 3 or m == "may"), key=len,
                                  reverse=True))
_EN_WD = "|".join(sorted(WEEKDAYS_EN, key=len, reverse=True))
_EN_NUM = r"\d{1,2}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
_ZH_NUM = r"[0-9一二两三四五六七八九十]{1,3}"
_ZH_YEAR = r"(去年|今年|前年|\d{4}年)"
_ZH_MONTH_NUM = r"(1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])"
_ZH_CLAUSE = "我你他她它咱大去来在有发做买吃见回到都也还就又过，,、"
_ZH_AND = "和与及或至到~-"
"""What joins two listed months ("9月和10月", "5月至8月")."""
_ZH_TO = r"(?:-|–|—|~|至|到)"
_PREP = (r"(?:in|during|of|since|through|throughout|until|till|by|from|for|before|after"
         r"|between)")

_RE_ISO = re.compile(r"(?<!\d)(\d{4})-(\d{1,2})-(\d{1,2})(?!\d)")
_RE_EN_DATE = re.compile(
    rf"\b(?:({_EN_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s*(\d{{4}}))?"
    rf"|(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_EN_MONTH})\.?(?:,?\s*(\d{{4}}))?)\b", re.I)
_RE_ZH_DATE = re.compile(rf"{_ZH_YEAR}?{_ZH_MONTH_NUM}月({_ZH_NUM})[日号號]")
_RE_EN_WEEKDAY = re.compile(
    rf"\b(?:(last|on|this past)\s+({_EN_WD})|({_EN_WD})\s+last week)\b", re.I)
_RE_ZH_WEEKDAY = re.compile(r"(每)?(上上|上)?个?(?:周|星期|礼拜)([一二三四五六日天])")
_RE_EN_WEEKEND = re.compile(r"\b(?:the weekend before last|last weekend|this weekend|"
                            r"over the weekend)\b", re.I)
_RE_ZH_WEEKEND = re.compile(r"(上上|上|这|本)个?周末")
_RE_EN_AGO = re.compile(rf"\b({_EN_NUM})\s+(day|week|month|year)s?\s+ago\b", re.I)
_RE_ZH_AGO = re.compile(rf"({_ZH_NUM})(天|周|个?星期|个?礼拜|个月|年)前")
_RE_EN_PART = re.compile(
    rf"\b(early|mid|late|beginning of|middle of|end of|start of)[\s-]+(?:the\s+)?"
    rf"({_EN_LONG_MONTH}|month)(?:,?\s+(\d{{4}}))?\b", re.I)
_RE_ZH_PART = re.compile(rf"(?:{_ZH_YEAR}?{_ZH_MONTH_NUM}月|(上个?月|这个?月|本月))"
                         rf"(初|上旬|中旬|下旬|底|末)")
_NTH_WEEK = {"first": 1, "second": 2, "third": 3, "fourth": 4, "last": 0, "final": 0,
             "一": 1, "二": 2, "三": 3, "四": 4, "1": 1, "2": 2, "3": 3, "4": 4, "最后一": 0}
_RE_EN_WEEK_OF = re.compile(
    rf"\b(first|second|third|fourth|last|final)\s+week\s+of\s+(?:the\s+month\s+of\s+)?"
    rf"({_EN_LONG_MONTH})(?:,?\s+(\d{{4}}))?\b", re.I)
_RE_ZH_WEEK_OF = re.compile(rf"{_ZH_YEAR}?{_ZH_MONTH_NUM}月的?第?([一二三四1-4]|最后一)周"
                            rf"((?:[和与、及至到~-]第?(?:[一二三四1-4]|最后一)周)*)")
_RE_EN_MONTH_YEAR = re.compile(rf"\b({_EN_LONG_MONTH})\.?,?\s+(\d{{4}})\b", re.I)
_RE_EN_MONTH = re.compile(rf"\b{_PREP}\s+(?:the month of\s+)?({_EN_LONG_MONTH})\b", re.I)
_RE_EN_MORE_MONTH = re.compile(  # "in May| and August", "during March|, April or May"
    rf"(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|to|through|until|till)\s+|\s*[-–]\s*)"
    rf"({_EN_LONG_MONTH})\b", re.I)
_RE_ZH_MONTH = re.compile(rf"{_ZH_YEAR}?{_ZH_MONTH_NUM}月(份)?")
_RE_ZH_MORE_MONTH = re.compile(rf"[{_ZH_AND}]{_ZH_MONTH_NUM}月")  # 9月|和10月
_RE_EN_YEAR = re.compile(r"\b(?:in|during|back in|since|of|for)\s+((?:19|20)\d\d)\b", re.I)
_RE_ZH_YEAR = re.compile(r"((?:19|20)\d\d)年(?![0-9一二三四五六七八九十]{1,2}月)")
_RE_SEASON = re.compile(r"\b(last|this)\s+(spring|summer|autumn|fall|winter)\b"
                        r"|(去年|今年)?(春天|夏天|秋天|冬天)", re.I)
_TO = r"(?:-|–|—|~|to|through|until|till)"
_RE_EN_DAY_AFTER = re.compile(  # "January 9th| to 11th", "Jan 9|-11", "between Jan 9| and 11"
    rf"\s*({_TO}|and)\s*(?:the\s+)?(\d{{1,2}})"
    rf"(?:(?:st|nd|rd|th)\b|(?=\s*(?:[,.;:?!)]|$)))", re.I)
_RE_EN_DAY_BEFORE = re.compile(  # "from the 9th to| 11th January"
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s*{_TO}\s*(?:the\s+)?$", re.I)
_RE_ZH_DAY_AFTER = re.compile(rf"\s*{_ZH_TO}\s*({_ZH_NUM})[日号號]")
_RE_EN_DATE_LEAD = re.compile(  # "around| Monday 17 February", "on| Monday, 17 February"
    rf"\b(?:(around|about|on)\s+)?({_EN_WD}),?\s+(?:the\s+)?$|\b(around)\s+(?:the\s+)?$", re.I)
_RE_ZH_DATE_TAIL = re.compile(r"\s*(?:(?:周|星期|礼拜)[一二三四五六日天])?\s*(前后|左右)?")
AROUND_DAYS = 3
"""How far "around 17 February" ("2月17日前后") reaches on either side of the day."""
_RE_ZH_DAY_SPAN = re.compile(  # "1月9-11日"
    rf"{_ZH_YEAR}?{_ZH_MONTH_NUM}月({_ZH_NUM})\s*{_ZH_TO}\s*({_ZH_NUM})[日号號]")
_RE_EN_REL = re.compile(
    r"\b(the day before yesterday|yesterday|today|this morning|this afternoon|last night"
    r"|last week|this week|past week|last month|this month|earlier this month|last year"
    r"|this year|recently|lately|the other day)\b", re.I)
_RE_ZH_REL = re.compile(r"(前天|昨天|昨晚|今天|今早|上上周|上周|上个?星期|上个?礼拜|这周|本周"
                        r"|过去一周|过去的一周|最近一周|上个?月|这个月|本月|去年|今年|最近)")


def _range(days: Days, confidence: float, phrases: tuple[str, ...]) -> TimeRange:
    return TimeRange(datetime.combine(days[0], time(0, 0)),
                     datetime.combine(days[1], time(23, 59, 59)), confidence, phrases)


def _month(year: int, month: int, part: str = "") -> Days:
    last = calendar.monthrange(year, month)[1]
    if part == "early":
        return date(year, month, 1), date(year, month, 10)
    if part == "mid":
        return date(year, month, 11), date(year, month, 20)
    if part == "late":
        return date(year, month, 21), date(year, month, last)
    return date(year, month, 1), date(year, month, last)


def _latest_year(month: int, today: date, day: int = 1) -> int:
    """The year of the latest (month, day) up to today."""
    return today.year if (month, day) <= (today.month, today.day) else today.year - 1


def _zh_year(word: str | None, today: date) -> int | None:
    if not word:
        return None
    return {"去年": today.year - 1, "今年": today.year, "前年": today.year - 2}.get(
        word, int(word[:4]) if word[:4].isdigit() else None)


def _months_back(today: date, n: int) -> tuple[int, int]:
    total = today.year * 12 + today.month - 1 - n
    return total // 12, total % 12 + 1


def _week_of(d: date) -> Days:
    monday = d - timedelta(days=d.weekday())
    return monday, monday + timedelta(days=6)


def _day(year: int, month: int, day: int) -> Days | None:
    try:
        d = date(year, month, day)
    except ValueError:
        return None
    return d, d


def _iso(m: re.Match[str], today: date) -> Days | None:
    return _day(int(m.group(1)), int(m.group(2)), int(m.group(3)))


def _en_date(m: re.Match[str], today: date) -> Days | None:
    month_s, day_s, year_s = (m.group(1), m.group(2), m.group(3)) if m.group(1) else (
        m.group(5), m.group(4), m.group(6))
    month, day = MONTHS_EN[month_s.lower()], int(day_s)
    if len(month_s) <= 3 and month_s.lower() != "may" and not month_s[0].isupper():
        return None  # "mar 3" in lower case is rarely a date in a question
    return _day(int(year_s) if year_s else _latest_year(month, today, day), month, day)


def _zh_date(m: re.Match[str], today: date) -> Days | None:
    month, day = zh_number(m.group(2)), zh_number(m.group(3))
    if not month or not day:
        return None
    return _day(_zh_year(m.group(1), today) or _latest_year(month, today, day), month, day)


def _holiday(table: list[tuple[str, tuple[int, int], tuple[int, int]]], text: str,
             today: date, english: bool) -> tuple[Days, str] | None:
    for pattern, (m1, d1), (m2, d2) in table:
        rx = rf"\b(?:on|at|over|during)\s+(?:the\s+)?({pattern})\b" if english else \
            f"({pattern})"
        m = re.search(rx, text, re.I)
        if m:
            year = _latest_year(m1, today, d1)
            return (date(year, m1, d1), date(year, m2, d2)), m.group(0)
    return None


def _before_today(today: date, target: int, weeks_back: int) -> date:
    """A weekday of the previous week(s), or (weeks_back 0) the latest before today."""
    if weeks_back:
        return today - timedelta(days=today.weekday()) - timedelta(weeks=weeks_back) + \
            timedelta(days=target)
    back = (today.weekday() - target) % 7 or 7
    return today - timedelta(days=back)


def _en_weekday(m: re.Match[str], today: date) -> Days | None:
    if m.group(3):
        d = _before_today(today, WEEKDAYS_EN[m.group(3).lower()], 1)
    else:
        word = m.group(1).lower()
        d = _before_today(today, WEEKDAYS_EN[m.group(2).lower()], 1 if word == "last" else 0)
    return d, d


def _zh_weekday(m: re.Match[str], today: date) -> Days | None:
    if m.group(1):  # 每周三
        return None
    weeks = {"上上": 2, "上": 1}.get(m.group(2) or "", 0)
    d = _before_today(today, ZH_WEEKDAY[m.group(3)], weeks)
    return d, d


def _weekend(m: re.Match[str], today: date) -> Days | None:
    word = m.group(0).lower()
    monday = today - timedelta(days=today.weekday())
    back = 2 if ("before last" in word or word.startswith("上上")) else \
        0 if (word.startswith(("this", "这", "本"))) else 1
    sat = monday - timedelta(weeks=back) + timedelta(days=5)
    return sat, sat + timedelta(days=1)


def _ago(n: int | None, unit: str, today: date) -> Days | None:
    if not n or n > 100:
        return None
    if unit in ("day", "天"):
        d = today - timedelta(days=n)
        return d - timedelta(days=1), d + timedelta(days=1)
    if unit in ("week", "周", "星期", "个星期", "礼拜", "个礼拜"):
        return _week_of(today - timedelta(weeks=n))
    if unit in ("month", "个月"):
        return _month(*_months_back(today, n))
    return date(today.year - n, 1, 1), date(today.year - n, 12, 31)


def _en_part(m: re.Match[str], today: date) -> Days | None:
    part = PARTS[re.sub(r"\s+", " ", m.group(1).lower())]
    if m.group(2).lower() == "month":
        return _month(today.year, today.month, part)
    month = MONTHS_EN[m.group(2).lower()]
    year = int(m.group(3)) if m.group(3) else _latest_year(month, today)
    return _month(year, month, part)


def _zh_part(m: re.Match[str], today: date) -> Days | None:
    part = PARTS[m.group(4)]
    if m.group(3):
        year, month = _months_back(today, 1) if m.group(3).startswith("上") else \
            (today.year, today.month)
        return _month(year, month, part)
    month = zh_number(m.group(2)) or 0
    year = _zh_year(m.group(1), today) or _latest_year(month, today)
    return _month(year, month, part)


def _week_of_month(year: int, month: int, nth: int) -> Days:
    """The nth seven days of a month (0: its last seven)."""
    last = calendar.monthrange(year, month)[1]
    if nth == 0:
        return date(year, month, last - 6), date(year, month, last)
    first = 7 * (nth - 1) + 1
    return date(year, month, first), date(year, month, min(first + 6, last))


def _en_week_of(m: re.Match[str], today: date) -> Days | None:
    month = MONTHS_EN[m.group(2).lower()]
    year = int(m.group(3)) if m.group(3) else _latest_year(month, today)
    return _week_of_month(year, month, _NTH_WEEK[m.group(1).lower()])


def _zh_week_of(m: re.Match[str], today: date) -> Days | None:
    """"3月第一周", "6月第一周和第三周" (the weeks listed after the first count too)."""
    month = zh_number(m.group(2)) or 0
    year = _zh_year(m.group(1), today) or _latest_year(month, today)
    weeks = [m.group(3), *re.findall(r"([一二三四1-4]|最后一)周", m.group(4) or "")]
    spans = [_week_of_month(year, month, _NTH_WEEK[w]) for w in weeks]
    return min(a for a, _ in spans), max(b for _, b in spans)


def _en_month_year(m: re.Match[str], today: date) -> Days | None:
    return _month(int(m.group(2)), MONTHS_EN[m.group(1).lower()])


def _en_months(text: str, today: date) -> Found | None:
    """Months after a preposition, with the months listed after them ("during May and
    August", "from March to May"): a list runs forward to its last month's latest
    occurrence."""
    found: list[tuple[Days, str]] = []
    for m in _RE_EN_MONTH.finditer(text):
        listed, end = [(m.group(1), m.group(0))], m.end()
        while (more := _RE_EN_MORE_MONTH.match(text, end)) is not None:
            listed.append((more.group(1), more.group(1)))
            end = more.end()
        months = [MONTHS_EN[name.lower()] for name, _ in listed]
        years = [_latest_year(months[-1], today)]
        for month, later in zip(months[-2::-1], months[:0:-1], strict=True):
            # "November and January": the November before that January
            years.append(years[-1] - (month > later))
        found += [(_month(year, month), phrase) for year, month, (_, phrase)
                  in zip(years[::-1], months, listed, strict=True)]
    return _hull(found, 0.85)


def _zh_month(m: re.Match[str], text: str, today: date) -> Days | None:
    month = zh_number(m.group(2)) or 0
    following = text[m.end(): m.end() + 1]
    listed = _RE_ZH_MORE_MONTH.match(text, m.end()) or (
        m.start() > 1 and text[m.start() - 2] == "月" and text[m.start() - 1] in _ZH_AND)
    if not (m.group(1) or m.group(3) or not following or following in _ZH_CLAUSE or listed):
        return None  # 五月天 / 二月河 / 四月是你的谎言: a name, not a month
    if m.start() > 0 and text[m.start() - 1] in "个每几":
        return None
    year = _zh_year(m.group(1), today) or _latest_year(month, today)
    return _month(year, month)


def _year(m: re.Match[str], today: date) -> Days | None:
    year = int(m.group(1))
    if not 1990 <= year <= today.year:
        return None
    return date(year, 1, 1), date(year, 12, 31)


def _season(m: re.Match[str], today: date) -> Days | None:
    which = (m.group(1) or m.group(3) or "").lower()
    first, last = SEASONS[(m.group(2) or m.group(4)).lower()]
    last_one = which in ("last", "去年")
    year = today.year - (1 if last_one else 0)
    if first > last:  # winter spans the new year
        if last_one:
            return date(year, 12, 1), date(year + 1, 2, calendar.monthrange(year + 1, 2)[1])
        return date(year - 1, 12, 1), date(year, 2, calendar.monthrange(year, 2)[1])
    if not last_one and first > today.month:
        year -= 1
    return date(year, first, 1), date(year, last, calendar.monthrange(year, last)[1])


def _relative(word: str, today: date) -> tuple[Days, float] | None:
    monday = today - timedelta(days=today.weekday())
    first = today.replace(day=1)
    prev_end = first - timedelta(days=1)
    yesterday = today - timedelta(days=1)
    last_week = (monday - timedelta(days=7), monday - timedelta(days=1))
    table: dict[str, tuple[Days, float]] = {
        "the day before yesterday": ((today - timedelta(days=2),) * 2, 0.85),
        "前天": ((today - timedelta(days=2),) * 2, 0.85),
        "yesterday": ((yesterday, yesterday), 0.85), "昨天": ((yesterday, yesterday), 0.85),
        "last night": ((yesterday, today), 0.8), "昨晚": ((yesterday, today), 0.8),
        "today": ((today, today), 0.85), "今天": ((today, today), 0.85),
        "this morning": ((today, today), 0.85), "this afternoon": ((today, today), 0.85),
        "今早": ((today, today), 0.85),
        "last week": (last_week, 0.8), "上周": (last_week, 0.8), "上星期": (last_week, 0.8),
        "上个星期": (last_week, 0.8), "上礼拜": (last_week, 0.8), "上个礼拜": (last_week, 0.8),
        "上上周": ((monday - timedelta(days=14), monday - timedelta(days=8)), 0.8),
        "past week": ((today - timedelta(days=7), today), 0.75),
        "过去一周": ((today - timedelta(days=7), today), 0.75),
        "过去的一周": ((today - timedelta(days=7), today), 0.75),
        "最近一周": ((today - timedelta(days=7), today), 0.75),
        "this week": ((monday, today), 0.8), "这周": ((monday, today), 0.8),
        "本周": ((monday, today), 0.8),
        "last month": ((prev_end.replace(day=1), prev_end), 0.8),
        "上个月": ((prev_end.replace(day=1), prev_end), 0.8),
        "上月": ((prev_end.replace(day=1), prev_end), 0.8),
        "this month": ((first, today), 0.8), "earlier this month": ((first, today), 0.8),
        "这个月": ((first, today), 0.8), "本月": ((first, today), 0.8),
        "last year": ((date(today.year - 1, 1, 1), date(today.year - 1, 12, 31)), 0.75),
        "去年": ((date(today.year - 1, 1, 1), date(today.year - 1, 12, 31)), 0.75),
        "this year": ((date(today.year, 1, 1), today), 0.7),
        "今年": ((date(today.year, 1, 1), today), 0.7),
        "recently": ((today - timedelta(days=14), today), 0.4),
        "lately": ((today - timedelta(days=14), today), 0.4),
        "最近": ((today - timedelta(days=14), today), 0.4),
        "the other day": ((today - timedelta(days=7), today), 0.4),
    }
    return table.get(word)


Found = tuple[Days, float, tuple[str, ...]]
"""The days a matcher found, its confidence and the words that name them."""
Matcher = Callable[[str, date], Found | None]


def _hull(found: list[tuple[Days, str]], confidence: float) -> Found | None:
    """From the earliest to the latest of the days found (None if none)."""
    if not found:
        return None
    return ((min(d[0] for d, _ in found), max(d[1] for d, _ in found)), confidence,
            tuple(dict.fromkeys(phrase for _, phrase in found)))


def _by(rx: re.Pattern[str], resolve: Callable[[re.Match[str], date], Days | None],
        confidence: float) -> Matcher:
    def match(text: str, today: date) -> Found | None:
        return _hull([(days, m.group(0)) for m in rx.finditer(text)
                      if (days := resolve(m, today)) is not None], confidence)

    return match


def _later_day(first: date, day: int | None) -> date | None:
    """Day ``day`` of ``first``'s month, if it comes after ``first``."""
    if day is None or not first.day < day <= calendar.monthrange(first.year, first.month)[1]:
        return None
    return first.replace(day=day)


def _date_range(rx: re.Pattern[str], m: re.Match[str], days: Days, text: str
                ) -> tuple[Days, str]:
    """A date stretched to the range it starts or ends ("January 9th to 11th",
    "1月9日至11日", "the 9th to 11th January"), with the words naming it."""
    start, end, first, last = days[0], days[1], m.start(), m.end()
    if rx is _RE_ZH_DATE:
        tail = _RE_ZH_DAY_AFTER.match(text, m.end())
        upto = _later_day(start, zh_number(tail.group(1))) if tail else None
    else:
        tail = _RE_EN_DAY_AFTER.match(text, m.end())
        upto = _later_day(start, int(tail.group(2))) if tail else None
        if rx is _RE_EN_DATE and m.group(4):  # "11th January": a day before it may start it
            head = _RE_EN_DAY_BEFORE.search(text, 0, m.start())
            since = int(head.group(1)) if head else 0
            if head and 0 < since < start.day:
                start, first = start.replace(day=since), head.start()
    if tail and upto is not None:
        end, last = upto, tail.end()
    around = False
    if rx is _RE_ZH_DATE:  # "1月9日周四前后": its weekday, and "around"
        lead = _RE_ZH_DATE_TAIL.match(text, last)
        if lead is not None and lead.end() > last:
            around, last = bool(lead.group(1)), lead.end()
    else:
        lead = _RE_EN_DATE_LEAD.search(text, 0, first)
        if lead is not None and lead.end() > lead.start():
            around = (lead.group(1) or lead.group(3) or "").lower() == "around"
            first = lead.start()
    if around:
        start, end = start - timedelta(days=AROUND_DAYS), end + timedelta(days=AROUND_DAYS)
    return (start, end), text[first:last]


def _dates(text: str, today: date) -> Found | None:
    """The days named by date, ranges between two dates included."""
    found: list[tuple[Days, str]] = []
    for rx, resolve in ((_RE_ISO, _iso), (_RE_ZH_DATE, _zh_date), (_RE_EN_DATE, _en_date)):
        for m in rx.finditer(text):
            days = resolve(m, today)
            if days is not None:
                found.append(_date_range(rx, m, days, text))
    for m in _RE_ZH_DAY_SPAN.finditer(text):  # "1月9-11日"
        month = zh_number(m.group(2)) or 0
        begin = _day(_zh_year(m.group(1), today) or _latest_year(month, today), month,
                     zh_number(m.group(3)) or 0)
        upto = _later_day(begin[0], zh_number(m.group(4))) if begin else None
        if begin and upto:
            found.append(((begin[0], upto), m.group(0)))
    return _hull(found, 0.9)


def _zh_months(text: str, today: date) -> Found | None:
    return _hull([(days, m.group(0)) for m in _RE_ZH_MONTH.finditer(text)
                  if (days := _zh_month(m, text, today)) is not None], 0.85)


def _holidays(text: str, today: date) -> Found | None:
    found = _holiday(HOLIDAYS_EN, text, today, True) or _holiday(HOLIDAYS_ZH, text, today,
                                                                 False)
    return None if found is None else (found[0], 0.85, (found[1],))


def _relatives(text: str, today: date) -> Found | None:
    for rx in (_RE_ZH_REL, _RE_EN_REL):
        m = rx.search(text)
        if m:
            found = _relative(m.group(0).lower(), today)
            if found is not None:
                return found[0], found[1], (m.group(0),)
    return None


# Most specific first: a day beats a week, a week beats a month, a month beats a year.
MATCHERS: list[Matcher] = [
    _dates, _holidays, _by(_RE_ZH_WEEKEND, _weekend, 0.8), _by(_RE_EN_WEEKEND, _weekend, 0.8),
    _by(_RE_ZH_WEEKDAY, _zh_weekday, 0.8), _by(_RE_EN_WEEKDAY, _en_weekday, 0.8),
    _by(_RE_ZH_AGO, lambda m, t: _ago(zh_number(m.group(1)), m.group(2), t), 0.75),
    _by(_RE_EN_AGO, lambda m, t: _ago(en_number(m.group(1)), m.group(2).lower(), t), 0.75),
    _by(_RE_ZH_WEEK_OF, _zh_week_of, 0.85), _by(_RE_EN_WEEK_OF, _en_week_of, 0.85),
    _by(_RE_ZH_PART, _zh_part, 0.85), _by(_RE_EN_PART, _en_part, 0.85),
    _by(_RE_EN_MONTH_YEAR, _en_month_year, 0.85), _zh_months, _en_months,
    _by(_RE_ZH_YEAR, _year, 0.8), _by(_RE_EN_YEAR, _year, 0.8), _by(_RE_SEASON, _season, 0.7),
    _relatives,
]


def find_time_range(question: str, now: datetime) -> TimeRange | None:
    """The most specific time range a question names, or None."""
    today = now.date()
    for matcher in MATCHERS:
        found = matcher(question, today)
        if found is not None:
            days, confidence, phrases = found
            return _range(days, confidence, phrases)
    return None
