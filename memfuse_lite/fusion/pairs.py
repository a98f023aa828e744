"""The learned pair scorer: is an earlier event part of the same episode as a new one?

Features are generic (no source's field names): the rare words both texts share
(idf-weighted, rarity counted over earlier events), shared people and place, how far apart
they were recorded, how close one's event time is to the other's, whether they come from
the same user or app, whether both name different people, and how the candidate's cosine,
shared words and recording time compare with the event's other candidates. A logistic
model (over those features and a few products of two of them) turns them into a
probability; its weights are fitted offline by
``python3 -m bench fusion-fit`` on labelled episodes and shipped as ``pair_model.json``
(inference is a dot product).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from ..config import FusionConfig
from ..errors import InvalidConfig
from .model import EventView
from .terms import idf

FEATURES = ("bias", "rare_share", "term_jaccard", "rare_terms", "people", "place",
            "log_gap_hours", "within_hour", "within_day", "log_event_time_gap",
            "event_time_close", "same_user", "same_source", "name_conflict", "update_cue",
            "rule_overlap", "cosine_below_best", "cosine_z", "rare_below_best", "rare_z",
            "gap_beyond_nearest", "most_similar")
"""Pair features, then features relative to the event's other candidates. Raw cosine is
left out on purpose: its scale differs between languages and texts (Chinese records sit
closer together under e5 than English ones), while how a candidate ranks against the
others recorded around the same time carries over. The rule score comes in without its
cosine part for the same reason (``rule_overlap``)."""

_COS, _RARE, _GAP = 0, 2, 7
"""Where cosine, rare-word share and log gap sit in :func:`pair_features`' vector."""


@dataclass(frozen=True, slots=True)
class NewEvent:
    """A new event's side of all its pairs, worked out once: the idf of each of its terms
    (``df``: how many events before it hold each; every one of its terms is there) and
    their total."""

    event: EventView
    weights: dict[str, float]
    df: dict[str, int]
    mass: float

    @classmethod
    def of(cls, e: EventView, df: dict[str, int]) -> NewEvent:
        weights = {t: idf(n, e.id) for t, n in df.items()}
        return cls(e, weights, df, sum(weights.values()) or 1.0)


def pair_features(new: NewEvent, c: EventView, terms_c: frozenset[str], rule: float,
                  cos: float) -> list[float]:
    """The pair's own features of a new event against earlier candidate ``c`` (``rule``:
    the rule scorer's score of the pair without its cosine part, which knows shared
    entities, reschedules and updates; ``cos``:
    their cosine, the first value, which :func:`candidate_features` turns into relative
    features)."""
    e, weights, df = new.event, new.weights, new.df
    shared = terms_c.intersection(weights)
    union = len(weights) + len(terms_c) - len(shared) or 1
    people = len(e.actors & c.people) + len(c.actors & e.people)
    place = bool(e.place and c.place and (e.place in c.place or c.place in e.place))
    gap_h = abs(e.ts - c.ts) / 3600.0
    event_gaps = []
    if e.start is not None:
        event_gaps += [abs(e.start - c.ts)] + ([abs(e.start - c.start)]
                                            if c.start is not None else [])
    if c.start is not None:
        event_gaps.append(abs(c.start - e.ts))
    event_h = min(event_gaps) / 3600.0 if event_gaps else None
    return [cos, 1.0, sum(weights[t] for t in shared) / new.mass,
            len(shared) / union, min(sum(1 for t in shared if df.get(t, 0) <= 5), 3) / 3.0,
            min(people, 2) / 2.0, float(place), math.log1p(gap_h) / 5.0, float(gap_h <= 1.0),
            float(gap_h <= 24.0), math.log1p(event_h) / 5.0 if event_h is not None else 1.0,
            float(event_h is not None and event_h <= 2.0), float(e.user == c.user),
            float(e.source == c.source), float(bool(e.names and c.names
                                                    and not e.names & c.names)),
            float((e.reschedule or e.cancel) and c.start is not None), min(rule, 1.5)]


def candidate_features(pairs: list[list[float]]) -> np.ndarray:
    """Feature vectors (in :data:`FEATURES` order) of one event's candidates, from their
    :func:`pair_features`: each pair's own features, then how its cosine and rare-word
    share compare with the best and the spread among all the candidates, how much later
    or earlier than the closest candidate it was recorded, and whether it is the most
    similar one."""
    if not pairs:
        return np.zeros((0, len(FEATURES)))
    rows = np.asarray(pairs, dtype=np.float64)
    n, width = rows.shape
    out = np.empty((n, width + 5))  # the pair's own features without the cosine, then 6
    out[:, : width - 1] = rows[:, 1:]
    cos, rare, gap = rows[:, _COS], rows[:, _RARE], rows[:, _GAP]
    top = cos.max()
    for col, (values, scale, best) in enumerate(((cos, 10.0, top), (rare, 1.0, rare.max()))):
        centred = values - values.sum() / n
        spread = math.sqrt(float(centred @ centred) / n)
        out[:, width - 1 + 2 * col] = (values - best) * scale  # below the best
        out[:, width + 2 * col] = centred / (spread + 1e-3) / 3.0  # z-score, scaled
    out[:, width + 3] = gap - gap.min()
    out[:, width + 4] = cos == top
    return out


