"""Sync through a folder that an existing service replicates (Syncthing, iCloud Drive,
Dropbox, Nextcloud): no server of its own.

Each device writes only its own files, under ``FOLDER/memfuse-sync/DEVICE/``: append-only
segments of the observations it ingested and of the records forgotten on it (tombstones),
each named by its number and checksum, written to a hidden temporary name and renamed when
complete. It never edits another device's files. A sync sends what is new here, then
reads every other device's segment it has not applied, checks it (a partial, damaged or
foreign file is skipped with the reason and read again at the next sync), and applies it:
its observations go through the normal ingest (the same record from two devices stays one),
its tombstones forget the record here and keep it from coming back, whatever order the
segments arrive in. A renamed conflict copy of a segment is the same segment: it is
recognised by its checksum.

Privacy: only household records are sent; a private record, or one shared with named
users, stays on the device that holds it. A memory that syncs keeps the identity (a
sha256) of each record forgotten on it, to tell the other devices.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InvalidObservation, InvalidQuery
from .records import Observation
from .store import sync as sync_sql

if TYPE_CHECKING:
    from .memory import MemFuse

FORMAT = "memfuse-sync"
VERSION = 1
ROOT = "memfuse-sync"
SEGMENT_RECORDS = 5_000
"""Observations per segment at most (a first sync of a large memory writes several)."""
DEVICE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass
class SyncReport:
    """What one sync did."""

    device: str
    sent: int = 0
    """Observations written to new segments."""
    sent_forgets: int = 0
    segments_written: list[str] = field(default_factory=list)
    segments_applied: int = 0
    received: int = 0
    """Observations of other devices new here."""
    duplicates: int = 0
    forgotten: int = 0
    """Observations forgotten here by other devices' tombstones."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(file, why) of files in the folder that were not applied."""

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "sent": self.sent, "sent_forgets": self.sent_forgets,
                "segments_written": self.segments_written,
                "segments_applied": self.segments_applied, "received": self.received,
                "duplicates": self.duplicates, "forgotten": self.forgotten,
                "skipped": [{"file": f, "why": w} for f, w in self.skipped]}


@dataclass(frozen=True)
class Segment:
    """One checked segment of another device."""

    device: str
    seq: int
    sha256: str
    observations: list[dict[str, Any]]
    forgets: list[str]


async def sync(mem: MemFuse, folder: Path, device: str | None = None) -> SyncReport:
    """Send what is new here to ``folder``, then apply what the other devices sent."""
    store = mem.engine.store
    name = _device(store.meta_get(sync_sql.DEVICE_KEY), device)
    store.meta_set(sync_sql.DEVICE_KEY, name)
    base = Path(folder).expanduser() / ROOT
    (base / name).mkdir(parents=True, exist_ok=True)
    report = SyncReport(name)
    await mem.flush()  # what is queued is stored before it is sent
    _send(mem, base / name, report)
    with store.reading() as db:
        done = sync_sql.applied(db)
    for segment in _segments(base, name, done, report):
        await _apply(mem, segment, report)
    return report


def _device(stored: str | None, asked: str | None) -> str:
    if asked is not None and not DEVICE_NAME.match(asked):
        raise InvalidQuery(f"device name {asked!r}: letters, digits, '.', '_' and '-', at "
                           "most 64")
    if stored is not None and asked is not None and asked != stored:
        raise InvalidQuery(f"this memory syncs as device {stored!r}, not {asked!r}")
    name = stored or asked
    if name is None:
        raise InvalidQuery("name this device at its first sync (--device NAME)")
    return name


def _send(mem: MemFuse, mine: Path, report: SyncReport) -> None:
    """Write this device's new observations and tombstones as segments."""
    store = mem.engine.store
    sent = int(store.meta_get(sync_sql.SENT_KEY) or 0)
    sent_forgets = int(store.meta_get(sync_sql.SENT_FORGOTTEN_KEY) or 0)
    with store.reading() as db:
        tombs = sync_sql.tombstones_to_send(db, sent_forgets)
    while True:
        with store.reading() as db:
            rows = sync_sql.to_send(db, sent, SEGMENT_RECORDS)
        if not rows and not tombs:
            return
        stored = store.load_observations([i for i, _ in rows])
        seq = int(store.meta_get(sync_sql.SEQ_KEY) or 1)
        path = _write_segment(mine, report.device, seq, [s.observation.to_json()
                                                        for s in stored],
                              [identity for _, identity in tombs])
        report.segments_written.append(path.name)
        report.sent += len(stored)
        report.sent_forgets += len(tombs)
        store.meta_set(sync_sql.SEQ_KEY, str(seq + 1))
        if rows:
            sent = rows[-1][0]
            store.meta_set(sync_sql.SENT_KEY, str(sent))
        if tombs:
            store.meta_set(sync_sql.SENT_FORGOTTEN_KEY, str(tombs[-1][0]))
            tombs = []


