"""What every importer shares: the import context, rejections, and the registry.

An importer reads one export file (or folder) of one real format and returns its records
as :class:`~memfuse_lite.records.Observation` objects, with an ``external_id`` that stays
the same when the same export is imported again (so re-importing dedupes), and a
:class:`Rejected` entry, with the reason, for each record it cannot use. A file that
cannot be read at all is one rejection and imports nothing: files are parsed whole
before anything from them is ingested.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

from ..clock import machine_zone, zone_of
from ..errors import InvalidObservation, MemFuseError
from ..records import Observation, Rejected, Visibility

log = logging.getLogger("memfuse_lite.importers")


class ImportFailed(MemFuseError):
    """A whole file could not be read (it is rejected; nothing from it is imported)."""


@dataclass(frozen=True)
class ImportContext:
    """Who the records belong to, and what the importer needs to read them."""

    user: str
    device: str = ""
    visibility: Visibility = "household"
    tz: tzinfo | None = None
    """The time zone of times an export gives without one (None: this machine's; ``memfuse
    import`` passes the memory's home zone, or ``--tz``)."""
    directory: Mapping[str, str] = field(default_factory=dict)
    """Normalised phone numbers and e-mail addresses → contact names (see ``contacts``)."""
    since: datetime | None = None
    """Recurring calendar events are expanded from here …"""
    until: datetime | None = None
    """… to here."""
    options: Mapping[str, str] = field(default_factory=dict)
    """What a format needs told (a CSV file's column mapping: ``--map``)."""

    @property
    def zone(self) -> tzinfo:
        """The zone times without one are read in (``tz``, else this machine's)."""
        return self.tz if self.tz is not None else zone_of(machine_zone())

    def local(self, dt: datetime) -> datetime:
        """``dt`` with a time zone: naive times are read in the context's zone."""
        return with_zone(dt, self.tz)

    def name_for(self, address: str) -> str | None:
        """The contact name for a phone number or e-mail address, if known."""
        return self.directory.get(address_key(address) or "")

    def observation(self, path: Path, where: str, *, source: str, ts: datetime, text: str,
                    external_id: str, meta: dict[str, Any]) -> Observation | Rejected:
        """An observation of this context's user, or the reason it is not one."""
        try:
            return Observation(source=source, user=self.user, ts=ts, text=text,
                               external_id=external_id, device=self.device, meta=meta,
                               visibility=self.visibility)
        except InvalidObservation as exc:
            return Rejected(str(path), where, str(exc))


def with_zone(dt: datetime, tz: tzinfo | None) -> datetime:
    """``dt`` unchanged if it has a zone, else read in ``tz`` (None: this machine's)."""
    if dt.tzinfo is not None:
        return dt
    return dt.replace(tzinfo=tz if tz is not None else zone_of(machine_zone()))


Item = Observation | Rejected
Reader = Callable[[Path, ImportContext], Iterable[Item]]
"""Reads one file or folder: its records, one at a time."""


@dataclass(frozen=True, slots=True)
class Importer:
    """One export format."""

    kind: str
    read: Reader
    help: str
    suffixes: tuple[str, ...] = ()


IMPORTERS: dict[str, Importer] = {}


def register(importer: Importer) -> None:
    """Make an importer available by its kind (``memfuse import KIND``)."""
    IMPORTERS[importer.kind] = importer


def read(kind: str, path: Path, ctx: ImportContext) -> list[Item]:
    """Every record of one file, or one rejection for the whole file (:func:`stream`, whole)."""
    return list(stream(kind, path, ctx))


def stream(kind: str, path: Path, ctx: ImportContext) -> Iterator[Item]:
    """The records of one file as its importer reads them, one at a time (an importer holds
    at most what its format needs at once: one message of an mbox, one element of an SMS
    backup). A file that cannot be read is one rejection; one whose reading fails part-way
    keeps the records read before, then one rejection for the rest."""
    if kind not in IMPORTERS:
        raise MemFuseError(f"no importer {kind!r}; choose one of {', '.join(sorted(IMPORTERS))}")
    return _records(IMPORTERS[kind], path, ctx)


def _records(importer: Importer, path: Path, ctx: ImportContext) -> Iterator[Item]:
    if not path.exists():
        yield Rejected(str(path), "", "no such file or folder")
        return
    read_so_far = 0
    try:
        for item in importer.read(path, ctx):
            read_so_far += 1
            yield item
    except ImportFailed as exc:
        rest = " (the rest of it)" if read_so_far else ""
        yield Rejected(str(path), "", f"{exc}{rest}")
    except ImportError:
        raise  # a missing extra: the caller says which
    except Exception as exc:  # a reader's own failure on an odd file costs that file only
        log.warning("the %s importer failed on %s", importer.kind, path, exc_info=True)
        rest = " (the rest of it)" if read_so_far else ""
        yield Rejected(str(path), "", f"could not be read{rest} ({type(exc).__name__}: {exc})")


def json_files(path: Path, what: str) -> Iterator[tuple[Path, Any]]:
    """(file, its decoded JSON) for one ``.json`` file, or for each under a folder (an
    export of many files: Takeout's Keep notes, a Timeline's months); a file that cannot
    be decoded comes with a :class:`Rejected` in place of its data."""
    files = [path] if path.is_file() else sorted(path.rglob("*.json"))
    if not files:
        raise ImportFailed(f"no {what} (.json files) found")
    for file in files:
        try:
            yield file, json.loads(file.read_text(encoding="utf-8-sig"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            yield file, Rejected(str(file), "", f"unreadable: {exc}")


def stable_id(*parts: object) -> str:
    """A short, stable id from the parts that make a record itself."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).hexdigest()[:24]


def address_key(address: str) -> str | None:
    """A phone number's last ten digits, or a lower-cased e-mail address (None: neither)."""
    address = address.strip()
    if "@" in address:
        return address.lower()
    digits = re.sub(r"\D", "", address)
    return digits[-10:] if len(digits) >= 5 else None
