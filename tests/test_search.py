"""Search pipelines, visibility, index catch-up and rebuild, model identity."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from memfuse_lite import IndexMismatch, InvalidQuery, MemFuse, MemoryClosed, MemoryInUse, NotFound

from .conftest import FakeEmbedder, obs

CORPUS = [
    ("ana", "calendar", "Dentist appointment with Dr. Lin on Wednesday at 15:00", "household"),
    ("ana", "chat", "The clinic moved my dentist appointment to Thursday 4pm", "household"),
    ("ben", "sms", "Flight to Beijing delayed by two hours", "household"),
    ("ben", "note", "Surprise birthday gift for Ana: a jade bracelet", "private"),
    ("mia", "chat", "学校周五下午开家长会，妈妈能来吗？", "household"),
    ("ben", "calendar", "周六晚上和王家一起吃火锅", "household"),
    ("ana", "photo", "Sunset over the river from the balcony", "household"),
    ("ana", "payment", "Paid 45 yuan for coffee at Starbucks", ("ben",)),
    ("cy", "sms", "Grandma's knee surgery is scheduled for next Monday", "household"),
    ("ben", "email", "Your washing machine repair visit is confirmed for Friday morning",
     "household"),
]


def fill(mem: MemFuse) -> list[int]:
    async def run() -> list[int]:
        res = await mem.ingest_many(
            [obs(text, user=user, source=src, ts=f"2025-03-0{1 + i % 9}T10:00", ext=f"x{i}",
                 visibility=vis) for i, (user, src, text, vis) in enumerate(CORPUS)])
        await mem.flush()
        return [r.observation_id for r in res]

    return asyncio.run(run())


def top_texts(mem: MemFuse, q: str, pipeline: str, viewer: str = "ana") -> list[str]:
    return [h.text for h in mem.search(q, viewer=viewer, pipeline=pipeline, k=3).hits]


def top_text(mem: MemFuse, q: str, pipeline: str, viewer: str = "ana") -> str:
    hits = mem.search(q, viewer=viewer, pipeline=pipeline, k=3).hits
    return hits[0].text if hits else ""


@pytest.mark.parametrize("pipeline", ["bm25", "dense", "hybrid"])
def test_english_and_chinese_targets_are_found_by_each_pipeline(open_memory,
                                                                pipeline: str) -> None:
    mem = open_memory()
    fill(mem)
    assert "Beijing" in top_text(mem, "flight delayed Beijing", pipeline)
    assert "家长会" in top_text(mem, "家长会", pipeline)
    assert "火锅" in top_text(mem, "火锅", pipeline)


def test_dense_finds_paraphrases_bm25_cannot(open_memory) -> None:
    mem = open_memory()
    fill(mem)
    assert "knee surgery" in top_text(mem, "operation for grandmother", "dense")
    # cross-lingual: the English question finds the Chinese record and vice versa (top 3)
    assert any("家长会" in t for t in top_texts(mem, "学校 家长 开会 meeting", "dense"))
    assert any("washing machine" in t for t in top_texts(mem, "洗衣机 repair", "dense"))
    assert not any("washing machine" in t for t in top_texts(mem, "洗衣机维修", "bm25"))


def test_hits_carry_full_provenance(open_memory) -> None:
    mem = open_memory()
    ids = fill(mem)
    hit = mem.search("Thursday 4pm dentist", viewer="ana", k=1).hits[0]
    (p,) = hit.provenance
    assert (p.source, p.external_id, p.user, p.observation_id) == ("chat", "x1", "ana", ids[1])
    assert p.ts == "2025-03-02T10:00:00+00:00"  # with the offset of the memory's zone
    event = mem.get_event(hit.event_id)
    assert event.provenance == hit.provenance


def test_visibility_is_enforced_for_every_pipeline(open_memory) -> None:
    mem = open_memory()
    fill(mem)
    for pipeline in ("dense", "bm25", "hybrid"):
        for viewer in ("ana", "mia", "cy"):
            texts = {h.text for h in mem.search("birthday gift jade bracelet", viewer=viewer,
                                                pipeline=pipeline, k=20).hits}
            assert not any("jade" in t for t in texts), (pipeline, viewer)
        assert "jade" in top_text(mem, "birthday gift jade bracelet", pipeline, viewer="ben")
        coffee = {h.text for h in mem.search("coffee Starbucks", viewer="mia",
                                             pipeline=pipeline, k=20).hits}
        assert not any("Starbucks" in t for t in coffee)
        assert "Starbucks" in top_text(mem, "coffee Starbucks", pipeline, viewer="ben")
    # k larger than what the viewer may see returns all of it, never an error
    assert len(mem.search("anything", viewer="mia", pipeline="dense", k=100).hits) == 8
    private = next(h for h in mem.search("jade", viewer="ben", pipeline="bm25").hits)
    with pytest.raises(NotFound):
        mem.get_event(private.event_id, viewer="ana")


@pytest.mark.parametrize("query", ["", "   ", "a\x00b", "x" * 5000])
def test_bad_queries_are_clear_errors(open_memory, query: str) -> None:
    mem = open_memory()
    with pytest.raises(InvalidQuery):
        mem.search(query, viewer="ana")


def test_bad_arguments_are_clear_errors(open_memory) -> None:
    mem = open_memory()
    for kwargs in ({"viewer": ""}, {"viewer": "ana", "k": 0}, {"viewer": "ana", "k": 10**6},
                   {"viewer": "ana", "pipeline": "magic"}):
        with pytest.raises(InvalidQuery):
            mem.search("dentist", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("query", ['title:"x" AND (y OR', "'; DROP TABLE events; --", "*?~^",
                                   "🦷 dentist 🦷", "牙医 dentist ÆØÅ", "NOT", "\\"])
def test_odd_queries_never_crash(open_memory, query: str) -> None:
    mem = open_memory()
    fill(mem)
    for pipeline in ("dense", "bm25", "hybrid"):
        mem.search(query, viewer="ana", pipeline=pipeline)


def test_indexes_catch_up_and_rebuild_from_sqlite(open_memory, tmp_path: Path) -> None:
    mem = open_memory()
    fill(mem)
    before = {p: mem.search("dentist appointment", viewer="ana", pipeline=p).hits
              for p in ("dense", "bm25", "hybrid")}
    mem.close()
    path = tmp_path / "mem"
    for name in ("dense.hnsw", "dense.json", "sparse.json"):
        (path / name).unlink()
    mem = open_memory(path)
    assert mem.engine.dense.rebuilt_reason and mem.engine.text.rebuilt_reason
    after = {p: mem.search("dentist appointment", viewer="ana", pipeline=p).hits
             for p in ("dense", "bm25", "hybrid")}
    assert [h.event_id for h in after["bm25"]] == [h.event_id for h in before["bm25"]]
    assert [h.event_id for h in after["hybrid"]][:3] == [h.event_id for h in before["hybrid"]][:3]
    assert {h.event_id for h in after["dense"]} == {h.event_id for h in before["dense"]}
    assert mem.engine.dense.labels() == mem.engine.text.labels() == set(range(1, len(CORPUS) + 1))


def test_hnsw_parameters_of_a_new_config_apply_when_the_indexes_are_rebuilt(
        open_memory, config, tmp_path: Path) -> None:
    mem = open_memory()
    fill(mem)
    m_built = mem.engine.dense.index.M
    assert m_built == config.index.hnsw_m
    mem.close()
    wider_beam = config.index.hnsw_ef_construction + 200
    wider = replace(config, index=replace(config.index, hnsw_m=32,
                                          hnsw_ef_construction=wider_beam))
    mem = open_memory(tmp_path / "mem", config=wider)
    m_kept = mem.engine.dense.index.M
    assert m_kept == config.index.hnsw_m, "a saved graph keeps its M"
    assert mem.engine.dense.index.ef_construction == config.index.hnsw_ef_construction
    before = top_text(mem, "dentist appointment", "dense")
    mem.rebuild_indexes()
    assert mem.engine.dense.index.M == 32
    assert mem.engine.dense.index.ef_construction == wider_beam
    assert top_text(mem, "dentist appointment", "dense") == before


def test_index_behind_the_store_catches_up(open_memory, tmp_path: Path) -> None:
    mem = open_memory()
    fill(mem)
    mem.engine.dense.persist()
    files = ("dense.hnsw", "dense.json", "dense.filters.npz")  # saved together
    saved = [(tmp_path / "mem" / name).read_bytes() for name in files]

    async def more() -> None:
        await mem.ingest(obs("A new message about the piano lesson", ext="late"))
        await mem.flush()

    asyncio.run(more())
    mem.close()
    for name, data in zip(files, saved, strict=True):
        (tmp_path / "mem" / name).write_bytes(data)
    mem = open_memory(tmp_path / "mem")
    assert mem.engine.dense.rebuilt_reason is None
    assert "piano" in top_text(mem, "piano lesson", "dense")


def test_another_embedding_model_is_an_index_mismatch(open_memory, tmp_path: Path) -> None:
    mem = open_memory()
    fill(mem)
    mem.close()
    with pytest.raises(IndexMismatch, match="memfuse reembed"):
        MemFuse(tmp_path / "mem", embedder=FakeEmbedder())


def test_closed_memory_refuses_work(open_memory) -> None:
    mem = open_memory()
    mem.close()
    with pytest.raises(MemoryClosed):
        mem.search("x", viewer="ana")


def test_a_directory_has_one_owner_at_a_time(open_memory, tmp_path: Path) -> None:
    first = open_memory(tmp_path / "m")
    assert first.role == "owner"
    with pytest.raises(MemoryInUse):
        open_memory(tmp_path / "m", mode="owner")
    second = open_memory(tmp_path / "m")
    assert second.role == "reader"
    second.close()
    first.close()
    again = open_memory(tmp_path / "m", mode="owner")  # free again after close()
    assert again.role == "owner"
    again.close()


def test_models_load_only_when_a_step_needs_them(tmp_path: Path, config, embedder) -> None:
    first = MemFuse(tmp_path / "m", config=config, embedder=embedder)
    fill(first)
    first.close()
    mem = MemFuse(tmp_path / "m", config=config, create=False)  # the configured e5, lazily
    try:
        assert not mem.embedder.loaded  # type: ignore[attr-defined]
        assert mem.search("Beijing", viewer="ana", pipeline="bm25").hits
        mem.get_event(1)
        assert mem.stats()["events"] == len(CORPUS)
        assert not mem.embedder.loaded, "BM25 search, show and stats load no model"  # type: ignore[attr-defined]
        assert mem.search("Beijing", viewer="ana", pipeline="dense").hits
        assert mem.embedder.loaded  # type: ignore[attr-defined]
    finally:
        mem.close()
    with pytest.raises(NotFound, match="no memory"):
        MemFuse(tmp_path / "absent", config=config, create=False)
    assert not (tmp_path / "absent").exists()


def test_an_unknown_default_pipeline_is_refused_at_open(tmp_path: Path, config) -> None:
    from memfuse_lite import InvalidConfig
    from memfuse_lite.config import RetrievalConfig

    bad = replace(config, retrieval=RetrievalConfig(default_pipeline="nope"))
    with pytest.raises(InvalidConfig, match="default_pipeline must be one of"):
        MemFuse(tmp_path / "m", config=bad, embedder=FakeEmbedder())
    assert not (tmp_path / "m").exists() or not any((tmp_path / "m").iterdir())
