"""Relative and absolute time expressions in English and Chinese, resolved against the
moment an observation was made.

``resolve_time("dentist moved to Thursday 4pm", ts)`` → ``(start, end)``: an instant
(start == end) when a clock time is given, a clock interval ("10:00-11:00"), otherwise
the whole day (or weekend, week or month).
Weekday rules: a bare or "this" weekday (周四, this Thursday) is its next occurrence on
or after today; "next <weekday>" / 下周四 is that weekday in the following week; "last
<weekday>" / 上周四 that weekday in the previous week. When a text reschedules
("moved from Wednesday to Thursday", 从周三改到周四), the new time counts.

Measured on the labelled corpus in bench/data/timeexpr (``python3 -m bench timeexpr``):
a clock time needs context to count (a period word, a day, minutes or 钟/整), so "一点也不",
"第一时间" or "三点建议" are not times; abbreviated weekdays count only beside a date or
time ("Sat 10:00", not "Sat Nav"); a recurring "every Wednesday" / 每周三 names no day.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, time, timedelta

WEEKDAYS_EN = {"monday": 0, "mon": 0, "tuesday": 1, "tue": 1, "tues": 1, "wednesday": 2,
               "wed": 2, "thursday": 3, "thu": 3, "thur": 3, "thurs": 3, "friday": 4, "fri": 4,
               "saturday": 5, "sat": 5, "sunday": 6, "sun": 6}
WEEKDAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
"""English weekday names, Monday first (``datetime.weekday()`` order)."""
FULL_WEEKDAYS = set(WEEKDAY_NAMES)
MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august",
               "september", "october", "november", "december")
"""English month names, January first."""
MONTHS_EN = {m: i for i, m in enumerate(MONTH_NAMES, start=1)}
MONTHS_EN.update({k[:3]: v for k, v in list(MONTHS_EN.items())})
MONTHS_EN["sept"] = 9
ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6,
             "七": 7, "八": 8, "九": 9, "十": 10}
ZH_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "末": 5}
EN_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
              "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}

Span = tuple[datetime, datetime]


def zh_number(text: str) -> int | None:
    """'十一' → 11, '二十三' → 23, '7' → 7, '二〇二五' → 2025."""
    if text.isdigit():
        return int(text)
    if not text or any(c not in ZH_DIGITS for c in text):
        return None
    if "十" not in text:
        value = 0
        for c in text:
            value = value * 10 + ZH_DIGITS[c]
        return value
    tens, _, ones = text.partition("十")
    if "十" in ones or len(tens) > 1 or len(ones) > 1:
        return None
    return (ZH_DIGITS[tens] if tens else 1) * 10 + (ZH_DIGITS[ones] if ones else 0)


def en_number(text: str) -> int | None:
    """'3' → 3, 'three' → 3, 'a' → 1."""
    return int(text) if text.isdigit() else EN_NUMBERS.get(text.lower())


_ZH_NUM = r"[0-9零〇一二两三四五六七八九十]{1,3}"
_EN_NUM = r"\d{1,2}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
_EN_WD = "|".join(sorted(WEEKDAYS_EN, key=len, reverse=True))
_EN_MONTH = "|".join(sorted(MONTHS_EN, key=len, reverse=True))
_CHANGE = re.compile(r"\b(?:moved?|chang(?:e|ed)|reschedul(?:e|ed)|postpon(?:e|ed)|push(?:ed)?"
                     r"|switch(?:ed)?)\b|改到|改成|改为|改在|推迟到|延期到|延到|挪到|换到|调到",
                     re.I)

_RE_EN_CLOCK = re.compile(
    r"(?<![\w.:])(\d{1,2})(?:[:.](\d{2}))?\s*(a\.?m\.?|p\.?m\.?)(?![a-z])"
    r"|(?<![\d:.])([01]?\d|2[0-3]):([0-5]\d)(?![\d:])"
    r"|\b(noon|midday|midnight)\b"
    r"|\bat\s+(\d{1,2})(?![\d:.]|\s*(?:a\.?m|p\.?m|%|kg|km|people|of|times))", re.I)
_RE_EVENING = re.compile(r"\b(?:tonight|this evening|in the evening)\b", re.I)
_ZH_PERIOD = r"凌晨|早上|早晨|上午|中午|下午|傍晚|晚上|今晚|明晚|昨晚|夜里|半夜|今早|明早"
_RE_ZH_CLOCK = re.compile(
    rf"({_ZH_PERIOD})?\s*({_ZH_NUM})\s*[点點时](?:(半)|(一刻|三刻)|({_ZH_NUM})(分)?|(钟|整))?")
_ZH_NOT_CLOCK = re.compile(r"^(?:[也儿点]|钟方向|一线)")
_ZH_DAY_BEFORE = re.compile(
    r"(?:今天|明天|后天|昨天|前天|今日|明日|(?:周|星期|礼拜)[一二三四五六日天]|[日号]|\d)\s*$")
_RE_CLOCK_RANGE = re.compile(r"^\s*(?:-|–|—|~|to|until|till|至|到)\s*", re.I)

_RE_EN_REL = re.compile(
    rf"\b(day after tomorrow|tomorrow|tonight|today|this (?:morning|afternoon|evening)"
    rf"|yesterday|last night|this weekend|next weekend|next week|this week|next month"
    rf"|in ({_EN_NUM}) (days?|weeks?)"
    rf"|({_EN_WD})\.? next week"
    rf"|(next|this|last|on|coming|every)?\s*({_EN_WD})\b\.?)", re.I)
_RE_EN_DATE = re.compile(
    rf"\b(?:({_EN_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s*(\d{{4}}))?|"
    rf"(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_EN_MONTH})\.?(?:,?\s*(\d{{4}}))?)\b", re.I)
_RE_EN_NTH = re.compile(r"\b(?:on|by|until|before) the (\d{1,2})(?:st|nd|rd|th)\b", re.I)
_RE_ISO_DATE = re.compile(r"(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)")
_RE_ZH_DATE = re.compile(
    rf"(?:([0-9〇零一二三四五六七八九]{{4}})年)?({_ZH_NUM})月({_ZH_NUM})[日号號]")
_RE_ZH_MONTH_DAY = re.compile(rf"(本月|这个月|下个?月)({_ZH_NUM})[日号號]")
_RE_ZH_RANGE_END = re.compile(r"^\s*(?:-|–|—|~|至|到)\s*")
_RE_ZH_REL = re.compile(
    r"(大后天|后天|明天|明日|明早|明晚|今天|今日|今早|今晚|今晨|昨天|昨晚|前天|下个?月"
    r"|(每)?(下下|下|这|這|本|上)?(?:个)?(?:周|星期|礼拜|禮拜)([一二三四五六日天末])"
    r"|(下|这|這|本|上)?(?:个)?(?:周末|星期|礼拜)"
    r"|(下|这|這|本)个?(?:周|星期|礼拜)(?![一二三四五六日天末])"
    r"|(\d+|[一二三四五六七八九十两]+)(天|周|个?星期)后)")


def _day_span(d: date) -> Span:
    return datetime.combine(d, time(0, 0)), datetime.combine(d, time(23, 59, 59))


def _weekday(base: date, target: int, weeks_ahead: int) -> date:
    if weeks_ahead == 0:
        return base + timedelta(days=(target - base.weekday()) % 7)
    monday = base - timedelta(days=base.weekday())
    return monday + timedelta(weeks=weeks_ahead, days=target)


def _month_span(year: int, month: int) -> tuple[date, date]:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def _next_month(base: date) -> tuple[int, int]:
    return (base.year + 1, 1) if base.month == 12 else (base.year, base.month + 1)


def _dated(year: int | None, month: int, day: int, base: date) -> date | None:
    """A calendar date; without a year, the one within about half a year of ``base``."""
    try:
        d = date(year or base.year, month, day)
    except ValueError:
        return None
    if year is None and (d - base).days < -180:
        d = d.replace(year=d.year + 1)
    return d


def _iso_days(text: str) -> tuple[date, date] | None:
    m = _RE_ISO_DATE.search(text)
    if m:
        try:
            d = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            return None
        return d, d
    return None


def _pick(matches: list[re.Match[str]], text: str) -> re.Match[str] | None:
    """The first match, or the last one when the text reschedules something."""
    if not matches:
        return None
    if len(matches) > 1 and _CHANGE.search(text):
        return matches[-1]
    return matches[0]


def _en_weekday_ok(m: re.Match[str], text: str) -> bool:
    """A weekday word names a day unless it is part of a name ("Sun Valley", "Sat Nav",
    "Sunday Riley", "Friday Night Lights") or recurs ("every Friday")."""
    modifier, word = (m.group(5) or "").lower(), m.group(6)
    if modifier == "every":
        return False
    after = text[m.end():]
    nxt = re.match(r"\s*([A-Za-z]+)", after)
    if word.lower() not in FULL_WEEKDAYS:
        if not word[0].isupper():
            return False
        if modifier or re.match(r"\s*,?\s*\d", after):
            return True
        return bool(nxt and nxt.group(1).lower() in ("at", "morning", "afternoon", "evening"))
    if nxt and nxt.group(1)[0].isupper() and len(nxt.group(1)) > 1 and \
            nxt.group(1).lower() not in MONTHS_EN:
        return nxt.group(1).lower() in ("morning", "afternoon", "evening", "night") and not \
            re.match(r"\s*[A-Za-z]+\s+[A-Z]", after)
    return True


def _en_day(text: str, base: date) -> tuple[date, date] | None:
    """The day (or day range) an English expression refers to."""
    found = _iso_days(text)
    if found:
        return found
    dates = list(_RE_EN_DATE.finditer(text))
    m = _pick(dates, text)
    if m:
        month_s, day_s, year_s = (m.group(1), m.group(2), m.group(3)) if m.group(1) else (
            m.group(5), m.group(4), m.group(6))
        d = _dated(int(year_s) if year_s else None, MONTHS_EN[month_s.lower().rstrip(".")],
                   int(day_s), base)
        if d is not None:
            return d, d
    m = _RE_EN_NTH.search(text)
    if m:
        d = _dated(None, base.month, int(m.group(1)), base)
        if d is not None and (base - d).days > 3:
            year, month = _next_month(base)
            d = _dated(year, month, int(m.group(1)), base)
        if d is not None:
            return d, d
    rel = [c for c in _RE_EN_REL.finditer(text) if not c.group(6) or _en_weekday_ok(c, text)]
    m = _pick(rel, text)
    if not m:
        return None
    word = m.group(1).lower()
    fixed = {"today": 0, "tonight": 0, "this morning": 0, "this afternoon": 0,
             "this evening": 0, "tomorrow": 1, "day after tomorrow": 2, "yesterday": -1,
             "last night": -1}
    if word in fixed:
        d = base + timedelta(days=fixed[word])
        return d, d
    if word in ("this weekend", "next weekend"):
        sat = _weekday(base, 5, 1 if word.startswith("next") and base.weekday() < 5 else 0)
        return sat, sat + timedelta(days=1)
    if word in ("next week", "this week"):
        monday = base - timedelta(days=base.weekday()) + timedelta(weeks=word == "next week")
        return monday, monday + timedelta(days=6)
    if word == "next month":
        return _month_span(*_next_month(base))
    if m.group(2):
        n = en_number(m.group(2)) or 0
        d = base + timedelta(days=n * (7 if m.group(3).lower().startswith("week") else 1))
        return d, d
    if m.group(4):
        d = _weekday(base, WEEKDAYS_EN[m.group(4).lower()], 1)
        return d, d
    modifier = (m.group(5) or "").lower()
    target = WEEKDAYS_EN[m.group(6).lower()]
    weeks = {"last": -1, "next": 1}.get(modifier, 0)
    d = _weekday(base, target, weeks)
    return d, d


def _zh_day(text: str, base: date) -> tuple[date, date] | None:
    """The day (or day range) a Chinese expression refers to."""
    found = _iso_days(text)
    if found:
        return found
    dates = list(_RE_ZH_DATE.finditer(text))
    m = _pick(dates, text)
    if m:
        month, day = zh_number(m.group(2)), zh_number(m.group(3))
        year = zh_number(m.group(1)) if m.group(1) else None
        d = _dated(year, month, day, base) if month and day else None
        if d is not None:
            end = _RE_ZH_RANGE_END.match(text[m.end():])
            if end and m is dates[0] and len(dates) > 1:
                last = dates[1]
                e = _dated(zh_number(last.group(1)) if last.group(1) else year,
                           zh_number(last.group(2)) or 0, zh_number(last.group(3)) or 0, base)
                if e is not None and e >= d:
                    return d, e
            return d, d
    m = _RE_ZH_MONTH_DAY.search(text)
    if m:
        year, month = _next_month(base) if m.group(1).startswith("下") else (base.year,
                                                                             base.month)
        d = _dated(year, month, zh_number(m.group(2)) or 0, base)
        if d is not None:
            return d, d
    m = _pick(list(_RE_ZH_REL.finditer(text)), text)
    if not m:
        return None
    word = m.group(1)
    offsets = {"今天": 0, "今日": 0, "今早": 0, "今晚": 0, "今晨": 0, "明天": 1, "明日": 1,
               "明早": 1, "明晚": 1, "后天": 2, "大后天": 3, "昨天": -1, "昨晚": -1, "前天": -2}
    if word in offsets:
        d = base + timedelta(days=offsets[word])
        return d, d
    if word in ("下月", "下个月"):
        return _month_span(*_next_month(base))
    if m.group(7):
        n = zh_number(m.group(7)) or 0
        d = base + timedelta(days=n * (1 if m.group(8) == "天" else 7))
        return d, d
    if m.group(6):
        monday = base - timedelta(days=base.weekday()) + timedelta(weeks=m.group(6) == "下")
        return monday, monday + timedelta(days=6)
    if m.group(4):
        if m.group(2):  # 每周三: every Wednesday names no single day
            return None
        weeks = {"下下": 2, "下": 1, "上": -1}.get(m.group(3) or "", 0)
        d = _weekday(base, ZH_WEEKDAY[m.group(4)], weeks)
        if m.group(4) == "末":
            return d, d + timedelta(days=1)
        return d, d
    if "周末" in word:
        weeks = {"下": 1, "上": -1}.get(m.group(5) or "", 0)
        sat = _weekday(base, 5, weeks)
        return sat, sat + timedelta(days=1)
    return None


def _en_clock(m: re.Match[str], text: str) -> tuple[time, int] | None:
    """(time, extra days) of an English clock match."""
    if m.group(1):
        hour, minute = int(m.group(1)), int(m.group(2) or 0)
        if not 1 <= hour <= 12 or minute > 59:
            return None
        return time(hour % 12 + (12 if m.group(3).lower().startswith("p") else 0), minute), 0
    if m.group(4):
        return time(int(m.group(4)), int(m.group(5))), 0
    if m.group(6):
        word = m.group(6).lower()
        return (time(0, 0), 1) if word == "midnight" else (time(12, 0), 0)
    hour = int(m.group(7))
    if not 1 <= hour <= 11 or not _RE_EVENING.search(text):
        return None  # "at 8" alone could be morning or evening
    return time(hour + 12, 0), 0


def _zh_clock(m: re.Match[str], text: str) -> tuple[time, int] | None:
    """(time, extra days) of a Chinese clock match, or None when it is no clock time."""
    period, hour = m.group(1) or "", zh_number(m.group(2))
    half, quarter, minutes, fen, exact = m.group(3), m.group(4), m.group(5), m.group(6), \
        m.group(7)
    if hour is None or hour > 24 or _ZH_NOT_CLOCK.match(text[m.end(2) + 1:]):
        return None
    context = bool(period) or bool(_ZH_DAY_BEFORE.search(text[: m.start()]))
    if not context and text[m.end(2):].lstrip().startswith("时"):
        return None  # 一时半会儿 / 第一时间: 时 marks an hour only in a dated phrase
    if not (context or half or quarter or fen or exact or m.group(2).isdigit() and minutes):
        return None  # 一点也不 / 三点建议 / 十二点五公斤: a bare "N点" is no time
    if minutes and not fen and not context:
        return None  # 三点八 / 九点九元: a decimal number
    minute = 30 if half else 15 if quarter == "一刻" else 45 if quarter == "三刻" else \
        (zh_number(minutes) or 0) if minutes else 0
    if minute > 59:
        return None
    extra = 0
    if period in ("下午", "傍晚", "晚上", "今晚", "明晚", "昨晚", "夜里") and hour < 12 or \
            period == "中午" and hour < 6:
        hour += 12
    if hour == 24 or period in ("晚上", "今晚", "明晚", "夜里", "半夜") and hour == 12:
        hour, extra = 0, 1  # 晚上12点 is midnight
    return time(hour, minute), extra


def _clock(text: str) -> tuple[time, int, time | None] | None:
    """(start, extra days, end or None) of the clock time a text names."""
    zh = bool(re.search(r"[\u4e00-\u9fff]", text))
    found: list[tuple[re.Match[str], tuple[time, int]]] = []
    for m in _RE_EN_CLOCK.finditer(text):
        got = _en_clock(m, text)
        if got:
            found.append((m, got))
    if zh:
        for m in _RE_ZH_CLOCK.finditer(text):
            got = _zh_clock(m, text)
            if got:
                found.append((m, got))
    if not found:
        return None
    found.sort(key=lambda f: f[0].start())
    chosen = _pick([f[0] for f in found], text)
    index = next(i for i, f in enumerate(found) if f[0] is chosen)
    start, extra = found[index][1]
    end = None
    if index + 1 < len(found) and _RE_CLOCK_RANGE.fullmatch(
            text[found[index][0].end(): found[index + 1][0].start()]):
        end = found[index + 1][1][0]
        if end < start:
            end = None
    return start, extra, end


def resolve_time(text: str, observed: datetime) -> Span | None:
    """The event time a text refers to, resolved against ``observed``; None if none."""
    base = observed.date()
    days = _zh_day(text, base) if re.search(r"[\u4e00-\u9fff]", text) else None
    days = days or _en_day(text, base)
    clock = _clock(text)
    if days is None and clock is None:
        return None
    first, last = days or (base, base)
    if clock is not None and first == last:
        start_t, extra, end_t = clock
        day = first + timedelta(days=extra)
        start = datetime.combine(day, start_t)
        end = datetime.combine(day, end_t) if end_t is not None else start
    else:
        start, _ = _day_span(first)
        _, end = _day_span(last)
    if observed.tzinfo is not None:
        start, end = start.replace(tzinfo=observed.tzinfo), end.replace(tzinfo=observed.tzinfo)
    return start, end
