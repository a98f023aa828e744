"""Adapters from the shared real datasets to the CLI's JSONL formats (read in place).

LifeBench: one person's phone data; every record becomes an observation whose
(source, external_id) is the record's (type, phone_id), so evidence can be scored
exactly. ``event_id`` (fusion ground truth) and ``summarized_info`` (a generator
paraphrase) are never ingested.

LoCoMo: each turn ``D<session>:<turn>`` of a conversation becomes an observation of its
speaker, timestamped with the session date.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

DATA = Path(os.environ.get("MEMFUSE_SHARED_DATA")
            or Path(__file__).resolve().parents[1].parent / "shared" / "data")
"""The shared datasets' folder: ``../shared/data`` beside the project, or the folder
``MEMFUSE_SHARED_DATA`` names (another copy laid out the same way)."""
PERSON = "leimingxuan"
"""The LifeBench person the benchmarks read unless told another (``--person``)."""
LIFEBENCH_SOURCES = ("calendar", "sms", "call", "photo", "push", "note", "agent_chat",
                     "fitness_health")
HIDDEN_FIELDS = {"event_id", "summarized_info", "type", "phone_id"}


def lifebench_people(lang: str) -> list[str]:
    """The LifeBench people whose data lies in the shared folder for ``lang``."""
    root = DATA / "lifebench" / lang
    return sorted(p.name for p in root.iterdir() if (p / "phone_data").is_dir()) \
        if root.is_dir() else []


def lifebench_dir(lang: str, person: str = PERSON) -> Path:
    """The person's folder for ``lang`` ('en' or 'zh'); a ValueError naming the people
    there when the person's data is not."""
    path = DATA / "lifebench" / lang / person
    if not (path / "phone_data").is_dir():
        raise ValueError(f"no LifeBench data for {person!r} ({lang}) in {DATA}; "
                         f"people there: {', '.join(lifebench_people(lang)) or 'none'}")
    return path


def check_person(ap: argparse.ArgumentParser, lang: str, person: str) -> None:
    """Stop a benchmark's command line with the people there when ``person`` has no
    LifeBench data for ``lang``."""
    try:
        lifebench_dir(lang, person)
    except ValueError as exc:
        ap.error(str(exc))


def lifebench_name(lang: str, person: str = PERSON) -> str:
    """The dataset's name in bench/out and bench/results: ``lifebench-en`` for the shared
    person, ``lifebench-en-<person>`` for another."""
    return f"lifebench-{lang}" + ("" if person == PERSON else f"-{person}")


def _ts(record: dict[str, Any]) -> str:
    for key in ("datetime", "start_time", "date", "日期"):
        if record.get(key):
            raw = str(record[key]).strip()
            try:
                return datetime.fromisoformat(raw).isoformat()
            except ValueError:
                continue
    raise ValueError(f"record has no usable time: {sorted(record)}")


def _location(loc: object) -> str:
    if isinstance(loc, dict):
        parts = [loc.get(k) for k in ("poi", "streetName", "district", "city")]
        return ", ".join(str(p) for p in parts if p)
    return str(loc or "")


def render_lifebench(source: str, r: dict[str, Any]) -> str:
    """The text a phone would show for a record (structured fields stay in meta)."""
    if source == "calendar":
        return f"{r.get('title', '')}. {r.get('description', '')} " \
               f"({r.get('start_time', '')} – {r.get('end_time', '')})"
    if source == "sms":
        return f"SMS {r.get('message_type', '')} {r.get('contactName', '')}: " \
               f"{r.get('message_content', '')}"
    if source == "call":
        return f"Call {'outgoing' if str(r.get('direction')) == '1' else 'incoming'} " \
               f"{r.get('contactName', '')} {r.get('phoneNumber', '')} " \
               f"{r.get('call_result', '')} {r.get('datetime', '')} – {r.get('datetime_end', '')}"
    if source == "photo":
        tags = r.get("imageTag") or []
        tag_text = ", ".join(map(str, tags)) if isinstance(tags, list) else str(tags)
        return f"Photo {r.get('title', '')}: {r.get('caption', '')} " \
               f"@ {_location(r.get('location'))} [{tag_text}] {r.get('ocrText') or ''}".strip()
    if source == "push":
        return f"{r.get('source', '')}: {r.get('title', '')}. {r.get('content', '')}"
    if source == "note":
        return f"{r.get('title', '')}. {r.get('content', '')}"
    if source == "agent_chat":
        turns = []
        for turn in (r.get("conversation") or {}).values():
            for role in ("user", "assistant"):
                if isinstance(turn, dict) and isinstance(turn.get(role), dict):
                    turns.append(f"{role}: {turn[role].get('content', '')}")
        return "\n".join(turns)
    return json.dumps({k: v for k, v in r.items() if k not in HIDDEN_FIELDS},
                      ensure_ascii=False)


def _phone_records(lang: str, person: str) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(source, its records) for each source file the person's phone holds."""
    root = lifebench_dir(lang, person) / "phone_data"
    for source in LIFEBENCH_SOURCES:
        path = root / f"{source}.json"
        if path.exists():
            yield source, json.loads(path.read_text())


