"""Scene-to-Sensor generation: a household's scenes on a timeline, rendered into
source-tagged observations with noise, and reviewed questions with checklists.

Deterministic for a seed. The ground truth (scenes, their observations and causal
links) is written beside the observations and never ingested.
"""

from __future__ import annotations

import bisect
import random
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import date, datetime, time, timedelta
from functools import partial
from typing import Any

from .model import CATEGORIES, Draft, QuestionDraft, Scene
from .scenes import IDENTITY, TEMPLATES
from .text import contains_item, day_text, normalise

USERS = ("ana", "ben", "mia", "leo")
CHATTER_EN = [("Good morning! Weather today: {n}°C and cloudy", -5, 35),
              ("Step count today: {n:,}", 800, 18000), ("Your phone storage is {n}% full", 50, 99),
              ("lol that meme 😂 #{n}", 1, 999), ("News: city marathon draws {n:,} runners",
                                                  5000, 40000),
              ("Battery at {n}%, connect a charger", 3, 20),
              ("Reminder: drink water ({n} ml so far)", 200, 2500),
              ("Playlist updated: {n} new songs", 2, 40)]
CHATTER_ZH = [("早上好！今天气温{n}°C，多云", -5, 35), ("今日步数：{n}", 800, 18000),
              ("手机存储已用{n}%", 50, 99), ("哈哈哈这个表情包 #{n}", 1, 999),
              ("新闻：城市马拉松吸引{n}名跑者", 5000, 40000), ("电量剩余{n}%，请连接充电器", 3, 20),
              ("提醒：今天已喝水{n}毫升", 200, 2500)]
DEVICES = {"calendar": "laptop", "email": "laptop", "push": "phone", "chat": "phone",
           "sms": "phone", "note": "phone", "payment": "phone", "call": "phone"}


