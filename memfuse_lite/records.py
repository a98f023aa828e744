"""Records: frozen, slotted dataclasses. Observations validate themselves on construction."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal

from .errors import InvalidObservation
from .sources import record_identity
from .timeutil import instant_key, parse_ts, to_iso

__all__ = [
    "AtomicEvent",
    "Edge",
    "ForgetResult",
    "FusedMemory",
    "Hit",
    "IngestResult",
    "Observation",
    "Provenance",
    "SearchResult",
    "Visibility",
    "can_see",
]

MAX_TEXT_BYTES = 64 * 1024
MAX_META_BYTES = 64 * 1024
MAX_NAME_CHARS = 256
MAX_META_DEPTH = 32
SYNTHETIC_ID = "sha256:"
"""The prefix of the external id given to a record that came without one."""

Visibility = str | tuple[str, ...]
"""``"household"`` (default), ``"private"`` (only its user) or a tuple of user names."""


def _check_name(field_name: str, value: object, *, required: bool) -> str:
    if value is None or value == "":
        if required:
            raise InvalidObservation(field_name, "is required")
        return ""
    if not isinstance(value, str):
        raise InvalidObservation(field_name, f"must be a string, not {type(value).__name__}")
    if "\x00" in value:
        raise InvalidObservation(field_name, "contains a NUL byte")
    if not value.strip():
        raise InvalidObservation(field_name, "is blank")
    if len(value) > MAX_NAME_CHARS:
        raise InvalidObservation(field_name, f"longer than {MAX_NAME_CHARS} characters")
    _check_unicode(field_name, value)
    return value


def _check_unicode(field_name: str, value: str) -> None:
    """Refuse lone surrogates: they cannot be stored as UTF-8."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidObservation(field_name, "is not valid Unicode (lone surrogate)") from exc


def _depth(value: object, limit: int) -> int:
    """Nesting depth of a JSON value, iteratively (deep inputs must not blow the stack)."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list | tuple):
            stack.extend((v, depth + 1) for v in item)
    return deepest


def _check_meta(meta: object) -> dict[str, Any]:
    if meta is None:
        return {}
    if not isinstance(meta, Mapping):
        raise InvalidObservation("meta", f"must be a JSON object, not {type(meta).__name__}")
    if _depth(meta, MAX_META_DEPTH) > MAX_META_DEPTH:
        raise InvalidObservation("meta", f"nested deeper than {MAX_META_DEPTH} levels")
    try:
        encoded = json.dumps(meta, ensure_ascii=False, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise InvalidObservation("meta", f"not JSON-serialisable: {exc}") from exc
    if "\\u0000" in encoded:
        raise InvalidObservation("meta", "contains a NUL character")
    _check_unicode("meta", encoded)
    if len(encoded.encode("utf-8")) > MAX_META_BYTES:
        raise InvalidObservation("meta", f"larger than {MAX_META_BYTES} bytes as JSON")
    decoded: dict[str, Any] = json.loads(encoded)
    return decoded


def _check_text(text: object) -> str:
    if not isinstance(text, str):
        raise InvalidObservation("text", f"must be a string, not {type(text).__name__}")
    if not text.strip():
        raise InvalidObservation("text", "is empty")
    if "\x00" in text:
        raise InvalidObservation("text", "contains a NUL byte")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidObservation("text", "is not valid Unicode (lone surrogate)") from exc
    if size > MAX_TEXT_BYTES:
        raise InvalidObservation("text", f"larger than {MAX_TEXT_BYTES} bytes")
    return text


def _check_visibility(value: object) -> Visibility:
    if value is None or value == "household":
        return "household"
    if value == "private":
        return "private"
    if isinstance(value, str):
        raise InvalidObservation(
            "visibility", f"must be 'household', 'private' or a list of users, not {value!r}"
        )
    if not isinstance(value, Sequence) or not value:
        raise InvalidObservation("visibility", "must be 'household', 'private' or a list of users")
    return tuple(sorted({_check_name("visibility", v, required=True) for v in value}))


@dataclass(frozen=True, slots=True)
class Observation:
    """One raw record from one source (an SMS, a calendar entry, a call), stored verbatim."""

    source: str
    user: str
    ts: datetime
    text: str
    external_id: str = ""
    device: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    visibility: Visibility = "household"

    def __post_init__(self) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "source", _check_name("source", self.source, required=True).strip().lower())
        setattr_(self, "user", _check_name("user", self.user, required=True).strip())
        setattr_(self, "device", _check_name("device", self.device, required=False))
        setattr_(self, "text", _check_text(self.text))
        try:
            setattr_(self, "ts", parse_ts(self.ts))
        except ValueError as exc:
            raise InvalidObservation("ts", str(exc)) from exc
        setattr_(self, "meta", _check_meta(self.meta))
        setattr_(self, "visibility", _check_visibility(self.visibility))
        external_id = self.external_id
        if isinstance(external_id, int) and not isinstance(external_id, bool):
            external_id = str(external_id)
        external_id = _check_name("external_id", external_id, required=False)
        setattr_(self, "external_id", external_id or SYNTHETIC_ID + self.identity[:32])

    @property
    def identity(self) -> str:
        """sha256 of what makes this record itself, whichever device or export it came
        from (:func:`memfuse_lite.sources.record_identity`; not its device or id)."""
        return record_identity(self.source, self.user, instant_key(self.ts), self.text,
                               self.meta)

    @property
    def has_own_id(self) -> bool:
        """Whether the record came with an id of its source (not one made from its identity)."""
        return not self.external_id.startswith(SYNTHETIC_ID)

    @property
    def audience(self) -> tuple[str, ...] | None:
        """Users allowed to see this record; None means the whole household."""
        return audience_of(self.user, self.visibility)

    def to_json(self) -> dict[str, Any]:
        """The public JSONL form."""
        return {
            "source": self.source,
            "external_id": self.external_id,
            "user": self.user,
            "device": self.device,
            "ts": to_iso(self.ts),
            "text": self.text,
            "meta": self.meta,
            "visibility": list(self.visibility)
            if isinstance(self.visibility, tuple)
            else self.visibility,
        }

    @classmethod
    def from_json(cls, obj: object) -> Observation:
        """Build from a decoded JSONL object; unknown keys are an error."""
        if not isinstance(obj, dict):
            raise InvalidObservation("line", "must be a JSON object")
        allowed = {"source", "external_id", "user", "device", "ts", "text", "meta", "visibility"}
        unknown = sorted(set(obj) - allowed)
        if unknown:
            raise InvalidObservation(unknown[0], "is not an observation field")
        for name in ("source", "user", "ts", "text"):
            if name not in obj:
                raise InvalidObservation(name, "is required")
        return cls(
            source=obj["source"],
            user=obj["user"],
            ts=obj["ts"],
            text=obj["text"],
            external_id=obj.get("external_id") or "",
            device=obj.get("device") or "",
            meta=obj.get("meta") or {},
            visibility=obj.get("visibility", "household"),
        )


def audience_of(user: str, visibility: Visibility) -> tuple[str, ...] | None:
    """The users allowed to see a record of ``user``; None means everyone in the household."""
    if visibility == "household":
        return None
    if visibility == "private":
        return (user,)
    return tuple(sorted({user, *visibility}))


def can_see(viewer: str, audience: Sequence[str] | None) -> bool:
    """Whether ``viewer`` may see a record with this audience."""
    return audience is None or viewer in audience


@dataclass(frozen=True, slots=True)
class Rejected:
    """An input record (or a whole file) that was not ingested, and why; ``where`` is a
    line number, a record's position, or empty for the whole file."""

    path: str
    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}{':' + self.where if self.where else ''}: {self.reason}"


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What happened to one ingested observation."""

    status: Literal["accepted", "duplicate"]
    observation_id: int


@dataclass(frozen=True, slots=True)
class ForgetResult:
    """What ``forget()`` deleted."""

    observations: int
    events: int
    edges: int
    fused_removed: int
    fused_updated: int
    dense_compacted: bool

    def to_json(self) -> dict[str, Any]:
        """JSON-ready counts."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a piece of memory came from: one source record."""

    observation_id: int
    source: str
    external_id: str
    user: str
    device: str
    ts: str

    def to_json(self) -> dict[str, Any]:
        """The public JSON form."""
        return {
            "observation_id": self.observation_id,
            "source": self.source,
            "external_id": self.external_id,
            "user": self.user,
            "device": self.device,
            "ts": self.ts,
        }


