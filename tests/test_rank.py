"""The fused pipeline's ranking stage: its features, its model file, and the switch."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from memfuse_lite import InvalidConfig, MemFuse, MemFuseConfig
from memfuse_lite.config import IngestConfig, RetrievalConfig
from memfuse_lite.records import Hit
from memfuse_lite.retrieve.fused import FusedRetriever
from memfuse_lite.retrieve.rank import (
    FEATURES,
    RANK_MODEL_VERSION,
    Candidate,
    ListPlaces,
    RankModel,
    features,
    load_rank_model,
)

from .scenarios import DENTIST, TRIP, observations

COL = {name: i for i, name in enumerate(FEATURES)}


def candidate(eid: int, score: float, cos: float, terms: tuple[str, ...] = (), **kw: object
              ) -> Candidate:
    base: dict[str, object] = dict(via="seed", when=1_000_000.0, length=40, memory=None,
                                   in_time=None, days_off=0.0, source_cue=False, contact_cue=False,
                                   by_named_user=False, own=False)
    base.update(kw)
    return Candidate(eid, score, cos=cos, terms=frozenset(terms), **base)  # type: ignore[arg-type]


def test_features_compare_each_candidate_with_the_others_of_its_question() -> None:
    cands = [candidate(1, 0.05, 0.80, ("dentist", "thursday"), memory=7),
             candidate(2, 0.04, 0.90, ("dentist",), memory=7, via="member_of"),
             candidate(3, 0.01, 0.70, (), in_time=False, days_off=2.0, when=0.0)]
    places = {1: ListPlaces(), 3: ListPlaces()}
    places[1].place("dense", 2)
    places[1].place("bm25", 1, 1.0)
    places[3].place("bm25", 4, 0.5)
    X = features(cands, places, lists=2, question_terms={"dentist": 1.0, "thursday": 3.0},
                 now=1_000_000.0 + 86_400.0)
    assert X.shape == (3, len(FEATURES))
    assert np.all(X[:, COL["bias"]] == 1.0)
    assert X[:, COL["fused_rr"]].tolist() == [1.0, 0.5, 1 / 3]
    # cosine counts relative to the best candidate's, never on its own scale
    assert X[1, COL["cos_below_best"]] == 0.0 and X[0, COL["cos_below_best"]] < 0
    assert X[1, COL["cos_rr"]] == 1.0
    assert X[0, COL["terms_covered"]] == 1.0 and X[1, COL["terms_covered"]] == 0.5
    assert X[1, COL["rare_covered"]] == pytest.approx(0.25)  # "dentist" is the common word
    assert X[0, COL["dense_rr"]] == 0.5 and X[0, COL["bm25_rr"]] == 1.0
    assert X[0, COL["list_share"]] == 1.0 and X[2, COL["list_share"]] == 0.5
    assert X[1, COL["dense_rr"]] == 0.0, "expansion brought it: in no list"
    assert X[1, COL["via_member"]] == 1.0 and X[0, COL["via_member"]] == 0.0
    assert X[0, COL["memory_mates"]] > 0 and X[2, COL["memory_mates"]] == 0
    assert X[2, COL["out_of_time"]] == 1.0 and X[2, COL["in_time"]] == 0.0
    assert X[2, COL["log_days_off_window"]] == pytest.approx(np.log1p(2.0))
    assert X[2, COL["newest_unwindowed"]] == 0.0 and X[0, COL["newest_unwindowed"]] == 1.0
    assert X[0, COL["log_age_days"]] == pytest.approx(np.log1p(1.0))
    assert X[2, COL["newest_rr"]] == 1 / 3


def test_the_shipped_model_loads_and_a_model_of_other_features_is_refused(tmp_path: Path
                                                                          ) -> None:
    model = load_rank_model()
    assert model.weights.shape == (len(FEATURES),)
    assert "command" in model.about
    other = tmp_path / "old.json"
    other.write_text(json.dumps({"version": RANK_MODEL_VERSION, "features": ["bias"],
                                 "weights": [0.0]}))
    with pytest.raises(InvalidConfig, match="refit it"):
        load_rank_model(str(other))
    with pytest.raises(InvalidConfig, match="cannot read"):
        load_rank_model(str(tmp_path / "missing.json"))
    with pytest.raises(InvalidConfig):
        RetrievalConfig(rank_depth=0)


def only(feature: str, X: np.ndarray, path: Path) -> str:
    """A model file that orders candidates by one feature alone, its values in ``X``
    spread over probabilities 0.05..0.95."""
    values = X[:, COL[feature]]
    weights = np.zeros(len(FEATURES))
    weights[COL[feature]] = 6.0 / (values.max() - values.min())
    weights[COL["bias"]] = -weights[COL[feature]] * (values.max() + values.min()) / 2
    path.write_text(RankModel(weights, {"command": "test"}).to_json())
    return str(path)


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory, embedder, model_dir: Path) -> Path:
    path = tmp_path_factory.mktemp("rank") / "mem"
    mem = MemFuse(path, config=MemFuseConfig(model_dir=model_dir,
                                             ingest=IngestConfig(batch_size=16)),
                  embedder=embedder)

    async def run() -> None:
        await mem.ingest_many(list(observations(DENTIST + TRIP)))
        await mem.flush()

    asyncio.run(run())
    mem.close()
    return path


def test_the_stage_reorders_the_candidates_it_is_handed(memory: Path, embedder,
                                                        model_dir: Path, tmp_path: Path) -> None:
    base = MemFuseConfig(model_dir=model_dir)
    question = "When is the dentist appointment?"

    def search(**retrieval: object) -> list[Hit]:
        config = replace(base, retrieval=replace(base.retrieval, **retrieval))
        with MemFuse(memory, config=config, embedder=embedder) as mem:
            return list(mem.search(question, viewer="ana", k=20, pipeline="fused").hits)

    seen: list[tuple[list[int], np.ndarray]] = []
    with MemFuse(memory, config=replace(base, retrieval=replace(
            base.retrieval, use_ranker=False)), embedder=embedder) as mem:
        FusedRetriever(mem.engine).retrieve(question, viewer="ana", now=None, k=20,
                                            on_features=lambda i, X: seen.append((i, X)))
    (ids, X), = seen
    assert len(ids) == len(X) > 1 and X.shape[1] == len(FEATURES)
    off = [h.event_id for h in search(use_ranker=False)]
    assert off[: len(ids)] and set(off[: len(ids)]) <= set(ids)
    # ordered by one feature alone, the candidates come in that feature's order (a newer
    # report that replaced the best is lifted just above it)
    orders = []
    for feature in ("log_length", "log_age_days"):
        hits = search(use_ranker=True, rank_model=only(feature, X, tmp_path / f"{feature}.json"))
        best = ids[int(np.argmax(X[:, COL[feature]]))]
        at = [h.event_id for h in hits].index(best)
        replacing = {r for h in hits[: at + 1] for r in h.superseded_by}
        assert all(h.event_id in replacing for h in hits[:at]), "only replacements above it"
        orders.append([h.event_id for h in hits])
    assert orders[0] != orders[1]


def test_learned_models_refuse_a_config_that_changes_their_features(
        tmp_path: Path, config: MemFuseConfig) -> None:
    from memfuse_lite.config import FusionConfig

    from .conftest import FakeEmbedder

    deeper = replace(config, retrieval=RetrievalConfig(rank_depth=45))
    with pytest.raises(InvalidConfig, match=r"rank_depth=45 \(fitted with 30\)"):
        MemFuse(tmp_path / "a", config=deeper, embedder=FakeEmbedder())
    MemFuse(tmp_path / "b", config=replace(deeper, retrieval=RetrievalConfig(
        rank_depth=45, use_ranker=False)), embedder=FakeEmbedder()).close()
    # the pair model reads the rule score as a feature: its weights are the model's too
    reweighed = replace(config, fusion=FusionConfig(w_entity=0.6))
    with pytest.raises(InvalidConfig, match=r"w_entity=0.6 \(fitted with 0.3\)"):
        MemFuse(tmp_path / "c", config=reweighed, embedder=FakeEmbedder())  # at open
    with MemFuse(tmp_path / "d", config=replace(config, fusion=FusionConfig(
            w_entity=0.6, scorer="rules")), embedder=FakeEmbedder()) as mem:
        assert mem.stats()["observations"] == 0
