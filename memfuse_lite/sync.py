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

Privacy (:mod:`memfuse_lite.sync_keys`): household records go to every device, sealed
with the household key when the devices hold one (a device holding it applies no segment
that is not sealed with it). A record only some users may see (private, or shared with
named users) goes only to the devices of those users whose key this device holds, sealed
with that key; without such a key it stays on the device that holds it. A memory that
syncs keeps the identity (a sha256) of each record forgotten on it, to tell the other
devices.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InvalidObservation, InvalidQuery
from .records import Observation
from .store import sync as sync_sql
from .sync_keys import HOUSEHOLD, USER_PREFIX, SyncKey

if TYPE_CHECKING:
    from .memory import MemFuse
    from .store.sqlite import Store

FORMAT = "memfuse-sync"
VERSION = 1
ROOT = "memfuse-sync"
SEGMENT_RECORDS = 5_000
"""Observations per segment at most (a first sync of a large memory writes several)."""
DEVICE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
HEADER_BYTES = 4096
"""A segment's header line is at most this long (it is read before the body)."""


@dataclass
class SyncReport:
    """What one sync did."""

    device: str
    sent: int = 0
    """Observations written to new segments (a record sent to two groups counts twice)."""
    sent_forgets: int = 0
    segments_written: list[str] = field(default_factory=list)
    segments_applied: int = 0
    received: int = 0
    """Observations of other devices new here."""
    duplicates: int = 0
    forgotten: int = 0
    """Observations forgotten here by other devices' tombstones."""
    not_for_this_device: int = 0
    """Segments sealed for a group whose key this device does not hold."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(file, why) of files in the folder that were not applied."""

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "sent": self.sent, "sent_forgets": self.sent_forgets,
                "segments_written": self.segments_written,
                "segments_applied": self.segments_applied, "received": self.received,
                "duplicates": self.duplicates, "forgotten": self.forgotten,
                "not_for_this_device": self.not_for_this_device,
                "skipped": [{"file": f, "why": w} for f, w in self.skipped]}


@dataclass(frozen=True)
class Segment:
    """One checked segment of another device."""

    device: str
    seq: int
    sha256: str
    observations: list[dict[str, Any]]
    forgets: list[str]


async def sync(mem: MemFuse, folder: Path, device: str | None = None,
               keys: Sequence[SyncKey] = ()) -> SyncReport:
    """Send what is new here to ``folder``, then apply what the other devices sent."""
    held = _keys(keys)
    store = mem.engine.store
    name = _device(store.meta_get(sync_sql.DEVICE_KEY), device)
    store.meta_set(sync_sql.DEVICE_KEY, name)
    base = Path(folder).expanduser() / ROOT
    (base / name).mkdir(parents=True, exist_ok=True)
    report = SyncReport(name)
    await mem.flush()  # what is queued is stored before it is sent
    _send(mem, base / name, held, report)
    with store.reading() as db:
        done = sync_sql.applied(db)
    for segment in _segments(base, name, done, held, report):
        await _apply(mem, segment, report)
    return report


def _keys(keys: Sequence[SyncKey]) -> dict[str, SyncKey]:
    held: dict[str, SyncKey] = {}
    for key in keys:
        if key.group in held and held[key.group] != key:
            raise InvalidQuery(f"two different keys for {key.group}")
        held[key.group] = key
    return held


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


