"""Typed, frozen configuration with the paper's defaults, validated on construction."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .errors import InvalidConfig

__all__ = [
    "Durability",
    "FusionConfig",
    "IndexConfig",
    "IngestConfig",
    "MemFuseConfig",
    "RetrievalConfig",
    "default_model_dir",
]

Durability = Literal["normal", "full"]


def default_model_dir() -> Path:
    """Where prepared models live: $MEMFUSE_MODEL_DIR, else the user's cache directory."""
    env = os.environ.get("MEMFUSE_MODEL_DIR")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memfuse_lite" / "models"


def _positive(name: str, value: float) -> None:
    if value <= 0:
        raise InvalidConfig(f"{name} must be > 0, got {value!r}")


@dataclass(frozen=True, slots=True)
class IngestConfig:
    """The ingestion queue: batches are cut at ``batch_size`` or after ``batch_latency_s``."""

    batch_size: int = 64
    batch_latency_s: float = 0.05
    queue_size: int = 4096
    trim_interval_s: float = 5.0
    """After a commit, hand freed heap memory back to the system (glibc ``malloc_trim``)
    if this many seconds have passed since the last time; 0 never does (see
    ``memfuse_lite.heap``)."""
    inbox_poll_s: float = 0.5
    """How often the owner of a memory looks for observations other processes put in its
    inbox (``memfuse ingest`` beside a running MCP server)."""

    def __post_init__(self) -> None:
        _positive("batch_size", self.batch_size)
        _positive("queue_size", self.queue_size)
        _positive("inbox_poll_s", self.inbox_poll_s)
        if self.batch_latency_s < 0:
            raise InvalidConfig("batch_latency_s must be >= 0")
        if self.trim_interval_s < 0:
            raise InvalidConfig("trim_interval_s must be >= 0")