def _write_segment(mine: Path, device: str, seq: int, observations: list[dict[str, Any]],
                   forgets: list[str]) -> Path:
    """One segment file, complete or not at all (a temporary name, renamed)."""
    body = "".join(json.dumps({"observe": o}, ensure_ascii=False, sort_keys=True) + "\n"
                   for o in observations)
    body += "".join(json.dumps({"forget": i}) + "\n" for i in forgets)
    raw = body.encode("utf-8")
    sha = hashlib.sha256(raw).hexdigest()
    header = json.dumps({"format": FORMAT, "version": VERSION, "device": device, "seq": seq,
                         "lines": len(observations) + len(forgets), "sha256": sha})
    path = mine / f"{seq:06d}-{sha[:16]}.jsonl"
    tmp = mine / f".{path.name}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(header.encode() + b"\n" + raw)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def _segments(base: Path, mine: str, done: set[str], report: SyncReport) -> list[Segment]:
    """Every other device's checked segment not applied yet, by device and number."""
    found: dict[str, Segment] = {}
    for folder in sorted(p for p in base.iterdir() if p.is_dir() and p.name != mine):
        for path in sorted(folder.iterdir()):
            if path.name.startswith(".") or not path.is_file():
                continue  # a segment still being written, or the replicator's own files
            try:
                segment = _read_segment(path, folder.name)
            except ValueError as exc:
                report.skipped.append((str(path.relative_to(base)), str(exc)))
                continue
            if segment.sha256 not in done:
                found.setdefault(segment.sha256, segment)  # a conflict copy is the same
    return sorted(found.values(), key=lambda s: (s.device, s.seq))


def _read_segment(path: Path, folder_device: str) -> Segment:
    """A segment file checked whole: its header, its checksum, its lines."""
    raw = path.read_bytes()
    head, newline, body = raw.partition(b"\n")
    try:
        header = json.loads(head)
    except ValueError as exc:
        raise ValueError("not a segment (no header)") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError("not a segment (no header)")
    if header.get("version") != VERSION:
        raise ValueError(f"segment version {header.get('version')} (this reads {VERSION})")
    if header.get("device") != folder_device:
        raise ValueError(f"a segment of {header.get('device')!r} in {folder_device!r}'s folder")
    if not newline or hashlib.sha256(body).hexdigest() != header.get("sha256"):
        raise ValueError("incomplete or damaged (checksum differs)")
    observations, forgets = [], []
    for line in body.decode("utf-8").splitlines():
        item = json.loads(line)
        if "observe" in item:
            observations.append(item["observe"])
        elif "forget" in item:
            forgets.append(str(item["forget"]))
    if len(observations) + len(forgets) != header.get("lines"):
        raise ValueError("line count differs from the header")
    return Segment(folder_device, int(header["seq"]), str(header["sha256"]), observations,
                   forgets)


async def _apply(mem: MemFuse, segment: Segment, report: SyncReport) -> None:
    """A segment's tombstones, then its observations not forgotten, then mark it."""
    store = mem.engine.store
    if segment.forgets:
        with store.atomic() as db:
            sync_sql.add_tombstones(db, segment.forgets, segment.device)
        with store.reading() as db:
            ids = sync_sql.observations_with(db, segment.forgets)
        if ids:
            report.forgotten += mem.forget(observation=ids).observations
    items: list[Observation] = []
    for obj in segment.observations:
        try:
            items.append(Observation.from_json(obj))
        except InvalidObservation as exc:
            report.skipped.append((f"{segment.device}/{segment.seq:06d}", str(exc)))
    names = [o.identity for o in items]
    with store.reading() as db:
        gone = sync_sql.forgotten(db, names)
    keep = [o for o, i in zip(items, names, strict=True) if i not in gone]
    with store.atomic() as db:
        sync_sql.mark_received(db, [i for i in names if i not in gone])
    for result in await mem.ingest_many(keep):
        if result.status == "accepted":
            report.received += 1
        else:
            report.duplicates += 1
    await mem.flush()
    with store.atomic() as db:
        sync_sql.mark_applied(db, segment.sha256, segment.device, segment.seq)
    report.segments_applied += 1