def lifebench_observations(lang: str, *, person: str = PERSON, user: str | None = None
                           ) -> Iterator[dict[str, Any]]:
    """Every record of every source of ``person`` as an observation JSON object, recorded
    by ``user`` (default: the person). A source the person's phone lacks is skipped, and
    so is a record with no usable time (counted on stderr)."""
    for source, records in _phone_records(lang, person):
        seen: dict[str, int] = {}
        repeats: dict[tuple[str, str], str] = {}
        untimed = 0
        for record in records:
            try:
                ts = _ts(record)
            except ValueError:
                untimed += 1
                continue
            pid = str(record.get("phone_id"))
            # a phone id names several records at times; an exact repeat is the same one
            content = json.dumps(record, ensure_ascii=False, sort_keys=True)
            if (pid, content) not in repeats:
                seen[pid] = seen.get(pid, 0) + 1
                repeats[(pid, content)] = pid if seen[pid] == 1 else f"{pid}#{seen[pid]}"
            external_id = repeats[(pid, content)]
            text = render_lifebench(source, record)[:60_000]
            meta = {k: v for k, v in record.items()
                    if k not in HIDDEN_FIELDS and k not in ("conversation",)}
            yield {"source": source, "external_id": external_id, "user": user or person,
                   "device": "phone", "ts": ts, "text": text,
                   "meta": json.loads(json.dumps(meta, ensure_ascii=False)[:60_000])
                   if len(json.dumps(meta, ensure_ascii=False)) < 60_000 else {},
                   "visibility": "household"}
        if untimed:
            print(f"{person} ({lang}) {source}: {untimed} records without a usable time "
                  "left out", file=sys.stderr)


def lifebench_event_labels(lang: str, person: str = PERSON) -> dict[tuple[str, str], str]:
    """(source, external_id) → event_id: fusion ground truth, for scoring only."""
    labels: dict[tuple[str, str], str] = {}
    for source, records in _phone_records(lang, person):
        for record in records:
            if "event_id" in record:
                labels.setdefault((source, str(record.get("phone_id"))), str(record["event_id"]))
    return labels


def lifebench_questions(lang: str, *, person: str = PERSON, user: str | None = None
                        ) -> Iterator[dict[str, Any]]:
    """The person's questions, asked by ``user`` (default: the person), with gold evidence
    as (source, external_id) pairs; ``now`` from ask_time."""
    path = lifebench_dir(lang, person) / "QA" / "QA_clean.json"
    for i, q in enumerate(json.loads(path.read_text())):
        text = question = q["question"]
        if q.get("options"):
            text += " " + " ".join(f"{o['option']}. {o['content']}" for o in q["options"])
        evidence = []
        for item in q.get("evidence") or []:
            pid = item.get("id", item.get("phone_id"))
            if item.get("type") and pid is not None:
                evidence.append([item["type"], str(pid)])
        ask = q.get("ask_time")
        now = f"{ask}-28T23:59:59" if ask and len(ask) == 7 else ask
        yield {"id": f"lb-{lang}-{i}", "text": text, "viewer": user or person, "now": now,
               "category": q.get("question_type", ""), "evidence": evidence,
               "answer": q.get("answer", ""), "question": question,
               "options": [str(o["option"]) for o in q.get("options") or []],
               "choices": {str(o["option"]): str(o["content"]) for o in q.get("options") or []},
               "score_points": [(str(p.get("description", "")), float(p.get("score") or 1))
                                for p in q.get("score_points") or []]}


_SESSION_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*(am|pm) on (\d{1,2}) (\w+),? (\d{4})", re.I)
_EVIDENCE = re.compile(r"D(\d+):(\d+)")


def locomo_date(text: str) -> str:
    """'1:56 pm on 8 May, 2023' → ISO-8601."""
    m = _SESSION_DATE.search(text)
    if not m:
        raise ValueError(f"unparseable LoCoMo date {text!r}")
    hour, minute, ampm, day, month, year = m.groups()
    h = int(hour) % 12 + (12 if ampm.lower() == "pm" else 0)
    dt = datetime.strptime(f"{day} {month} {year} {h}:{minute}", "%d %B %Y %H:%M")
    return dt.isoformat()


def normalise_evidence(ids: list[str]) -> list[str]:
    """Fix malformed LoCoMo evidence ids ('D8:6; D9:17', 'D:11:26', 'D30:05', 'D')."""
    out: list[str] = []
    for raw in ids:
        for m in _EVIDENCE.finditer(raw.replace("D:", "D")):
            out.append(f"D{int(m.group(1))}:{int(m.group(2))}")
    return list(dict.fromkeys(out))


def locomo_conversations() -> list[dict[str, Any]]:
    """The raw LoCoMo file."""
    data: list[dict[str, Any]] = json.loads((DATA / "locomo" / "locomo10.json").read_text())
    return data


def locomo_observations(conv: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every turn of one conversation; the user is the speaker."""
    c = conv["conversation"]
    n = 1
    while f"session_{n}" in c:
        base = datetime.fromisoformat(locomo_date(c[f"session_{n}_date_time"]))
        for t, turn in enumerate(c[f"session_{n}"]):
            text = turn["text"]
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            ts = base.replace(second=min(59, t))
            yield {"source": "chat", "external_id": turn["dia_id"], "user": turn["speaker"],
                   "device": "phone", "ts": ts.isoformat(), "text": text, "meta": {},
                   "visibility": "household"}
        n += 1


def locomo_questions(conv: dict[str, Any], index: int) -> Iterator[dict[str, Any]]:
    """Questions of one conversation with normalised evidence turn ids."""
    viewer = conv["conversation"]["speaker_a"]
    categories = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
                  5: "adversarial"}
    for i, q in enumerate(conv["qa"]):
        yield {"id": f"locomo-{index}-{i}", "text": q["question"], "viewer": viewer,
               "now": None, "category": categories.get(q.get("category"), "?"),
               "evidence": [["chat", e] for e in normalise_evidence(q.get("evidence", []))],
               "answer": str(q.get("answer", q.get("adversarial_answer", "")))}
