"""The ranking stage of the ``fused`` pipeline: the first candidates that seeds and graph
expansion found are reordered by a small fitted model over generic features of each.

Each candidate is described by where the seed searches placed it (dense and BM25 ranks,
in how many lists, among a named user's own records), its place and score after seeds,
expansion and the report lifts, how it was reached (seed, memory member, likely episode
mate, causal or report edge), how close it is to the question compared with the other
candidates (cosine and shared content words, plain and weighted by rarity), whether it
matches the planner's time window (and how many days it lies outside it) and cues (an
app, a contact, a user the question names), whether the one asking recorded it, how many
other candidates share its fused memory or an edge with it, how recent it is (and, when
the question names no time, its recency among the others) and how long. Raw cosine is
only compared within one question's candidates: its scale differs between languages.
Whether a newer report replaced a candidate is no feature: a question may ask for either
report, and the pipeline lifts the replacement just above the replaced one after this
stage as before it. A logistic model turns the features into the probability that the
candidate is evidence for the question; its weights are fitted offline by
``python3 -m bench rank-fit`` on questions with evidence and shipped as
``rank_model.json`` (scoring is one dot product per candidate).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

from ..config import RetrievalConfig
from ..errors import InvalidConfig

FEATURES = (
    "bias", "fused_rr", "fused_share", "dense_rr", "bm25_rr", "bm25_share", "authored_rr",
    "list_share", "cos_below_best", "cos_z", "cos_rr", "terms_covered", "rare_covered",
    "rare_below_best", "via_member", "via_related", "via_causal", "via_report",
    "in_time", "out_of_time", "log_days_off_window", "source_cue", "contact_cue",
    "by_named_user", "own_record", "memory_mates", "edges_in_top", "newest_rr",
    "newest_unwindowed", "log_age_days", "log_length")
"""Per-candidate features, in the model's order (see the module docstring)."""

RANK_MODEL_VERSION = 1
"""Version of the feature set; a model file of another version is refused."""


@dataclass(slots=True)
class ListPlaces:
    """Where the seed searches placed one event: its best rank (from 1; 0: in none) in the
    dense and BM25 lists of the question and its rewrites, its BM25 score over that list's
    best, its best rank among a named user's own records, and how many lists held it."""

    dense: int = 0
    bm25: int = 0
    bm25_share: float = 0.0
    authored: int = 0
    lists: int = 0

    def place(self, kind: str, rank: int, share: float = 0.0) -> None:
        """Count a list of ``kind`` (dense, bm25, authored) that holds the event at
        ``rank``."""
        self.lists += 1
        best = getattr(self, kind)
        if best == 0 or rank < best:
            setattr(self, kind, rank)
        if kind == "bm25":
            self.bm25_share = max(self.bm25_share, share)


@dataclass(frozen=True, slots=True)
class Candidate:
    """What the ranking stage knows of one candidate besides the lists: its fused score
    and how it was reached, its cosine with the question, its content terms, when it
    happened (epoch seconds), its text length, its fused memory, the planner's verdicts
    (``in_time``: None when no time window was asked, ``days_off``: how many days its
    times lie outside that window; whether it comes from an app the
    question names, names a contact it names, was recorded by a user it names) and
    whether the one asking recorded it."""

    id: int
    score: float
    via: str
    cos: float
    terms: frozenset[str]
    when: float
    length: int
    memory: int | None
    in_time: bool | None
    days_off: float
    source_cue: bool
    contact_cue: bool
    by_named_user: bool
    own: bool
    neighbours: frozenset[int] = frozenset()


def _rr(rank: int) -> float:
    return 1.0 / rank if rank > 0 else 0.0


def _ranks_desc(values: np.ndarray) -> np.ndarray:
    """Rank (from 1) of each value, largest first, ties sharing the better rank."""
    order = np.argsort(-values, kind="stable")
    ranks = np.empty(len(values), dtype=np.int64)
    ranks[order] = np.arange(1, len(values) + 1)
    for i in range(1, len(order)):  # ties share the better rank
        if values[order[i]] == values[order[i - 1]]:
            ranks[order[i]] = ranks[order[i - 1]]
    return ranks