@dataclass(frozen=True)
class GenConfig:
    """Generator knobs (rates are per scene, chatter per observation)."""

    seed: int = 7
    size: int = 2000
    users: int = 3
    questions: int = 150
    zh_rate: float = 0.3
    distractor_rate: float = 0.35
    conflict_rate: float = 0.6
    chatter_rate: float = 0.25
    start: date = date(2025, 1, 6)

    def __post_init__(self) -> None:
        if not 2 <= self.users <= len(USERS):
            raise ValueError(f"users must be 2..{len(USERS)}")
        if self.size < 50:
            raise ValueError("size must be at least 50 observations")
        for name in ("zh_rate", "distractor_rate", "conflict_rate", "chatter_rate"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in [0, 1)")


@dataclass
class Generated:
    """Observations, questions and ground truth, all as JSON-ready dicts."""

    observations: list[dict[str, Any]]
    questions: list[dict[str, Any]]
    scenes: list[dict[str, Any]]
    rejected: list[dict[str, Any]] = field(default_factory=list)


def visible(viewer: str, draft: Draft) -> bool:
    """Whether ``viewer`` may see the draft (the engine's visibility rule)."""
    if draft.visibility == "household" or draft.user == viewer:
        return True
    return isinstance(draft.visibility, list) and viewer in draft.visibility


def content(draft: Draft) -> str:
    """What a reader of the record sees: its author and its text."""
    return f"{draft.user}: {draft.text}"


def answers(question: QuestionDraft, drafts: list[Draft]) -> bool:
    """Whether these observations state every checklist item of the question."""
    text = "\n".join(content(d) for d in drafts)
    return all(contains_item(text, item) for item in question.checklist)


def review(scene: Scene, question: QuestionDraft, distractors: list[Scene],
           holding: _Holding | None = None) -> str | None:
    """Why the question must be rejected, or None when it is sound: evidence the asker may
    not see, a checklist item the evidence does not state, or a distractor (another scene
    with the same identity) that states every item too. ``holding`` indexes
    ``distractors``' texts (:class:`_Holding`); pass one per distractor list when
    reviewing many questions."""
    evidence = [scene.draft(k) for k in question.evidence]
    if not all(visible(question.viewer, d) for d in evidence):
        return "evidence the asker may not see"
    text = "\n".join(content(d) for d in evidence)
    for item in question.checklist:
        if not contains_item(text, item):
            return f"checklist item {item[0]!r} not in the evidence"
    holding = holding or _Holding(distractors)
    answering = set(range(len(distractors)))
    for item in question.checklist:
        answering &= holding.any_of(item)
    for at in sorted(answering):
        if distractors[at] is not scene:
            return f"distractor {distractors[at].id} also answers it"
    return None


class _Holding:
    """Which of a list of scenes state a checklist alias, remembered per alias: the
    questions about one look-alike group share many aliases, and a million observations
    lay look-alike groups of hundreds of scenes."""

    def __init__(self, scenes: list[Scene]) -> None:
        self.texts = [normalise("\n".join(content(d) for d in s.drafts)) for s in scenes]
        self.known: dict[str, frozenset[int]] = {}

    def any_of(self, aliases: list[str]) -> set[int]:
        """The positions of the scenes whose text states any of these aliases."""
        out: set[int] = set()
        for alias in aliases:
            if not alias:
                continue
            folded = normalise(alias)
            if folded not in self.known:
                self.known[folded] = frozenset(
                    i for i, text in enumerate(self.texts) if folded in text)
            out |= self.known[folded]
        return out


def _chatter(rng: random.Random, users: list[str], cfg: GenConfig, days: int) -> Draft:
    lang = "zh" if rng.random() < cfg.zh_rate else "en"
    template, low, high = rng.choice(CHATTER_ZH if lang == "zh" else CHATTER_EN)
    source = rng.choice(["push", "chat", "note", "sms"])
    ts = datetime.combine(cfg.start + timedelta(days=rng.randrange(days)),
                          time(rng.randrange(7, 23), rng.randrange(60)))
    user = rng.choice(users)
    visibility: str | list[str] = rng.choice(["household", "private", "private"])
    if source == "chat":
        visibility = [rng.choice([u for u in users if u != user])]
    return Draft("chatter", source, user, DEVICES[source], ts,
                 template.format(n=rng.randint(low, high)), visibility)


def _distractor(rng: random.Random, scene: Scene, users: list[str], cfg: GenConfig,
                days: int) -> Scene:
    """A near-identical scene: same identity slots, another day and fresh details; redrawn a
    few times if it would answer one of the original's questions."""
    keep = {k: scene.slots[k] for k in IDENTITY[scene.kind] if k in scene.slots}
    template = TEMPLATES[scene.kind]
    candidate = scene
    for _ in range(5):
        offset = rng.choice([-1, 1]) * rng.randint(3, 20)
        day = scene.start.date() + timedelta(days=offset)
        if not 0 <= (day - cfg.start).days < days:
            day = scene.start.date() + timedelta(days=abs(offset))
        candidate = template(rng, users, scene.lang, day, keep, rng.random() < cfg.conflict_rate)
        if not any(answers(q, candidate.drafts) for q in scene.questions):
            break
    candidate.questions = []
    return candidate


def generate(cfg: GenConfig) -> Generated:
    """Lay scenes, distractors and chatter on a timeline until ``cfg.size`` observations."""
    rng = random.Random(cfg.seed)
    users = list(USERS[: cfg.users])
    days = max(28, min(730, cfg.size // 40))
    scenes: list[Scene] = []
    chatter: list[Draft] = []
    seen: set[tuple[str, str, datetime, str]] = set()

    def unique(drafts: list[Draft]) -> int:
        """How many of these are not exact copies of an earlier record (those are dropped)."""
        new = {(d.source, d.user, d.ts, d.text) for d in drafts} - seen
        seen.update(new)
        return len(new)

    count = 0
    kinds = sorted(TEMPLATES)
    while count < cfg.size:
        if rng.random() < cfg.chatter_rate:
            chatter.append(_chatter(rng, users, cfg, days))
            count += unique(chatter[-1:])
            continue
        kind = rng.choice(kinds)
        lang = "zh" if rng.random() < cfg.zh_rate else "en"
        day = cfg.start + timedelta(days=rng.randrange(days))
        scene = TEMPLATES[kind](rng, users, lang, day, None, rng.random() < cfg.conflict_rate)
        scene.id = f"s{len(scenes)}"
        scenes.append(scene)
        count += unique(scene.drafts)
        if rng.random() < cfg.distractor_rate:
            twin = _distractor(rng, scene, users, cfg, days)
            twin.id, twin.distractor_of = f"s{len(scenes)}", scene.id
            scenes.append(twin)
            count += unique(twin.drafts)
    return _finish(rng, cfg, scenes, chatter)


def identity(scene: Scene) -> tuple[str, str]:
    """Scenes sharing kind and identity slots are each other's distractors."""
    return scene.kind, repr([scene.slots.get(k) for k in IDENTITY[scene.kind]])


def _finish(rng: random.Random, cfg: GenConfig, scenes: list[Scene],
            chatter: list[Draft]) -> Generated:
    """Assign opaque ids in time order, review and sample the questions."""
    drafts = [d for s in scenes for d in s.drafts] + chatter
    seen: set[tuple[str, str, datetime, str]] = set()
    unique = []
    for d in sorted(drafts, key=lambda d: d.ts):
        key = (d.source, d.user, d.ts, d.text)
        if key not in seen:
            seen.add(key)
            unique.append(d)
    for i, d in enumerate(unique):
        d.external_id = f"o{i:07d}"
    kept = {id(d) for d in unique}
    alike: dict[tuple[str, str], list[Scene]] = {}
    for scene in scenes:
        alike.setdefault(identity(scene), []).append(scene)
    starts = _Starts(scenes)
    pool: dict[str, list[tuple[Scene, QuestionDraft]]] = {c: [] for c in CATEGORIES}
    for scene in scenes:
        if all(id(d) in kept for d in scene.drafts):  # else an exact duplicate took its id
            for q in scene.questions:
                pool[q.category].append((scene, q))
    for items in pool.values():
        rng.shuffle(items)
    holding: dict[tuple[str, str], _Holding] = {}
    questions: list[dict[str, Any]] = []
    rejected = []
    # Reviewed lazily, round-robin over the categories, until enough are accepted.
    while len(questions) < cfg.questions and any(pool.values()):
        for category in CATEGORIES:
            if not pool[category] or len(questions) >= cfg.questions:
                continue
            scene, q = pool[category].pop()
            group = identity(scene)
            if group not in holding:
                holding[group] = _Holding(alike[group])
            reason = review(scene, q, alike[group], holding[group])
            # asked before the next scene it fits as well; failing room for that, naming
            # its day, and asked before the next look-alike
            asked = _asked(rng, scene, starts.next_start(scene, partial(fits, q.text, scene)))
            if asked is None:
                q = replace(q, text=dated(q, scene))
                asked = _asked(rng, scene, starts.next_start(scene, partial(_alike, scene)))
            if asked is None:
                reason = reason or "a look-alike scene began before it could be asked"
                asked = scene.end + timedelta(days=1)
            row = {"text": q.text, "viewer": q.viewer,
                   "now": asked.isoformat(timespec="minutes"),
                   "category": q.category, "answer": q.answer, "checklist": q.checklist,
                   "evidence": [[scene.draft(k).source, scene.draft(k).external_id]
                                for k in q.evidence],
                   "scene": scene.id, "lang": scene.lang, "slot": q.slot}
            if reason is None:
                questions.append(row)
            else:
                rejected.append({**row, "reason": reason})
    questions.sort(key=lambda q: (q["now"], q["scene"], q["category"]))
    for i, asked_row in enumerate(questions):
        asked_row["id"] = f"gen-{i}"
    truth = [{"id": s.id, "kind": s.kind, "lang": s.lang, "distractor_of": s.distractor_of,
              "observations": [d.external_id for d in s.drafts],
              "roles": {d.key: d.external_id for d in s.drafts},
              "links": [[s.draft(a).external_id, s.draft(b).external_id, kind]
                        for a, b, kind in s.links],
              "slots": s.slots} for s in scenes]
    return Generated([d.to_json() for d in unique], questions, truth, rejected)


def _names(value: Any) -> list[str]:
    """The words a slot's value may be named by in a question (numbers and times left
    out): a name, a city and its Chinese name."""
    if isinstance(value, str):
        return [value] if value and not value[:1].isdigit() else []
    if isinstance(value, list):
        return [n for v in value for n in _names(v)]
    return []


def _alike(scene: Scene, other: Scene) -> bool:
    """Whether ``other`` is a look-alike of ``scene`` (:func:`identity`)."""
    return identity(other) == identity(scene)


def fits(text: str, scene: Scene, other: Scene) -> bool:
    """Whether a question about ``scene`` fits ``other`` as well: the same kind, the
    same value in every slot whose value the question names ("the meeting with Priya
    Nair": any trip to meet her), and among its people every household member it names
    ("Ben's")."""
    if other.kind != scene.kind:
        return False
    for key, value in scene.slots.items():
        if any(n in text for n in _names(value)) and other.slots.get(key) != value:
            return False
    people = {d.user for d in other.drafts}
    return all(u in people for u in USERS
               if re.search(rf"\b{u.capitalize()}\b", text))


def dated(q: QuestionDraft, scene: Scene) -> str:
    """The question naming the day of its latest evidence record ("Around Saturday 11
    January, when does Ben land in Chengdu?"), for when another scene fits it as well."""
    day = max(scene.draft(k).ts for k in q.evidence).date()
    if re.search(r"[\u4e00-\u9fff]", q.text):
        return f"{day_text(day, 'zh')}前后，{q.text}"
    return f"Around {day_text(day, 'en')}, {q.text[:1].lower()}{q.text[1:]}"


class _Starts:
    """Each kind's scenes in the order of their first record, to find the next scene a
    question fits as well without testing every scene of the kind (a million observations
    lay some 10,000 scenes of a kind)."""

    def __init__(self, scenes: list[Scene]) -> None:
        self.by_kind: dict[str, list[tuple[datetime, int, datetime, Scene]]] = {}
        for i, scene in enumerate(scenes):
            self.by_kind.setdefault(scene.kind, []).append(
                (_first(scene), i, scene.end, scene))
        self.longest: dict[str, timedelta] = {}
        for kind, laid in self.by_kind.items():
            laid.sort(key=lambda item: item[:2])
            self.longest[kind] = max(end - start for start, _, end, _ in laid)

    def next_start(self, scene: Scene, also: Callable[[Scene], bool]) -> datetime | None:
        """When the first record of the earliest other scene of its kind that ``also``
        holds for and that has not ended before ``scene`` begins was recorded; None when
        no such scene begins within :data:`ASK_WITHIN_DAYS` days after ``scene`` ends
        (the question is asked within that window anyway)."""
        first, last = _first(scene), scene.end.date()
        laid = self.by_kind[scene.kind]
        at = bisect.bisect_left(laid, first - self.longest[scene.kind], key=lambda item: item[0])
        for k in range(at, len(laid)):
            start, _, end, other = laid[k]
            if (start.date() - last).days - 1 >= ASK_WITHIN_DAYS:
                return None
            if other is not scene and end >= first and also(other):
                return start
        return None


def _first(scene: Scene) -> datetime:
    """When the scene's first observation was recorded."""
    return min(d.ts for d in scene.drafts)


ASK_WITHIN_DAYS = 42


def _asked(rng: random.Random, scene: Scene, next_start: datetime | None) -> datetime | None:
    """When a question about ``scene`` is asked: 21:00 a day to six weeks after its last
    record (a long-context window of recent records then rarely still holds the scene),
    and before the next scene the question fits as well (:func:`fits`: the next party for
    the same guest, the next flight to the same city; its first record at ``next_start``,
    from :meth:`_Starts.next_start`) begins, so that "the party" or "when does Ben land in
    Chengdu" means one scene only; None when one begins before the day after ``scene``
    ends."""
    days = ASK_WITHIN_DAYS
    if next_start is not None:
        days = min(days, (next_start.date() - scene.end.date()).days - 1)
    if days < 1:
        return None
    return (scene.end + timedelta(days=rng.randint(1, days))).replace(hour=21, minute=0)


def config_json(cfg: GenConfig) -> dict[str, Any]:
    """The knobs, JSON-ready."""
    out = asdict(cfg)
    out["start"] = cfg.start.isoformat()
    return out