Cross = tuple[str, str]

BRIDGE = 0.9
"""The bridge probability of a model file that names none: merging two memories through
one event then needs far more than joining one of them."""


def design(rows: np.ndarray | list[list[float]], crosses: tuple[Cross, ...]) -> np.ndarray:
    """Feature rows (in :data:`FEATURES` order) with the products ``crosses`` appended."""
    rows = np.atleast_2d(np.asarray(rows, dtype=np.float64))
    if not crosses:
        return rows
    products = [rows[:, FEATURES.index(a)] * rows[:, FEATURES.index(b)] for a, b in crosses]
    return np.hstack([rows, np.column_stack(products)])


RULE_FIELDS = ("w_entity", "w_actor", "w_place", "w_complement", "w_update", "name_conflict")
"""The :class:`FusionConfig` fields that define the ``rule_overlap`` feature (the rule
score without its cosine): a model fitted under some values would read another feature
under others, so it states the values it was fitted with (``rule_settings``)."""


def rule_settings(cfg: FusionConfig) -> dict[str, float]:
    """The values of :data:`RULE_FIELDS` in ``cfg``."""
    return {name: float(getattr(cfg, name)) for name in RULE_FIELDS}


@dataclass(frozen=True)
class PairModel:
    """Logistic weights over :data:`FEATURES` and products of pairs of them (``crosses``,
    e.g. shared rare words *from the same app*, which are often a template's words), the
    probability at which to join, and the one at which a new event that scores it with
    members of several memories merges them (``bridge``)."""

    weights: np.ndarray
    threshold: float
    about: dict[str, object]
    crosses: tuple[Cross, ...] = ()
    bridge: float = BRIDGE

    _left: np.ndarray = field(init=False, repr=False, compare=False)
    _right: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        unknown = {name for pair in self.crosses for name in pair} - set(FEATURES)
        if unknown:
            raise InvalidConfig(f"pair model crosses unknown features: {sorted(unknown)}")
        if len(self.weights) != len(FEATURES) + len(self.crosses):
            raise InvalidConfig("pair model weights do not match its features and crosses")
        if not 0 < self.threshold <= 1 or not 0 < self.bridge <= 1:
            raise InvalidConfig("pair model probabilities must be above 0 and at most 1")
        # the crosses' columns, to score without building :func:`design`'s matrix
        for name, side in (("_left", 0), ("_right", 1)):
            object.__setattr__(self, name, np.asarray(
                [FEATURES.index(pair[side]) for pair in self.crosses], dtype=np.intp))

    def probabilities(self, rows: np.ndarray | list[list[float]]) -> np.ndarray:
        """P(same episode) of each feature vector (rows in :data:`FEATURES` order)."""
        if len(rows) == 0:
            return np.zeros(0)
        rows = np.atleast_2d(np.asarray(rows, dtype=np.float64))
        n = len(FEATURES)
        z = rows @ self.weights[:n]
        if self.crosses:  # = design(rows, self.crosses) @ self.weights
            z += (rows[:, self._left] * rows[:, self._right]) @ self.weights[n:]
        return 1.0 / (1.0 + np.exp(-np.clip(z, -30.0, 30.0)))

    def check(self, cfg: FusionConfig) -> None:
        """Raise :class:`InvalidConfig` unless ``cfg`` defines the features as they were
        when the model was fitted."""
        fitted = self.about.get("rule_settings")
        if not isinstance(fitted, dict):
            return  # a model fitted before models stated them
        now = rule_settings(cfg)
        changed = [f"{k}={now[k]} (fitted with {v})" for k, v in sorted(fitted.items())
                   if k in now and now[k] != float(v)]
        if changed:
            raise InvalidConfig(f"the learned pair model reads the rule score as a feature: "
                                f"{', '.join(changed)} changes it; keep the values, refit "
                                "(`python3 -m bench fusion-fit --write`), or use "
                                "scorer='rules'")

    def probability(self, features: list[float]) -> float:
        """P(same episode) of one feature vector."""
        return float(self.probabilities([features])[0])

    @classmethod
    def load(cls, path: str | Path | None = None) -> PairModel:
        """The shipped model, or one written by the fitting script."""
        if path is None:
            text = resources.files("memfuse_lite.fusion").joinpath("pair_model.json").read_text()
        else:
            text = Path(path).read_text()
        data = json.loads(text)
        if tuple(data["features"]) != FEATURES:
            raise InvalidConfig("pair model features differ from this version's: refit it with "
                             "`python3 -m bench fusion-fit`")
        crosses = tuple((str(a), str(b)) for a, b in data.get("crosses", []))
        return cls(np.asarray(data["weights"], dtype=np.float64), float(data["threshold"]),
                   {k: v for k, v in data.items()
                    if k not in ("weights", "features", "crosses", "threshold", "bridge")},
                   crosses, float(data.get("bridge", BRIDGE)))

    def to_json(self) -> str:
        """The model file's content."""
        return json.dumps({"features": list(FEATURES),
                           "crosses": [list(pair) for pair in self.crosses],
                           "weights": [round(float(w), 6) for w in self.weights],
                           "threshold": self.threshold, "bridge": self.bridge, **self.about},
                          indent=2) + "\n"