@dataclass(frozen=True, slots=True)
class IndexConfig:
    """HNSW parameters, how often the dense index is written to disk, and the share of
    deleted vectors (after ``forget``) at which it is rebuilt without them.

    The defaults keep recall@20 against exact search at 1.000 / 1.000 / 0.996 on e5
    vectors of a household grown to 100k / 300k / 1M (``python3 -m bench ann``).
    ``M`` and ``ef_construction`` are fixed when the index is built: a saved index keeps
    its own until ``MemFuse.rebuild_indexes()``."""

    hnsw_m: int = 16
    hnsw_ef_construction: int = 800
    """Beam width while inserting. On the e5 vectors of a household grown to 1M (608,705
    distinct texts, ``bench ann``), 800 gave recall@20 0.996 at the default ef_search
    where 400 gave 0.920 (and ef_search 768 only 0.960): a wider search cannot find what
    a narrow build left unlinked. It costs about 1.75× the build time of 400 (bench/HISTORY.md,
    HNSW recall), on the commit thread, which overlaps the embedder.
    At 100k, 200 had given 0.9762 / 0.9950 at ef_search 256 / 384 and 400 0.9915 /
    1.0000."""
    hnsw_ef_search: int = 384
    """Beam width of a search: recall@20 against exact search at 100k e5 vectors was
    0.984–0.999 at 384 over four builds, 0.970–0.996 at 256 (at 1.5× 256's time)."""
    hnsw_ef_filtered: int = 64
    """Beam width of a search whose filter (a viewer, a time window, a user or source)
    leaves few points to walk: hnswlib calls the filter at every node it visits, so the
    walk costs about ef / (share passing) filter calls. On the generated household with
    e5 vectors, the filtered walks of 200 questions searched by the fused and the dense
    pipelines found the exact top k at 48 as at 384 (10k and 100k; 0.9993 in an earlier
    100k build), and so did those on 10k LifeBench + LoCoMo records. On a 300k household
    memory (hashing vectors, median 0.9% of points passing) the walks' recall against
    exact search, counting ties, was 0.9834 / 0.9875 / 0.9904 at 48 / 64 / 96: 64 keeps
    recall above 0.98 in two thirds of 96's time (``bench engine --searches-only``)."""
    save_every_s: float = 5.0
    """The shortest interval between periodic saves of the dense index while ingesting
    (a large index waits longer: a save then takes at most 1/20 of the time)."""
    text_commit_every_s: float = 1.0
    """The shortest interval between commits of the text index while ingesting; a search
    commits what is pending first, so it never misses an ingested event. A commit per
    batch of 64 took a quarter of the text index's time at 20k events."""
    compact_deleted_ratio: float = 0.1
    erase_on_forget: bool = True
    """``forget`` writes again what held the forgotten records in the index files (the text
    index's segments that held them, the dense index's vectors), so nothing of them can be
    read from the directory when it returns. False: they are only hidden from searches
    until the segments merge or the dense index is compacted (a faster forget)."""
    dense_backend: str = "hnsw"
    """A name in ``memfuse_lite.index.DENSE_BACKENDS`` (register more there)."""
    text_backend: str = "tantivy"
    """A name in ``memfuse_lite.index.TEXT_BACKENDS``."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.compact_deleted_ratio <= 1.0:
            raise InvalidConfig("compact_deleted_ratio must be between 0 and 1")
        _positive("hnsw_m", self.hnsw_m)
        _positive("hnsw_ef_construction", self.hnsw_ef_construction)
        _positive("hnsw_ef_search", self.hnsw_ef_search)
        _positive("hnsw_ef_filtered", self.hnsw_ef_filtered)
        if self.text_commit_every_s < 0:
            raise InvalidConfig("text_commit_every_s must be 0 or more")


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """Search defaults (paper values): RRF constant 60, final top-20; up to 3
    rewrites, constraints applied at confidence >= 0.6; causal edges 2 hops, semantic
    edges 1 hop at similarity >= 0.8, score decay 0.7 per hop; at most 3 fused summaries
    in the final context; agentic retrieval in 2-5 rounds. The ``use_*`` switches are
    the ablations (no planner, no expansion, no fused summaries).

    Five defaults depart from the paper's layout because they measured better on every
    dataset in bench/RESULTS.md: as many seeds as the context has places (``seed_k``
    20, the paper's 30: the seeds ranked 21-30 filled the context's last places that
    the best seeds' memory members take now), the fused summaries come on top of the k
    events (``summaries_extra``), fused-memory documents are not seeds
    (``fused_doc_seeds``), expansion is weighted by closeness to the question
    (``expansion_relevance``), and semantic edges are not followed (``semantic_hops``
    0, the paper's 1: the near-duplicate texts they reach, mostly from other days,
    displaced evidence on LifeBench and the household and changed nothing on LoCoMo).
    (``bench quality``'s ``fused-paper-layout`` restores the paper's.) Only the question
    itself is searched by meaning (``dense_phrasings`` 1): the rewrites are its key words,
    whose vectors found little the question's did not, and each costs a run of the
    embedder per search.
    ``expansion_relevance`` scales what expansion reaches by its cosine with the question
    (rescaled from ``relevance_band`` to 0..1); ``summaries_extra`` puts the fused
    summaries on top of the k events instead of in k's places; ``fused_doc_seeds``
    ranks fused-memory documents (BM25 over an episode's text) among the seeds;
    ``member_relevance`` scales a retrieved memory's members by their closeness to the
    question too (off: they enter at the seed's decayed score, as the paper's retrieval
    hands over a memory's members). ``author_weight``: when the question names a user,
    the rest of the question is also searched among that user's own records (dense and
    BM25), those two rankings weighing this much each in the seeds' RRF (0: not searched;
    people do not name themselves in what they write). ``use_related_links``: a seed's
    likely episode mates that fusion kept in other memories (``related`` edges, see
    ``FusionConfig.link_probability``) enter as its memory's members do. ``use_ranker``:
    the ``fused`` pipeline's first ``rank_depth`` candidates are reordered by the fitted
    rank model (:mod:`memfuse_lite.retrieve.rank`; ``rank_model``: another model file
    than the shipped one), their scores becoming its probability that each is evidence."""

    rrf_k: int = 60
    seed_k: int = 20
    final_k: int = 20
    default_pipeline: str = "hybrid"
    """The pipeline of a search that names none; checked against the registry when a
    memory opens (a pipeline may be registered after the config is made)."""
    max_rewrites: int = 3
    dense_phrasings: int = 1
    """How many of the question's phrasings (the question first, then the planner's
    rewrites) the ``fused`` pipeline searches by meaning as well as by words; the rest
    are searched by their words only, unless they hold words the question does not (an
    LLM planner's paraphrase, an agentic follow-up)."""
    constraint_min_confidence: float = 0.6
    causal_hops: int = 2
    semantic_hops: int = 0
    semantic_min_cos: float = 0.8
    hop_decay: float = 0.7
    max_fused_summaries: int = 3
    boost: float = 1.25
    author_weight: float = 2.0
    agentic_min_rounds: int = 2
    agentic_max_rounds: int = 5
    use_planner: bool = True
    use_expansion: bool = True
    use_fused_summaries: bool = True
    expansion_relevance: bool = True
    relevance_band: tuple[float, float] = (0.75, 0.90)
    summaries_extra: bool = True
    fused_doc_seeds: bool = False
    member_relevance: bool = False
    use_related_links: bool = True
    use_ranker: bool = True
    rank_depth: int = 30
    rank_model: str | None = None

    def __post_init__(self) -> None:
        _positive("rrf_k", self.rrf_k)
        _positive("rank_depth", self.rank_depth)
        _positive("dense_phrasings", self.dense_phrasings)
        _positive("seed_k", self.seed_k)
        _positive("final_k", self.final_k)
        if not self.author_weight >= 0:
            raise InvalidConfig(f"author_weight must be >= 0, got {self.author_weight}")


PAPER_SEED_K = 30
"""The paper's seed depth (``seed_k``; the plain pipelines read their rankings this deep)."""


@dataclass(frozen=True, slots=True)
class FusionConfig:
    """The Fusion Agent's weights and thresholds.

    A new event is scored against each candidate (the accumulation zone of the last
    ``zone_size`` processed events plus its ``neighbours`` nearest events in the dense
    index, within ``window_days``): ``score = sum(weight * feature)``, features in 0..1.
    Cosine similarity is rescaled from ``[sim_floor, sim_ceil]`` to 0..1, since unrelated
    texts already have cosines around 0.75 with e5. ``score >= join_threshold`` joins the
    candidate's fused memory; between ``ambiguous_threshold`` and it, the LLM arbitrates
    when one is configured (else a new memory starts).
    """

    enabled: bool = True
    zone_size: int = 10
    neighbours: int = 10
    time_neighbours: int = 10
    window_days: float = 3.0
    max_members: int = 10
    sim_floor: float = 0.80
    sim_ceil: float = 0.95
    w_sim: float = 0.50
    w_entity: float = 0.30
    w_actor: float = 0.15
    w_place: float = 0.05
    name_conflict: float = 0.5
    w_complement: float = 0.05
    w_update: float = 0.15
    join_threshold: float = 0.55
    ambiguous_threshold: float = 0.40
    semantic_edge_cos: float = 0.93
    same_as_cos: float = 0.95
    order_edge_weight: float = 0.3
    scorer: str = "learned"
    """``learned`` (default): the fitted pair model (``fusion/pair_model.json``, or
    ``pair_model``) decides, reading the rule score as one of its features; it also brings
    in earlier events that share rare words or were recorded around the event's own time.
    A report that moves or cancels a plan still joins the plan's memory, and with fewer than
    5 candidates (a young or sparse memory) the rule score decides. ``rules``: the weighted
    score above alone."""
    pair_model: str | None = None
    """A pair model file written by ``python3 -m bench fusion-fit`` (default: the shipped one)."""
    join_probability: float | None = None
    """With the learned scorer: join at this probability (default: the model's threshold)."""
    bridge_probability: float | None = None
    """With the learned scorer: a new event that scores at least this with members of
    several fused memories merges them (default: the model's ``bridge``, fitted with it;
    never below the join probability)."""
    rare_neighbours: int = 15
    neighbour_ef: int = 64
    """HNSW search breadth for the ``neighbours`` nearest events (retrieval's is
    ``IndexConfig.hnsw_ef_search``): candidates need only be near, the pair model ranks them."""
    link_probability: float = 0.1
    """With the learned scorer: the (at most ``links_per_event``; 0: none) most probable
    candidates left outside the new event's memory that score at least this get a
    ``related`` edge to it, weighted by that probability (the pair model's, also where
    the rule score decides the join: fewer than 5 candidates). Memories join only where
    precision allows; these likely mates are what retrieval follows one hop further
    (``RetrievalConfig.use_related_links``)."""
    links_per_event: int = 2
    thread_minutes: float = 30.0
    """A message that joins no memory by its score joins the memory of the message of its
    conversation (same user, :attr:`memfuse_lite.sources.SourceProfile.thread_fields`)
    recorded closest to it within this many minutes, fused before it: an exchange is one
    episode, however little its replies share ("ok", "see you then"). 0: off."""
    recent_events: int = 4096
    """Stored events whose fusion view (vector and text included) and terms are kept
    between batches: one batch's candidates are largely the next one's, and about three
    in four are then found here (0: read every time). 4,096 take about 20 MB."""

    def __post_init__(self) -> None:
        if self.time_neighbours < 0:
            raise InvalidConfig("time_neighbours must be >= 0")
        if self.recent_events < 0:
            raise InvalidConfig("recent_events must be >= 0")
        if self.links_per_event < 0:
            raise InvalidConfig("links_per_event must be >= 0")
        if self.thread_minutes < 0:
            raise InvalidConfig("thread_minutes must be >= 0")
        if not 0 <= self.link_probability <= 1:
            raise InvalidConfig("link_probability must lie between 0 and 1")
        for name in ("zone_size", "neighbours", "window_days", "max_members", "neighbour_ef"):
            _positive(name, getattr(self, name))
        if not 0 <= self.ambiguous_threshold <= self.join_threshold <= 1.5:
            raise InvalidConfig("need 0 <= ambiguous_threshold <= join_threshold")
        if not self.sim_floor < self.sim_ceil:
            raise InvalidConfig("sim_floor must be below sim_ceil")
        if self.scorer not in ("rules", "learned"):
            raise InvalidConfig("scorer must be 'rules' or 'learned'")
        for name in ("join_probability", "bridge_probability"):
            value = getattr(self, name)
            if value is not None and not 0 < value <= 1:
                raise InvalidConfig(f"{name} must be above 0 and at most 1")


ANSWER_EVIDENCE_TOKENS = 360
"""Default prompt tokens of evidence the answer LLM reads. A 2-core CPU evaluates some
100-200 prompt tokens a second with a 0.5B model, so this, more than the model's answer,
sets how long ``ask`` takes (``python3 -m bench ask``)."""


@dataclass(frozen=True, slots=True)
class MemFuseConfig:
    """Everything a memory needs to know, with defaults that work offline.

    ``durability``: ``"normal"`` (WAL, synchronous=NORMAL) never loses an acknowledged
    observation when the process dies, but a power loss may take the last few
    transactions; ``"full"`` (synchronous=FULL) fsyncs every commit and survives
    power loss too, at the cost of one fsync per acknowledgement.
    """

    embedder: str = "e5-small-int8"
    model_dir: Path = field(default_factory=default_model_dir)
    threads: int = 2
    durability: Durability = "normal"
    ingest: IngestConfig = field(default_factory=IngestConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    fusion: FusionConfig = field(default_factory=FusionConfig)
    fusion_llm: str | None = None
    """A GGUF name or path: lets the LLM arbitrate ambiguous fusion decisions."""
    answer_llm: str | None = None
    """A GGUF name or path: writes answers and steers agentic retrieval."""
    summary_llm: str | None = None
    """A GGUF name or path: writes fused-memory summaries (per viewer, cached)."""
    plan_llm: str | None = None
    """A GGUF name or path: adds rewrites and constraints to the rule-based query plan."""
    extract_llm: str | None = None
    """A GGUF name or path: lets the LLM refine each event's time, actors and place."""
    llm_ctx: int = 4096
    answer_evidence_tokens: int = ANSWER_EVIDENCE_TOKENS
    """Prompt tokens of evidence the answer LLM reads: the best records that fit (the
    first always does). Prompt length sets most of ``ask``'s time on a CPU."""
    tz: str | None = None
    """An IANA zone in which times given without an offset are read (observations,
    ``now``, ``before``); None: the memory's home zone, recorded when it was created (this
    machine's zone then, or ``tz`` if given). See :mod:`memfuse_lite.clock`."""

    def __post_init__(self) -> None:
        _positive("threads", self.threads)
        if self.tz is not None:
            from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

            try:
                ZoneInfo(self.tz)
            except (ZoneInfoNotFoundError, ValueError, TypeError) as exc:
                raise InvalidConfig(f"unknown time zone {self.tz!r} (use an IANA name such "
                                    "as Europe/Berlin)") from exc
        _positive("answer_evidence_tokens", self.answer_evidence_tokens)
        if self.durability not in ("normal", "full"):
            raise InvalidConfig("durability must be 'normal' or 'full'")
        object.__setattr__(self, "model_dir", Path(self.model_dir).expanduser())
