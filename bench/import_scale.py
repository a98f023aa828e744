"""Importers on large exports: records per second and peak resident memory while reading.

    python3 -m bench import --generated [--mbox-mb 1024] [--chat-messages 100000]
                            [--sms 100000] [--telegram 100000] [--ics 50000]

Writes a generated mbox of about ``--mbox-mb`` megabytes, a WhatsApp chat of
``--chat-messages`` messages, an SMS Backup & Restore file of ``--sms`` messages, a
Telegram account export of ``--telegram`` messages and a calendar of ``--ics`` events
into a temporary folder, then reads each in a fresh process, twice: streamed (``importers.stream``,
as ``memfuse import`` reads: records taken as they come, in batches of
``cli.IMPORT_BATCH``) and whole (``importers.read``: every record held at once, the
baseline). Reported per file: records, rejected, seconds, records/s and the process's peak
RSS, goal ≤ 300 MB streamed. Nothing is ingested: this measures what an importer holds.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import peak_rss_mb, write_result

GOAL_MB = 300.0
WORDS = ("meeting dentist dinner flight parcel school invoice weekend budget garden recipe "
         "doctor train ticket birthday present holiday museum concert payment report "
         "contract lunch coffee project deadline rent insurance visit call photo").split()


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def write_mbox(path: Path, megabytes: float, rng: random.Random) -> int:
    """An mbox of about ``megabytes``: plain-text messages of 1–8 KB."""
    limit, n = megabytes * 1e6, 0
    with open(path, "w", encoding="utf-8") as f:
        while f.tell() < limit:
            n += 1
            day, minute = 1 + n % 28, n % 1440
            body = "\n".join(_sentence(rng, rng.randrange(8, 20))
                             for _ in range(rng.randrange(10, 80)))
            f.write(f"From sender{n % 97}@example.org Mon Jan {day:2d} {minute // 60:02d}:"
                    f"{minute % 60:02d}:00 2024\n"
                    f"From: Sender {n % 97} <sender{n % 97}@example.org>\n"
                    f"To: Ana <ana@example.org>\n"
                    f"Subject: {_sentence(rng, 5)}\n"
                    f"Date: Mon, {day} Jan 2024 {minute // 60:02d}:{minute % 60:02d}:00 +0000\n"
                    f"Message-ID: <m{n}@example.org>\n\n{body}\n\n")
    return n


def write_chat(path: Path, messages: int, rng: random.Random) -> int:
    """A WhatsApp export of ``messages`` messages between two people."""
    with open(path, "w", encoding="utf-8") as f:
        for n in range(messages):
            minute = n * 7
            day = 1 + (minute // 1440) % 28
            month = 1 + (minute // (1440 * 28)) % 12
            f.write(f"{day:02d}/{month:02d}/2024, {(minute // 60) % 24:02d}:{minute % 60:02d}"
                    f" - {'Ana' if n % 3 else 'Ben'}: {_sentence(rng, rng.randrange(3, 25))}\n")
    return messages


def write_sms(path: Path, messages: int, rng: random.Random) -> int:
    """An SMS Backup & Restore file of ``messages`` messages."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\n"
                f'<smses count="{messages}">\n')
        for n in range(messages):
            f.write(f'  <sms address="+1555010{n % 1000:04d}" date="{1704067200000 + n * 60000}"'
                    f' type="{1 + n % 2}" body="{_sentence(rng, rng.randrange(3, 25))}" '
                    f'contact_name="Friend {n % 1000}" />\n')
        f.write("</smses>\n")
    return messages


def write_telegram(path: Path, messages: int, rng: random.Random) -> int:
    """A Telegram account export (``result.json``) of ``messages`` messages in 20 chats."""
    chats = 20
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"about": "generated", "personal_information": {"first_name": "Ana"}, '
                '"chats": {"about": "", "list": [')
        for c in range(chats):
            f.write(("," if c else "") + json.dumps({"name": f"Friend {c}", "type":
                                                     "personal_chat", "id": 1000 + c})[:-1]
                    + ', "messages": [')
            for n in range(c, messages, chats):
                unix = 1704067200 + n * 60
                f.write(("," if n >= chats else "") + json.dumps({
                    "id": n, "type": "message", "date_unixtime": str(unix),
                    "from": "Ana" if n % 3 else f"Friend {c}",
                    "text": _sentence(rng, rng.randrange(3, 25))}))
            f.write("]}")
        f.write("]}}")
    return messages