@dataclass(frozen=True, slots=True)
class AtomicEvent:
    """One atomic happening extracted from one or more observations (the event layer)."""

    id: int
    user: str
    source: str
    text: str
    ts: str
    event_start: str | None = None
    event_end: str | None = None
    actors: tuple[str, ...] = ()
    place: str | None = None
    entities: tuple[str, ...] = ()
    audience: tuple[str, ...] | None = None
    provenance: tuple[Provenance, ...] = ()


@dataclass(frozen=True, slots=True)
class FusedMemory:
    """One real-world episode assembled from several atomic events (the cluster layer)."""

    id: int
    member_ids: tuple[int, ...]
    start: str | None
    end: str | None
    participants: tuple[str, ...]
    sources: tuple[str, ...]
    users: tuple[str, ...]
    summary: str
    conflicts: tuple[str, ...] = ()


EdgeKind = Literal["member_of", "causal", "semantic", "same_as", "conflicts_with", "supersedes",
                   "related"]


@dataclass(frozen=True, slots=True)
class Edge:
    """A typed, directed relation in the fusion graph."""

    kind: EdgeKind
    src: int
    dst: int
    weight: float = 1.0
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Card:
    """One entry of a timeline page: a fused memory (``fused_id``), or an event in none,
    placed at ``event_id``, its newest member the viewer may see, recorded at ``epoch``."""

    fused_id: int | None
    event_id: int
    epoch: float


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved event with its score and full provenance."""

    event_id: int
    score: float
    text: str
    provenance: tuple[Provenance, ...]
    fused_id: int | None = None
    superseded_by: tuple[int, ...] = ()
    via: str = "seed"
    """How the hit was found: ``seed`` (index search) or the graph edge kind followed."""
    caused_by: tuple[int, ...] = ()
    """The records this one names as its cause ("… because my flight is delayed"), or,
    for a report of a change that names none, the news that announced the change ("your
    appointment has to be rebooked"), that the viewer may see (fused pipelines)."""

    def to_json(self) -> dict[str, Any]:
        """The public JSON form (see the CLI's query output)."""
        out: dict[str, Any] = {
            "event_id": self.event_id,
            "score": round(self.score, 6),
            "text": self.text,
            "fused_id": self.fused_id,
            "provenance": [p.to_json() for p in self.provenance],
        }
        if self.superseded_by:
            out["superseded_by"] = list(self.superseded_by)
        if self.caused_by:
            out["caused_by"] = list(self.caused_by)
        return out


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The hits of one search, best first."""

    query: str
    viewer: str
    pipeline: str
    hits: tuple[Hit, ...]
    latency_ms: float
    fused: tuple[FusedMemory, ...] = ()
    """Up to three fused memories the hits belong to (summaries as the viewer may see)."""
    rounds: int = 1