def features(candidates: Sequence[Candidate], places: dict[int, ListPlaces], lists: int,
             question_terms: dict[str, float], now: float) -> np.ndarray:
    """The feature matrix of one question's candidates (rows in candidate order, columns
    in :data:`FEATURES` order). ``question_terms``: the question's content terms with
    their idf; ``lists``: how many seed lists were searched; ``now``: when it is asked."""
    n = len(candidates)
    X = np.zeros((n, len(FEATURES)))
    if n == 0:
        return X
    col = {name: i for i, name in enumerate(FEATURES)}
    X[:, col["bias"]] = 1.0
    scores = np.array([c.score for c in candidates])
    fused_rank = _ranks_desc(scores)
    X[:, col["fused_rr"]] = 1.0 / fused_rank
    X[:, col["fused_share"]] = scores / (scores.max() or 1.0)
    cos = np.array([c.cos for c in candidates])
    X[:, col["cos_below_best"]] = cos - cos.max()
    X[:, col["cos_z"]] = (cos - cos.mean()) / (cos.std() + 1e-6)
    X[:, col["cos_rr"]] = 1.0 / _ranks_desc(cos)
    mass = sum(question_terms.values())
    covered = np.array([len(c.terms.intersection(question_terms)) / len(question_terms)
                        if question_terms else 0.0 for c in candidates])
    rare = np.array([sum(question_terms[t] for t in c.terms.intersection(question_terms))
                     / mass if mass else 0.0 for c in candidates])
    X[:, col["terms_covered"]] = covered
    X[:, col["rare_covered"]] = rare
    X[:, col["rare_below_best"]] = rare - rare.max()
    memories: dict[int, int] = {}
    for c in candidates:
        if c.memory is not None:
            memories[c.memory] = memories.get(c.memory, 0) + 1
    ids = {c.id for c in candidates}
    newest = _ranks_desc(np.array([c.when for c in candidates]))
    at = [places.get(c.id) or ListPlaces() for c in candidates]
    columns: dict[str, Sequence[float] | np.ndarray] = {
        "dense_rr": [_rr(p.dense) for p in at],
        "bm25_rr": [_rr(p.bm25) for p in at],
        "bm25_share": [p.bm25_share for p in at],
        "authored_rr": [_rr(p.authored) for p in at],
        "list_share": [p.lists / lists if lists else 0.0 for p in at],
        "via_member": [c.via == "member_of" for c in candidates],
        "via_related": [c.via == "related" for c in candidates],
        "via_causal": [c.via in ("causal", "semantic") for c in candidates],
        "via_report": [c.via in ("supersedes", "conflicts_with", "same_as")
                       for c in candidates],
        "in_time": [c.in_time is True for c in candidates],
        "out_of_time": [c.in_time is False for c in candidates],
        "source_cue": [c.source_cue for c in candidates],
        "contact_cue": [c.contact_cue for c in candidates],
        "by_named_user": [c.by_named_user for c in candidates],
        "own_record": [c.own for c in candidates],
        "memory_mates": [math.log1p(memories.get(c.memory, 1) - 1)
                         if c.memory is not None else 0.0 for c in candidates],
        "edges_in_top": [math.log1p(len(c.neighbours & ids)) for c in candidates],
        "newest_rr": 1.0 / newest,
        "newest_unwindowed": [1.0 / r if c.in_time is None else 0.0
                              for c, r in zip(candidates, newest.tolist(), strict=True)],
        "log_days_off_window": [math.log1p(c.days_off) for c in candidates],
        "log_age_days": [math.log1p(max(0.0, now - c.when) / 86_400.0) for c in candidates],
        "log_length": [math.log1p(c.length) / math.log(1000.0) for c in candidates],
    }
    for name, values in columns.items():
        X[:, col[name]] = values
    return X


@dataclass(frozen=True)
class RankModel:
    """Logistic weights over :data:`FEATURES` and what the model file says of itself
    (what it was fitted on, by which command, its cross-validated figures)."""

    weights: np.ndarray
    about: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.weights.shape != (len(FEATURES),):
            raise InvalidConfig("rank model weights do not match its features")

    def probabilities(self, X: np.ndarray) -> np.ndarray:
        """P(evidence) of each candidate (rows of :func:`features`)."""
        if len(X) == 0:
            return np.zeros(0)
        return 1.0 / (1.0 + np.exp(-np.clip(X @ self.weights, -30.0, 30.0)))

    def to_json(self) -> str:
        """The model file's content."""
        return json.dumps({"version": RANK_MODEL_VERSION, "features": list(FEATURES),
                           "weights": [round(float(w), 6) for w in self.weights],
                           **self.about}, indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str, where: str) -> RankModel:
        """Parse a model file (``where``: named in the error if it does not fit)."""
        data = json.loads(text)
        if data.get("version") != RANK_MODEL_VERSION or tuple(data["features"]) != FEATURES:
            raise InvalidConfig(f"rank model {where} was fitted on other features than this "
                                "version's: refit it with `python3 -m bench rank-fit`")
        return cls(np.asarray(data["weights"], dtype=np.float64),
                   {k: v for k, v in data.items() if k not in ("version", "features",
                                                               "weights")})


RANK_FIELDS = ("rank_depth",)
"""The :class:`RetrievalConfig` fields that shape the features (how many candidates the
stage sees, so how many share a memory or an edge): a model states the values it was
fitted with (``settings``)."""


def rank_settings(cfg: RetrievalConfig) -> dict[str, float]:
    """The values of :data:`RANK_FIELDS` in ``cfg``."""
    return {name: getattr(cfg, name) for name in RANK_FIELDS}


def check_rank_model(cfg: RetrievalConfig) -> None:
    """Raise :class:`InvalidConfig` when the ranking stage is on and ``cfg`` shapes its
    features otherwise than when its model was fitted."""
    if not cfg.use_ranker:
        return
    fitted = load_rank_model(cfg.rank_model).about.get("settings")
    if not isinstance(fitted, dict):
        return  # a model fitted before models stated them
    now = rank_settings(cfg)
    changed = [f"{k}={now[k]} (fitted with {v})" for k, v in sorted(fitted.items())
               if k in now and now[k] != v]
    if changed:
        raise InvalidConfig(f"the rank model's features depend on {', '.join(changed)}: "
                            "keep the value, refit (`python3 -m bench rank-fit --depth N "
                            "--write`), or set use_ranker=False")


@lru_cache(maxsize=8)
def load_rank_model(path: str | None = None) -> RankModel:
    """The shipped model (``path`` None), or one written by ``bench rank-fit``."""
    if path is None:
        text = resources.files("memfuse_lite.retrieve").joinpath("rank_model.json").read_text()
        return RankModel.from_json(text, "rank_model.json")
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InvalidConfig(f"cannot read rank model {path}: {exc}") from exc
    return RankModel.from_json(text, path)