def _send(mem: MemFuse, mine: Path, held: dict[str, SyncKey], report: SyncReport) -> None:
    """Write this device's new observations and tombstones as segments: the household's,
    then each person's whose key this device holds."""
    store = mem.engine.store
    groups = [HOUSEHOLD, *sorted(g for g in held if g != HOUSEHOLD)]
    cursors = {g: sync_sql.SENT_KEY if g == HOUSEHOLD else sync_sql.SENT_GROUP_KEY.format(
        group=g) for g in groups}
    _restart_where_changed(store, mine, held, cursors)
    sent_forgets = int(store.meta_get(sync_sql.SENT_FORGOTTEN_KEY) or 0)
    with store.reading() as db:
        tombs = sync_sql.tombstones_to_send(db, sent_forgets)
    for group in groups:
        cursor = cursors[group]
        sent = int(store.meta_get(cursor) or 0)
        while True:
            with store.reading() as db:
                rows = (sync_sql.to_send(db, sent, SEGMENT_RECORDS) if group == HOUSEHOLD
                        else sync_sql.to_send_to(db, group[len(USER_PREFIX):], sent,
                                                 SEGMENT_RECORDS))
            if not rows and not tombs:
                break
            stored = store.load_observations([i for i, _ in rows])
            seq = int(store.meta_get(sync_sql.SEQ_KEY) or 1)
            path = _write_segment(mine, report.device, seq, group, held.get(group),
                                  [s.observation.to_json() for s in stored],
                                  [identity for _, identity in tombs])
            report.segments_written.append(path.name)
            report.sent += len(stored)
            report.sent_forgets += len(tombs)
            store.meta_set(sync_sql.SEQ_KEY, str(seq + 1))
            if rows:
                sent = rows[-1][0]
                store.meta_set(cursor, str(sent))
            if tombs:  # tombstones (identities only) travel with the household's records
                store.meta_set(sync_sql.SENT_FORGOTTEN_KEY, str(tombs[-1][0]))
                tombs = []


def _restart_where_changed(store: Store, mine: Path, held: dict[str, SyncKey],
                           cursors: dict[str, str]) -> None:
    """Send a group's records again from the start when it is sealed with another key than
    last time (or first sealed), and everything when the folder is another one: what was
    sent before is unreadable to the devices holding the new key, or not there at all."""
    folder = str(mine.resolve())
    last = json.loads(store.meta_get(sync_sql.SENT_FOR_KEY) or "{}")
    if not last and store.meta_get(sync_sql.SENT_KEY) is not None:
        last = {"folder": folder, HOUSEHOLD: None}  # sent before keys existed: unsealed
    now = {"folder": folder, **{g: held[g].key_id if g in held else None for g in cursors}}
    if last.get(HOUSEHOLD) and now[HOUSEHOLD] is None and last.get("folder") == folder:
        raise InvalidQuery(f"this device seals its segments with a household key (id "
                           f"{last[HOUSEHOLD]}): give it (--key FILE); without it the "
                           "household's records would be sent again unsealed")
    for group, cursor in cursors.items():
        if last.get("folder") != folder or last.get(group, "") != now[group]:
            store.meta_set(cursor, "0")
            if group == HOUSEHOLD:
                store.meta_set(sync_sql.SENT_FORGOTTEN_KEY, "0")
            _remove_superseded(mine, group, now[group])
    store.meta_set(sync_sql.SENT_FOR_KEY, json.dumps({**last, **now}, sort_keys=True))


def _remove_superseded(mine: Path, group: str, key_id: str | None) -> None:
    """Remove this device's own segments of ``group`` sealed otherwise than with ``key_id``
    (or not sealed): their records are being sent again, and an older form left in the
    folder would keep them readable to whoever holds the folder but not the new key."""
    for path in mine.glob("*.jsonl"):
        try:
            with open(path, "rb") as f:
                header = _header(f.readline(HEADER_BYTES), mine.name)
        except (OSError, ValueError):
            continue
        if header.get("group", HOUSEHOLD) == group and header.get("key_id") != key_id:
            path.unlink(missing_ok=True)


def _bound(device: str, seq: int, group: str) -> bytes:
    """What a sealed segment's key also vouches for: who wrote it, its number, its group."""
    return json.dumps({"device": device, "group": group, "seq": seq},
                      sort_keys=True).encode()


