"""Time-expression parsing, measured on a hand-labelled corpus (bench/data/timeexpr/).

    python3 -m bench timeexpr [--errors] [--parser rules|dateparser]

Two parsers are measured, each on its own rows:
- ``obs`` rows: the event time an observation's text refers to (``resolve_time``),
  compared to the minute (an instant, or whole days 00:00-23:59);
- ``question`` rows: the range a question names (``find_time_range``), counted only when
  its confidence reaches the planner's filtering threshold (weaker ones merely boost),
  and matched when each end lies within one day outside the labelled range.

Two sets per language: ``dev`` (en.tsv, zh.tsv: the rules were fitted to it) and
``heldout`` (heldout_*.tsv: written afterwards and never used to change the rules).
Negatives (start ``-``) must give nothing. Precision = correct / predicted, recall =
correct / labelled positives; a wrong range counts against both. ``--parser dateparser``
measures the ``dateparser`` library (``search_dates``) on the English ``obs`` rows
instead, as the alternative to the hand-written rules.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any

from memfuse_lite.config import RetrievalConfig
from memfuse_lite.text.timeexpr import resolve_time
from memfuse_lite.text.timerange import find_time_range

from .common import write_result

CORPUS = Path(__file__).resolve().parent / "data" / "timeexpr"
NOW = datetime(2025, 3, 4, 12, 10)
"""The moment every phrase of the corpus is read at (a Tuesday)."""

Span = tuple[datetime, datetime]


@dataclass(frozen=True, slots=True)
class Row:
    """One labelled phrase; ``expected`` is None for a negative."""

    lang: str
    kind: str
    phrase: str
    expected: Span | None
    line: int


def _parse_end(text: str, start: bool) -> datetime:
    if "T" in text:
        return datetime.fromisoformat(text)
    return datetime.combine(date.fromisoformat(text), time(0, 0) if start else time(23, 59))


SETS = {"dev": "{lang}.tsv", "heldout": "heldout_{lang}.tsv"}
"""The development set (the rules were fitted to it) and the held-out set (never used to
change the rules)."""


def load(lang: str, which: str = "dev") -> list[Row]:
    """The corpus rows of one language in one set."""
    rows = []
    path = CORPUS / SETS[which].format(lang=lang)
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        kind, start, end, phrase = line.split("\t")
        if kind not in ("obs", "question"):
            raise ValueError(f"{path}:{n}: unknown kind {kind!r}")
        expected = None if start == "-" else (_parse_end(start, True), _parse_end(end, False))
        rows.append(Row(lang, kind, phrase, expected, n))
    return rows


def predict_rules(row: Row) -> Span | None:
    """The library's prediction for one row."""
    if row.kind == "obs":
        span = resolve_time(row.phrase, NOW)
        return None if span is None else (span[0].replace(second=0), span[1].replace(second=0))
    rng = find_time_range(row.phrase, NOW)
    if rng is None or rng.confidence < RetrievalConfig().constraint_min_confidence:
        return None
    return rng.start, rng.end


def predict_dateparser(row: Row) -> Span | None:
    """``dateparser.search.search_dates`` on an observation (first date found; a clock
    time gives an instant, a date alone the whole day)."""
    from dateparser.search import search_dates

    found = search_dates(row.phrase, languages=[row.lang],
                         settings={"RELATIVE_BASE": NOW, "PREFER_DATES_FROM": "future",
                                   "RETURN_TIME_AS_PERIOD": True})
    if not found:
        return None
    value = found[0][1]
    if value.time() == time(0, 0) and not any(c.isdigit() for c in found[0][0]):
        return datetime.combine(value.date(), time(0, 0)), datetime.combine(value.date(),
                                                                             time(23, 59))
    return value.replace(second=0, microsecond=0), value.replace(second=0, microsecond=0)


def correct(row: Row, got: Span) -> bool:
    """Whether a prediction matches the label (see the module docstring)."""
    assert row.expected is not None
    want_a, want_b = row.expected
    if row.kind == "obs":
        return got == (want_a, want_b)
    slack = timedelta(days=1)
    a, b = got[0].date(), got[1].date()
    return (want_a.date() - slack <= a <= want_a.date()
            and want_b.date() <= b <= want_b.date() + slack)


def score(rows: list[Row], predict: Callable[[Row], Span | None]) -> dict[str, Any]:
    """Precision, recall and the mistakes over some rows."""
    predicted = right = positives = 0
    mistakes: list[dict[str, str]] = []
    for row in rows:
        got = predict(row)
        positives += row.expected is not None
        if got is None:
            if row.expected is not None:
                mistakes.append(_mistake(row, "missed", got))
            continue
        predicted += 1
        if row.expected is None:
            mistakes.append(_mistake(row, "false alarm", got))
        elif correct(row, got):
            right += 1
        else:
            mistakes.append(_mistake(row, "wrong", got))
    return {"rows": len(rows), "positives": positives, "predicted": predicted,
            "correct": right, "precision": round(right / predicted, 3) if predicted else 1.0,
            "recall": round(right / positives, 3) if positives else 1.0,
            "mistakes": mistakes}


def _mistake(row: Row, what: str, got: Span | None) -> dict[str, str]:
    def fmt(span: Span | None) -> str:
        return "-" if span is None else f"{span[0]:%Y-%m-%dT%H:%M}..{span[1]:%Y-%m-%dT%H:%M}"

    return {"what": what, "kind": row.kind, "phrase": row.phrase, "line": str(row.line),
            "expected": fmt(row.expected), "got": fmt(got)}


def main(argv: list[str] | None = None) -> None:
    """CLI entry."""
    ap = argparse.ArgumentParser(prog="python3 -m bench timeexpr", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--errors", action="store_true", help="print every mistake")
    ap.add_argument("--parser", choices=("rules", "dateparser"), default="rules")
    args = ap.parse_args(argv)
    table: list[dict[str, Any]] = []
    for which, lang in ((w, lang) for w in SETS for lang in ("en", "zh")):
        rows = load(lang, which)
        if args.parser == "dateparser":
            parts = [("obs", [r for r in rows if r.kind == "obs"])]
            predict = predict_dateparser
        else:
            parts = [("obs", [r for r in rows if r.kind == "obs"]),
                     ("question", [r for r in rows if r.kind == "question"]), ("all", rows)]
            predict = predict_rules
        for kind, part in parts:
            res = score(part, predict)
            table.append({"set": which, "lang": lang, "kind": kind, "parser": args.parser,
                          **res})
            print(f"{which:<8} {lang} {kind:<8} {args.parser:<10} rows {res['rows']:>3}  "
                  f"positives {res['positives']:>3}  precision {res['precision']:.3f}  "
                  f"recall {res['recall']:.3f}")
            if args.errors and kind != "all":
                for m in res["mistakes"]:
                    print(f"    {m['what']:<11} {m['phrase']!r} expected {m['expected']} "
                          f"got {m['got']}")
    write_result(f"timeexpr-{args.parser}", {
        "command": "python3 -m bench timeexpr " + " ".join(argv or []),
        "reference_now": NOW.isoformat(timespec="minutes"), "rows": table})


if __name__ == "__main__":
    main()