def write_ics(path: Path, events: int, rng: random.Random) -> int:
    """A calendar of ``events`` single events over the last year."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//generated//EN\r\n")
        for n in range(events):
            minute = n * 5
            day = 1 + (minute // 1440) % 28
            month = 1 + (minute // (1440 * 28)) % 12
            when = f"2026{month:02d}{day:02d}T{(minute // 60) % 24:02d}{minute % 60:02d}00Z"
            f.write(f"BEGIN:VEVENT\r\nUID:gen-{n}@example.org\r\nDTSTAMP:{when}\r\n"
                    f"DTSTART:{when}\r\nDURATION:PT30M\r\n"
                    f"SUMMARY:{_sentence(rng, rng.randrange(2, 6))}\r\nEND:VEVENT\r\n")
        f.write("END:VCALENDAR\r\n")
    return events


def read_in_child(kind: str, path: Path, whole: bool) -> dict[str, Any]:
    """Read one file in a fresh process; its counts, seconds and peak RSS."""
    out = subprocess.run([sys.executable, "-m", "bench.import_scale", kind, str(path),
                          "whole" if whole else "stream"], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[1])
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def child(kind: str, path: str, how: str) -> None:
    """In the child: read, count, report as one JSON line."""
    from memfuse_lite.cli import IMPORT_BATCH, _next_batch
    from memfuse_lite.clock import zone_of
    from memfuse_lite.importers import ImportContext, read, stream
    from memfuse_lite.records import Observation

    ctx = ImportContext(user="ana", device="phone", visibility="household",
                        tz=zone_of("UTC"), directory={})
    base = peak_rss_mb()
    t0 = time.perf_counter()
    records = rejected = 0
    if how == "whole":
        items = read(kind, Path(path), ctx)
        records = sum(isinstance(i, Observation) for i in items)
        rejected = len(items) - records
    else:
        it = stream(kind, Path(path), ctx)
        while batch := _next_batch(it):
            records += sum(isinstance(i, Observation) for i in batch)
            rejected += sum(not isinstance(i, Observation) for i in batch)
        assert IMPORT_BATCH > 0
    seconds = time.perf_counter() - t0
    print(json.dumps({"records": records, "rejected": rejected, "seconds": round(seconds, 2),
                      "records_per_s": round(records / seconds, 1) if seconds else None,
                      "peak_rss_mb": peak_rss_mb(), "rss_before_mb": base}))


def run(mbox_mb: float, chat_messages: int, sms: int, telegram: int, ics: int) -> None:
    """Generate, read each file both ways, print and save the table."""
    rng = random.Random(7)
    rows = []
    with tempfile.TemporaryDirectory(prefix="memfuse-import-") as tmp:
        files = []
        for kind, name, writer, size in (
                ("mail", "archive.mbox", write_mbox, mbox_mb),
                ("whatsapp", "WhatsApp Chat with Ben.txt", write_chat, chat_messages),
                ("android-sms", "sms.xml", write_sms, sms),
                ("telegram", "result.json", write_telegram, telegram),
                ("ics", "calendar.ics", write_ics, ics)):
            if not size:
                continue
            path = Path(tmp) / name
            t0 = time.perf_counter()
            written = writer(path, size, rng)  # type: ignore[operator]
            print(f"wrote {name}: {written} records, {path.stat().st_size / 1e6:.0f} MB "
                  f"in {time.perf_counter() - t0:.0f} s", flush=True)
            files.append((kind, path, written))
        for kind, path, written in files:
            for whole in (False, True):
                got = read_in_child(kind, path, whole)
                row = {"kind": kind, "file_mb": round(path.stat().st_size / 1e6, 1),
                       "written": written, "how": "whole" if whole else "streamed", **got}
                rows.append(row)
                goal = "" if whole else f" (goal ≤ {GOAL_MB:.0f} MB: " \
                    f"{'met' if got['peak_rss_mb'] <= GOAL_MB else 'NOT met'})"
                print(f"{kind:<12} {row['file_mb']:>7.0f} MB {row['how']:<9} "
                      f"{got['records']:>7} records, {got['rejected']} rejected, "
                      f"{got['records_per_s']} records/s, peak RSS {got['peak_rss_mb']} MB"
                      + goal, flush=True)
    write_result("import-scale", {
        "command": f"python3 -m bench import --generated --mbox-mb {mbox_mb} "
                   f"--chat-messages {chat_messages} --sms {sms} --telegram {telegram} "
                   f"--ics {ics}",
        "goal_peak_rss_mb": GOAL_MB, "rows": rows})


if __name__ == "__main__":
    child(*sys.argv[1:4])
