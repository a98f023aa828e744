"""Relative and absolute time expressions in English and Chinese, resolved against the
moment an observation was made.

``resolve_time("dentist moved to Thursday 4pm", ts)`` → ``(start, end)``: an instant
(start == end) when a clock time is given, otherwise the whole day (or weekend, or week).
Weekday rules: a bare or "this" weekday (周四, this Thursday) is its next occurrence on
or after today; "next <weekday>" / 下周四 is that weekday in the following week.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta

WEEKDAYS_EN = {"monday": 0, "mon": 0, "tuesday": 1, "tue": 1, "tues": 1, "wednesday": 2,
               "wed": 2, "thursday": 3, "thu": 3, "thur": 3, "thurs": 3, "friday": 4, "fri": 4,
               "saturday": 5, "sat": 5, "sunday": 6, "sun": 6}
FULL_WEEKDAYS = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
MONTHS_EN = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"], start=1)}
MONTHS_EN.update({k[:3]: v for k, v in list(MONTHS_EN.items())})
MONTHS_EN["sept"] = 9
ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6,
             "七": 7, "八": 8, "九": 9, "十": 10}
ZH_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "末": 5}

Span = tuple[datetime, datetime]


def zh_number(text: str) -> int | None:
    """'十一' → 11, '二十三' → 23, '7' → 7."""
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
    return (ZH_DIGITS[tens] if tens else 1) * 10 + (ZH_DIGITS[ones] if ones else 0)


_ZH_NUM = r"[0-9零〇一二两三四五六七八九十]{1,3}"
_EN_WD = "|".join(sorted(WEEKDAYS_EN, key=len, reverse=True))
_EN_MONTH = "|".join(sorted(MONTHS_EN, key=len, reverse=True))

_RE_EN_CLOCK = re.compile(
    r"\b(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*(a\.?m\.?|p\.?m\.?)(?![a-z])|\b([01]?\d|2[0-3]):([0-5]\d)\b",
    re.I)
_RE_ZH_CLOCK = re.compile(
    rf"(凌晨|早上|早晨|上午|中午|下午|傍晚|晚上|今晚|明晚|夜里)?\s*({_ZH_NUM})\s*[点點时](半|({_ZH_NUM})分?)?")
_RE_EN_REL = re.compile(
    rf"\b(day after tomorrow|tomorrow|tonight|today|yesterday|this weekend|next weekend|"
    rf"next week|this week|in (\d+) days?|(next|this|last|on|coming)?\s*({_EN_WD})\b)", re.I)
_RE_EN_DATE = re.compile(
    rf"\b(?:({_EN_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s*(\d{{4}}))?|"
    rf"(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_EN_MONTH})\.?(?:,?\s*(\d{{4}}))?)\b", re.I)
_RE_ISO_DATE = re.compile(r"\b(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})\b")
_RE_ZH_DATE = re.compile(rf"(?:(\d{{4}})年)?({_ZH_NUM})月({_ZH_NUM})[日号號]")
_RE_ZH_REL = re.compile(
    r"(大后天|后天|明天|明日|今天|今日|今晚|明晚|昨天|前天|"
    r"(下下|下|这|這|本|上)?(?:个)?(?:周|星期|礼拜|禮拜)([一二三四五六日天末])|"
    r"(下|这|這|本|上)?(?:个)?(?:周末|星期|礼拜)|(\d+|[一二三四五六七八九十两]+)天后)")


def _day_span(d: date) -> Span:
    return datetime.combine(d, time(0, 0)), datetime.combine(d, time(23, 59, 59))


def _weekday(base: date, target: int, weeks_ahead: int) -> date:
    if weeks_ahead == 0:
        return base + timedelta(days=(target - base.weekday()) % 7)
    monday = base - timedelta(days=base.weekday())
    return monday + timedelta(weeks=weeks_ahead, days=target)


def _iso_day(text: str) -> date | None:
    m = _RE_ISO_DATE.search(text)
    if m:
        try:
            return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            return None
    return None


def _en_day(text: str, base: date) -> tuple[date, date] | None:
    """The day (or day range) an English expression refers to."""
    iso = _iso_day(text)
    if iso is not None:
        return iso, iso
    m = _RE_EN_DATE.search(text)
    if m:
        month_s, day_s, year_s = (m.group(1), m.group(2), m.group(3)) if m.group(1) else (
            m.group(5), m.group(4), m.group(6))
        try:
            month = MONTHS_EN[month_s.lower().rstrip(".")]
            d = date(int(year_s) if year_s else base.year, month, int(day_s))
            if not year_s and (d - base).days < -180:
                d = d.replace(year=d.year + 1)
            return d, d
        except (KeyError, ValueError):
            pass
    m = None
    for cand in _RE_EN_REL.finditer(text):
        wd = cand.group(4)
        # "sat", "sun", "wed" are words too: abbreviations count only when capitalised
        if wd and wd.lower() not in FULL_WEEKDAYS and not wd[0].isupper():
            continue
        m = cand
        break
    if not m:
        return None
    word = m.group(1).lower()
    if word == "today" or word == "tonight":
        return base, base
    if word == "tomorrow":
        return base + timedelta(days=1), base + timedelta(days=1)
    if word == "day after tomorrow":
        return base + timedelta(days=2), base + timedelta(days=2)
    if word == "yesterday":
        return base - timedelta(days=1), base - timedelta(days=1)
    if word in ("this weekend", "next weekend"):
        sat = _weekday(base, 5, 1 if word.startswith("next") and base.weekday() < 5 else 0)
        return sat, sat + timedelta(days=1)
    if word in ("next week", "this week"):
        monday = base - timedelta(days=base.weekday()) + timedelta(weeks=word == "next week")
        return monday, monday + timedelta(days=6)
    if m.group(2):
        d = base + timedelta(days=int(m.group(2)))
        return d, d
    modifier = (m.group(3) or "").lower()
    target = WEEKDAYS_EN[m.group(4).lower()]
    if modifier == "last":
        d = _weekday(base, target, -1)
    else:
        d = _weekday(base, target, 1 if modifier == "next" else 0)
    return d, d


def _zh_day(text: str, base: date) -> tuple[date, date] | None:
    """The day (or day range) a Chinese expression refers to."""
    iso = _iso_day(text)
    if iso is not None:
        return iso, iso
    m = _RE_ZH_DATE.search(text)
    if m:
        month, day = zh_number(m.group(2)), zh_number(m.group(3))
        if month and day:
            try:
                d = date(int(m.group(1)) if m.group(1) else base.year, month, day)
                if not m.group(1) and (d - base).days < -180:
                    d = d.replace(year=d.year + 1)
                return d, d
            except ValueError:
                pass
    m = _RE_ZH_REL.search(text)
    if not m:
        return None
    word = m.group(1)
    offsets = {"今天": 0, "今日": 0, "今晚": 0, "明天": 1, "明日": 1, "明晚": 1, "后天": 2,
               "大后天": 3, "昨天": -1, "前天": -2}
    if word in offsets:
        d = base + timedelta(days=offsets[word])
        return d, d
    if m.group(5):
        n = zh_number(m.group(5)) or 0
        d = base + timedelta(days=n)
        return d, d
    if m.group(3):
        prefix = m.group(2) or ""
        weeks = {"下下": 2, "下": 1, "上": -1}.get(prefix, 0)
        target = ZH_WEEKDAY[m.group(3)]
        d = _weekday(base, target, weeks) if weeks else _weekday(base, target, 0)
        if m.group(3) == "末":
            return d, d + timedelta(days=1)
        return d, d
    if "周末" in word:
        prefix = m.group(4) or ""
        sat = _weekday(base, 5, 1 if prefix == "下" else 0)
        return sat, sat + timedelta(days=1)
    return None


def _clock(text: str) -> time | None:
    m = _RE_EN_CLOCK.search(text)
    if m:
        if m.group(1):
            hour, minute = int(m.group(1)), int(m.group(2) or 0)
            pm = m.group(3).lower().startswith("p")
            if hour > 12:
                return None
            hour = hour % 12 + (12 if pm else 0)
        else:
            hour, minute = int(m.group(4)), int(m.group(5))
        return time(hour, minute)
    m = _RE_ZH_CLOCK.search(text)
    if m:
        zh_hour = zh_number(m.group(2))
        if zh_hour is None or zh_hour > 24:
            return None
        hour = zh_hour
        minute = 30 if m.group(3) == "半" else (zh_number(m.group(4)) or 0) if m.group(4) else 0
        period = m.group(1) or ""
        if period in ("下午", "傍晚", "晚上", "今晚", "明晚", "夜里") and hour < 12 or period == "中午" and hour < 6:
            hour += 12
        return time(hour % 24, min(minute, 59))
    return None


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
        moment = datetime.combine(first, clock)
        if observed.tzinfo is not None:
            moment = moment.replace(tzinfo=observed.tzinfo)
        return moment, moment
    start, _ = _day_span(first)
    _, end = _day_span(last)
    if observed.tzinfo is not None:
        start, end = start.replace(tzinfo=observed.tzinfo), end.replace(tzinfo=observed.tzinfo)
    return start, end
