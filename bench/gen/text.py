"""Rendering helpers shared by the scene templates: dates, times and checklist aliases.

Every value a question checks is rendered into observation text in one of a few fixed
forms, and its checklist item lists all of them, so matching stays deterministic.
"""

from __future__ import annotations

import unicodedata
from datetime import date, datetime

WEEKDAYS_EN = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
WEEKDAYS_ZH = ("周一", "周二", "周三", "周四", "周五", "周六", "周日")
MONTHS_EN = ("January", "February", "March", "April", "May", "June", "July", "August",
             "September", "October", "November", "December")


def day_text(d: date, lang: str) -> str:
    """'Thursday 13 March' / '3月13日周四'."""
    if lang == "zh":
        return f"{d.month}月{d.day}日{WEEKDAYS_ZH[d.weekday()]}"
    return f"{WEEKDAYS_EN[d.weekday()]} {d.day} {MONTHS_EN[d.month - 1]}"


def day_aliases(d: date) -> list[str]:
    """Every form a day may take in text or in an answer."""
    month = MONTHS_EN[d.month - 1]
    return [f"{d.day} {month}", f"{month} {d.day}", f"{d.month}月{d.day}日", d.isoformat(),
            f"{d.day} {month[:3]}", f"{month[:3]} {d.day}"]


def time_text(t: datetime) -> str:
    """24-hour clock, the same in both languages."""
    return f"{t.hour:02d}:{t.minute:02d}"


def time_aliases(t: datetime) -> list[str]:
    """'16:00', '4pm', '4:00 pm', '下午4点' …"""
    h12 = t.hour % 12 or 12
    ampm = "am" if t.hour < 12 else "pm"
    zh = ("上午" if t.hour < 12 else "下午") + f"{h12}点" + (f"{t.minute}分" if t.minute else "")
    out = [time_text(t), f"{h12}:{t.minute:02d} {ampm}", f"{h12}:{t.minute:02d}{ampm}", zh]
    if t.minute == 0:
        out += [f"{h12}{ampm}", f"{h12} {ampm}"]
    elif t.minute == 30:
        out += [f"{h12}.30{ampm}", f"{h12}点半", ("上午" if t.hour < 12 else "下午") + f"{h12}点半"]
    return out


def money(amount: float, lang: str) -> str:
    """'¥128.50' in both languages (one currency keeps matching exact)."""
    return f"¥{amount:.2f}"


def money_aliases(amount: float) -> list[str]:
    """Forms an amount may take."""
    out = [f"¥{amount:.2f}", f"{amount:.2f}", f"{amount:.2f}元"]
    if amount == int(amount):
        out += [f"¥{int(amount)}", f"{int(amount)}元", f"{int(amount)} yuan"]
    return out


def normalise(text: str) -> str:
    """Case, width and whitespace folded: the matching form for checklists."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def contains_item(text: str, aliases: list[str]) -> bool:
    """Whether ``text`` states a checklist item (any alias, normalised substring)."""
    norm = normalise(text)
    return any(normalise(a) in norm for a in aliases if a)
