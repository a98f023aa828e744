"""``memfuse demo``: a small household whose apps and devices report one busy week."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime

from .memory import MemFuse
from .records import IngestResult, Observation
from .timeutil import parse_ts

# (source, user, device, ts, text, visibility)
SCENARIO: list[tuple[str, str, str, str, str, str]] = [
    ("calendar", "ana", "laptop", "2025-03-03T08:00", "Dentist – Dr. Lin, Wed 15:00", "household"),
    ("chat", "ana", "phone", "2025-03-04T12:10",
     "The clinic just called: my dentist appointment moved to Thursday 4pm", "household"),
    ("call", "ana", "phone", "2025-03-04T12:05", "Call from Dr. Lin's clinic, 2 min", "household"),
    ("sms", "ben", "phone", "2025-03-04T18:30",
     "Reminder for Ana: dentist Thursday 4pm, I'll pick up Mia from school", "household"),
    ("photo", "ana", "phone", "2025-03-06T16:20", "Photo at Dr. Lin dental clinic waiting room",
     "household"),
    ("payment", "ana", "watch", "2025-03-06T17:05", "Paid 320 CNY to Lin Dental Clinic",
     "household"),
    ("chat", "mia", "phone", "2025-03-05T19:00", "学校周五下午开家长会，妈妈能来吗？", "household"),
    ("calendar", "ben", "laptop", "2025-03-05T21:00", "家长会 周五 15:00 实验小学", "household"),
    ("calendar", "ana", "laptop", "2025-03-03T09:00", "Dinner with the Wangs, Friday 19:00",
     "household"),
    ("email", "ben", "laptop", "2025-03-07T09:00",
     "Airline notice: flight MU5101 to Beijing is delayed, now departs 13:30 instead of 11:30",
     "household"),
    ("sms", "ben", "phone", "2025-03-07T09:15",
     "Dinner with the Wangs is cancelled because my flight to Beijing is delayed",
     "household"),
    ("note", "ben", "phone", "2025-03-07T10:00", "Private: surprise birthday gift for Ana — "
     "the jade bracelet, pick up Saturday", "private"),
    ("push", "ana", "phone", "2025-03-08T11:00",
     "Your parcel from JD.com was delivered to the front desk", "household"),
]

NOW = datetime(2025, 3, 9, 20, 0)
QUESTIONS: list[tuple[str, str]] = [
    ("ana", "When is my dentist appointment now?"),
    ("ben", "Why was the dinner with the Wangs cancelled?"),
    ("ana", "家长会是什么时候？"),
    ("ana", "What gift is planned for my birthday?"),
    ("ben", "What gift is planned for Ana's birthday?"),
]


def observations() -> list[Observation]:
    """The scenario as observations (external ids are stable, so re-running dedupes)."""
    return [
        Observation(source=src, user=user, device=device, ts=parse_ts(ts), text=text,
                    external_id=f"demo-{i}", visibility=vis)
        for i, (src, user, device, ts, text, vis) in enumerate(SCENARIO)
    ]


async def ingest_concurrently(mem: MemFuse, items: list[Observation]) -> list[IngestResult]:
    """One producer per source app, all at once, as phones and laptops would sync."""
    by_source: dict[str, list[Observation]] = {}
    for obs in items:
        by_source.setdefault(obs.source, []).append(obs)

    async def producer(batch: list[Observation]) -> list[IngestResult]:
        results = []
        for obs in batch:
            results.append(await mem.ingest(obs))
            await asyncio.sleep(0)
        return results

    nested = await asyncio.gather(*(producer(b) for b in by_source.values()))
    return [r for group in nested for r in group]


async def run_demo(mem: MemFuse, echo: Callable[[str], None] = print, k: int = 3) -> None:
    """Ingest the household concurrently, then answer the questions with evidence."""
    results = await ingest_concurrently(mem, observations())
    await mem.flush()
    accepted = sum(r.status == "accepted" for r in results)
    echo(f"ingested {accepted} observations ({len(results) - accepted} duplicates) "
         f"from {len({s[0] for s in SCENARIO})} apps, {len({s[1] for s in SCENARIO})} users\n")
    for viewer, question in QUESTIONS:
        answer = await mem.ask(question, viewer=viewer, now=NOW)
        echo(f"[{viewer}] {question}   ({answer.mode} answer, {answer.latency_ms:.1f} ms)")
        echo(f"  → {answer.text}")
        for c in answer.citations:
            p = c.provenance[0]
            echo(f"     ← {p.source} #{p.external_id} · {p.user} · {p.device} · {p.ts}")
        echo("  evidence:")
        for hit in answer.evidence[:k]:
            p = hit.provenance[0]
            mark = f" (superseded by {', '.join(map(str, hit.superseded_by))})" \
                if hit.superseded_by else ""
            echo(f"   [{hit.event_id}] {hit.text[:90]}{mark}")
            echo(f"        ← {p.source} #{p.external_id} · {p.user} · {p.device} · {p.ts}")
        for f in answer.fused[:1]:
            echo(f"  fused memory {f.id}: {f.summary[:160]}")
        echo("")