def _write_segment(mine: Path, device: str, seq: int, group: str, key: SyncKey | None,
                   observations: list[dict[str, Any]], forgets: list[str]) -> Path:
    """One segment file, complete or not at all (a temporary name, renamed)."""
    body = "".join(json.dumps({"observe": o}, ensure_ascii=False, sort_keys=True) + "\n"
                   for o in observations)
    body += "".join(json.dumps({"forget": i}) + "\n" for i in forgets)
    raw = body.encode("utf-8")
    header: dict[str, Any] = {"format": FORMAT, "version": VERSION, "device": device,
                              "seq": seq, "group": group,
                              "lines": len(observations) + len(forgets)}
    if key is not None:
        raw = key.seal(raw, _bound(device, seq, group))
        header |= {"sealed": "aes-256-gcm", "key_id": key.key_id}
    elif group != HOUSEHOLD:
        raise AssertionError("a person's records are only ever written sealed")
    sha = hashlib.sha256(raw).hexdigest()
    header["sha256"] = sha
    path = mine / f"{seq:06d}-{sha[:16]}.jsonl"
    tmp = mine / f".{path.name}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(json.dumps(header).encode() + b"\n" + raw)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def _segments(base: Path, mine: str, done: set[str], held: dict[str, SyncKey],
              report: SyncReport) -> list[Segment]:
    """Every other device's checked segment not applied yet, by device and number."""
    found: dict[str, Segment] = {}
    not_held: set[str] = set()
    for folder in sorted(p for p in base.iterdir() if p.is_dir() and p.name != mine):
        for path in sorted(folder.iterdir()):
            if path.name.startswith(".") or not path.is_file():
                continue  # a segment still being written, or the replicator's own files
            try:
                with open(path, "rb") as f:
                    header = _header(f.readline(HEADER_BYTES), folder.name)
                    if header["sha256"] in done or header["sha256"] in found:
                        continue  # applied, or a conflict copy of one read already
                    if header.get("sealed") is not None and \
                            header.get("group", HOUSEHOLD) not in held:
                        not_held.add(header["sha256"])  # its body is not even read
                        continue
                    segment = _read_body(header, f.read(), held)
            except (OSError, ValueError) as exc:
                report.skipped.append((str(path.relative_to(base)), str(exc)))
                continue
            found[segment.sha256] = segment
    report.not_for_this_device = len(not_held)
    return sorted(found.values(), key=lambda s: (s.device, s.seq))


def _header(line: bytes, folder_device: str) -> dict[str, Any]:
    """A segment's first line, checked."""
    try:
        header = json.loads(line)
    except ValueError as exc:
        raise ValueError("not a segment (no header)") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError("not a segment (no header)")
    if header.get("version") != VERSION:
        raise ValueError(f"segment version {header.get('version')} (this reads {VERSION})")
    if header.get("device") != folder_device:
        raise ValueError(f"a segment of {header.get('device')!r} in {folder_device!r}'s folder")
    if not line.endswith(b"\n") or not isinstance(header.get("sha256"), str):
        raise ValueError("incomplete or damaged (checksum differs)")
    return header


def _read_body(header: dict[str, Any], raw: bytes, held: dict[str, SyncKey]) -> Segment:
    """A segment's body checked whole: its checksum, its seal, its lines."""
    if hashlib.sha256(raw).hexdigest() != header["sha256"]:
        raise ValueError("incomplete or damaged (checksum differs)")
    group = str(header.get("group", HOUSEHOLD))
    key = held.get(group)
    if header.get("sealed") is not None:
        if key is None or header.get("key_id") != key.key_id:
            raise ValueError(f"sealed with another key for {group} than this device holds")
        raw = key.open(raw, _bound(header["device"], int(header["seq"]), group))
    elif group != HOUSEHOLD:
        raise ValueError(f"records of {group} not sealed (only ever written sealed)")
    elif key is not None:
        raise ValueError("not sealed, and this household's segments are")
    observations, forgets = [], []
    for line in raw.decode("utf-8").splitlines():
        item = json.loads(line)
        if "observe" in item:
            observations.append(item["observe"])
        elif "forget" in item:
            forgets.append(str(item["forget"]))
    if len(observations) + len(forgets) != header.get("lines"):
        raise ValueError("line count differs from the header")
    return Segment(str(header["device"]), int(header["seq"]), str(header["sha256"]),
                   observations, forgets)


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
