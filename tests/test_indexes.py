"""One shared test body for every registered index backend (dense and text)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memfuse_lite.config import IndexConfig
from memfuse_lite.event import EventRecord
from memfuse_lite.index import DENSE_BACKENDS, EVENT, FUSED, TEXT_BACKENDS, TextIndex
from memfuse_lite.index.base import IndexFilter
from memfuse_lite.text.tokens import tokenize, words

from .conftest import FakeEmbedder

TEXTS = ["dentist moved to thursday", "dinner with grandma", "parcel delivered",
         "flight delayed two hours", "牙医 预约 周四"]


def rows(embedder: FakeEmbedder, start: int = 1, audience=None) -> list[EventRecord]:
    vecs = embedder.embed(TEXTS)
    return [EventRecord(id=start + i, text=t, audience=audience, ts_epoch=1.0e9 + i,
                        embedding=vecs[i], user="ana", source="sms", ts="")
            for i, t in enumerate(TEXTS)]


BACKENDS = [f"dense:{name}" for name in DENSE_BACKENDS] + [f"text:{name}"
                                                           for name in TEXT_BACKENDS]


def open_index(kind: str, path: Path, emb: FakeEmbedder):
    family, name = kind.split(":")
    if family == "dense":
        return DENSE_BACKENDS[name](path, emb.info.dims, emb.info.key(), IndexConfig())
    return TEXT_BACKENDS[name](path, IndexConfig())


def query(kind: str, index, emb: FakeEmbedder, text: str, viewer: str = "ana", k: int = 3,
          where: IndexFilter | None = None):
    if kind.startswith("dense"):
        return index.search(emb.embed_query(text), viewer, k, where=where)
    return index.search_events(text, viewer, k, where=where)


@pytest.fixture(params=BACKENDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_add_search_persist_reopen(kind: str, tmp_path: Path) -> None:
    emb = FakeEmbedder()
    index = open_index(kind, tmp_path, emb)
    index.add(rows(emb))
    assert len(index) == len(TEXTS)
    assert index.watermark == len(TEXTS)
    top = query(kind, index, emb, "grandma dinner")
    assert top[0][0] == 2
    index.close()
    again = open_index(kind, tmp_path, emb)
    assert again.watermark == len(TEXTS)
    assert again.rebuilt_reason is None
    if kind.startswith("dense"):  # what the filters need was saved with the graph
        assert again.described
    assert query(kind, again, emb, "grandma dinner") == top
    again.close()


@pytest.mark.parametrize("damage", ["delete", "garbage"])
def test_dense_index_without_its_filter_arrays_is_rebuilt(damage: str, tmp_path: Path) -> None:
    emb = FakeEmbedder()
    index = open_index("dense:hnsw", tmp_path, emb)
    index.add(rows(emb, start=1, audience=("ben",)))
    index.add(rows(emb, start=100))
    index.remove([101])
    index.close()
    kept = open_index("dense:hnsw", tmp_path, emb)
    assert kept.rebuilt_reason is None and kept.watermark == 104
    before = {v: query("dense:hnsw", kept, emb, "grandma dinner", viewer=v, k=10)
              for v in ("ana", "ben")}
    assert all(i >= 100 and i != 101 for i, _ in before["ana"])
    assert 2 in {i for i, _ in before["ben"]}
    kept.close()
    filters = tmp_path / "dense.filters.npz"
    if damage == "delete":
        filters.unlink()
    else:
        filters.write_bytes(np.random.default_rng(0).bytes(filters.stat().st_size))
    again = open_index("dense:hnsw", tmp_path, emb)
    # which events share a point is in those arrays: without them, start again from SQLite
    assert again.rebuilt_reason and again.watermark == 0 and len(again) == 0
    again.add(rows(emb, start=1, audience=("ben",)) + rows(emb, start=100))
    again.remove([101])
    assert {v: query("dense:hnsw", again, emb, "grandma dinner", viewer=v, k=10)
            for v in ("ana", "ben")} == before
    again.close()


@pytest.mark.parametrize("walk", [True, False], ids=["graph", "exact"])
def test_events_of_one_text_share_a_point(walk: bool, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from memfuse_lite.index import dense

    # so few events would be scored exactly: search the graph, or score exactly
    monkeypatch.setattr(dense, "exact_pays", lambda *_: not walk)
    emb = FakeEmbedder()
    index = open_index("dense:hnsw", tmp_path, emb)
    call = "Outgoing call to HomeCare Repairs, 5 min"
    vec = emb.embed([call])[0]
    others = rows(emb, start=1)

    def event(i: int, audience=None) -> EventRecord:
        return EventRecord(id=i, text=call, audience=audience, ts_epoch=1.0e9 + i,
                           embedding=vec, user="ana", source="calls", ts="")

    index.add(others + [event(10), event(11, ("ben",))])
    index.add([event(12)])
    assert index.index.get_current_count() == len(TEXTS) + 1, "one vector for the three"
    assert len(index) == len(TEXTS) + 3 and {10, 11, 12} <= index.labels()
    q = emb.embed_query("call HomeCare Repairs")
    # a point found stands for its events the viewer may see, newest first
    assert [i for i, _ in index.search(q, "ana", 2)] == [12, 10]
    assert [i for i, _ in index.search(q, "ben", 2)] == [12, 11]
    assert [i for i, _ in index.search_all(q, 3, below=12)][:2] == [11, 10]
    assert index.similarities(q, [10, 11, 12]).keys() == {10, 11, 12}
    index.remove([10, 12])
    assert [i for i, _ in index.search(q, "ben", 1)] == [11]
    assert all(i not in (10, 12) for i, _ in index.search(q, "ana", 10))
    index.close()
    again = open_index("dense:hnsw", tmp_path, emb)
    assert again.rebuilt_reason is None and len(again) == len(TEXTS) + 1
    assert [i for i, _ in again.search(q, "ben", 1)] == [11]
    again.remove([11])  # the last of the three: the point goes
    assert again.index.get_current_count() - len(again._dead_points) == len(TEXTS)
    assert all(i < 10 for i, _ in again.search(q, "ben", 10))
    again.add([event(13)])  # the same text again: the point comes back for it
    assert [i for i, _ in again.search(q, "ana", 1)] == [13]
    assert again.index.get_current_count() == len(TEXTS) + 1
    again.close()


def test_remove_and_reset(kind: str, tmp_path: Path) -> None:
    emb = FakeEmbedder()
    index = open_index(kind, tmp_path, emb)
    index.add(rows(emb))
    index.remove([2])
    assert 2 not in index.labels()
    assert all(i != 2 for i, _ in query(kind, index, emb, "grandma dinner", k=10))
    index.reset()
    assert len(index) == 0 and index.watermark == 0
    assert query(kind, index, emb, "grandma dinner") == []
    index.close()


def test_audience_is_filtered_inside_the_index(kind: str, tmp_path: Path) -> None:
    emb = FakeEmbedder()
    index = open_index(kind, tmp_path, emb)
    index.add(rows(emb, start=1, audience=("ben",)))
    index.add(rows(emb, start=100))
    ana = query(kind, index, emb, "grandma dinner", viewer="ana", k=5)
    ben = query(kind, index, emb, "grandma dinner", viewer="ben", k=10)
    assert ana and all(i >= 100 for i, _ in ana)
    assert {2, 101} <= {i for i, _ in ben}
    index.close()


def test_a_time_range_holds_what_happened_in_it_and_what_was_said_in_it(kind: str,
                                                                        tmp_path: Path) -> None:
    # July 2025 as epochs; each record says "dinner with grandma"
    july, august = (1751328000.0, 1754006399.0), "2025-08-02T19:00:00"
    emb = FakeEmbedder()
    index = open_index(kind, tmp_path, emb)
    vec = emb.embed(["dinner with grandma"])[0]

    def record(i: int, source: str, ts_epoch: float, start: str | None) -> EventRecord:
        return EventRecord(id=i, text="dinner with grandma", audience=None, ts_epoch=ts_epoch,
                           embedding=vec, user="ana", source=source, ts="",
                           event_start=start)

    index.add([record(1, "sms", july[0] + 86400, august),     # said in July, about August
               record(2, "calendar", july[0] + 86400, august),  # planned in July for August
               record(3, "calendar", july[0] - 86400, "2025-07-05T19:00:00"),  # for July
               record(4, "sms", july[0] - 86400, None)])        # said in June
    found = {i for i, _ in query(kind, index, emb, "dinner with grandma", k=10,
                                 where=IndexFilter(start=july[0], end=july[1],
                                                   scheduled=frozenset({"calendar"})))}
    assert found == {1, 3}
    index.close()


@pytest.mark.parametrize("where", [None, IndexFilter(observed_before=2.0e9)],
                         ids=["unfiltered", "filtered"])
def test_each_search_sees_the_changes_made_since_the_last(kind: str, where: IndexFilter | None,
                                                          tmp_path: Path) -> None:
    # a viewer's visibility, and what passes a filter, are worked out once and kept
    # between searches (dense): every addition, removal and reset must still show in the
    # next search under the same filter
    emb = FakeEmbedder()
    index = open_index(kind, tmp_path, emb)

    def found(viewer: str = "ana") -> set[int]:  # "dinner with grandma": 2, 101, 201, 301
        return {i for i, _ in query(kind, index, emb, "dinner with grandma", viewer, k=20,
                                    where=where)}

    index.add(rows(emb))
    assert 2 in found("ben")
    index.add(rows(emb, start=100, audience=("ben",)))
    assert {2, 101} <= found("ben") and 101 not in found()
    index.remove([2, 101])
    assert not found("ben") & {2, 101} and 2 not in found()
    index.add(rows(emb, start=200))
    assert 201 in found() and 201 in found("ben")
    index.reset()
    assert not found("ben")
    index.add(rows(emb, start=300, audience=("ana",)))
    assert not found("ben") and 301 in found()
    index.close()


@pytest.mark.parametrize("damage", ["truncate", "garbage", "delete"])
def test_damaged_files_are_detected(kind: str, damage: str, tmp_path: Path) -> None:
    emb = FakeEmbedder()
    index = open_index(kind, tmp_path, emb)
    index.add(rows(emb))
    index.close()
    files = [tmp_path / "dense.hnsw"] if kind == "dense:hnsw" else sorted(
        p for p in (tmp_path / "sparse").iterdir() if p.is_file() and p.suffix != ".lock")
    for f in files:
        if damage == "delete":
            f.unlink()
        elif damage == "truncate":
            f.write_bytes(f.read_bytes()[: max(1, f.stat().st_size // 3)])
        else:
            f.write_bytes(np.random.default_rng(0).bytes(f.stat().st_size or 64))
    again = open_index(kind, tmp_path, emb)
    assert again.watermark == 0, "a damaged index must start empty and be rebuilt"
    assert again.rebuilt_reason
    again.close()


def test_a_removal_survives_reopen_and_may_be_repeated(kind: str, tmp_path: Path) -> None:
    emb = FakeEmbedder()
    index = open_index(kind, tmp_path, emb)
    index.add(rows(emb))
    index.remove([2])
    index.persist()
    index.close()
    again = open_index(kind, tmp_path, emb)
    again.remove([2])  # catch-up on open removes what the store no longer has, again
    assert 2 not in again.labels()
    assert all(i != 2 for i, _ in query(kind, again, emb, "grandma dinner", k=10))
    again.close()


@pytest.mark.parametrize("name", list(TEXT_BACKENDS))
def test_events_and_fused_memories_are_separate_kinds(name: str, tmp_path: Path) -> None:
    emb = FakeEmbedder()
    index: TextIndex = TEXT_BACKENDS[name](tmp_path, IndexConfig())
    index.add(rows(emb))
    # fused memory 2 shares its number with event 2 and must not be confused with it
    index.upsert_fused([(2, "grandma dinner and the parcel", 1.0e9)])
    both = index.search("grandma dinner", "ana", 10, kinds=(EVENT, FUSED))
    assert {(h.kind, h.id) for h in both} >= {(EVENT, 2), (FUSED, 2)}
    assert all(h.kind == EVENT for h in index.search("grandma dinner", "ana", 10))
    assert [(h.kind, h.id) for h in index.search("grandma dinner", "ana", 10,
                                                 kinds=(FUSED,))] == [(FUSED, 2)]
    scores = {(h.kind, h.id): h.score for h in both}
    for kinds in ((EVENT,), (FUSED,)):  # one kind scores as it does among both
        assert all(scores[(h.kind, h.id)] == h.score
                   for h in index.search("grandma dinner", "ana", 10, kinds=kinds))
    assert index.fused_ids() == {2} and index.event_count() == len(TEXTS)
    index.remove_fused([2])
    assert 2 in index.labels() and index.fused_ids() == set()
    index.upsert_fused([(7, "grandma dinner", 1.0e9)])
    index.remove([2])
    assert index.fused_ids() == {7} and 2 not in index.labels()
    index.close()



@pytest.mark.parametrize("name", list(TEXT_BACKENDS))
def test_english_word_forms_meet_and_chinese_words_pass_unchanged(name: str,
                                                                  tmp_path: Path) -> None:
    emb = FakeEmbedder()
    index: TextIndex = TEXT_BACKENDS[name](tmp_path, IndexConfig())
    index.add(rows(emb))
    assert [i for i, _ in index.search_events("delays of flights", "ana", 1)] == [4]
    assert [i for i, _ in index.search_events("delivering parcels", "ana", 1)] == [3]
    assert [i for i, _ in index.search_events("预约", "ana", 1)] == [5]
    assert index.search_events("deliverance", "ana", 5) == []
    index.close()


def test_latin_words_inside_chinese_text_are_tokenised_as_anywhere_else() -> None:
    # Chinese runs are cut into words; the rest is split as in an English text, so a
    # model number or a measurement in a Chinese message meets the same query
    assert tokenize("牙医预约改到周四上午十点") == ["牙医", "预约", "改", "到", "周四", "上午",
                                                  "十点"]
    assert tokenize("血糖5.6mmol，正常") == ["血糖", "5", "6mmol", "正常"]
    assert tokenize("我的手机是Mate60，明天去4S店") == [
        "我", "的", "手机", "是", "mate60", "明天", "去", "4s", "店"]
    assert tokenize("glucose 5.6mmol, my phone is a Mate60") == [
        "glucose", "5", "6mmol", "my", "phone", "is", "a", "mate60"]
    assert words("飞机延误了") == ["飞机", "延误", "了"]


@pytest.mark.parametrize("name", list(TEXT_BACKENDS))
def test_searches_see_every_change_however_commits_are_spaced(name: str,
                                                              tmp_path: Path) -> None:
    """Changes left uncommitted (a batch's fused documents, events between spaced commits)
    show in the next search or count, and survive close and reopen."""
    emb = FakeEmbedder()
    index: TextIndex = TEXT_BACKENDS[name](tmp_path, IndexConfig(text_commit_every_s=3600))
    first = rows(emb)
    index.add(first[:2])
    index.upsert_fused([(1, "dentist thursday", 1.0e9)])
    index.remove_fused([1], commit=False)
    index.upsert_fused([(2, "grandma dinner", 1.0e9)], commit=False)
    assert index.fused_ids() == {2}
    index.add(first[2:])
    assert index.event_count() == len(TEXTS)
    assert {h.id for h in index.search("parcel", "ana", 5)} == {3}
    index.upsert_fused([(3, "parcel delivered", 1.0e9)], commit=False)
    index.add([])
    assert index.fused_ids() == {2, 3}
    index.upsert_fused([(4, "dinner moved", 1.0e9)], commit=False)
    index.close()
    again: TextIndex = TEXT_BACKENDS[name](tmp_path, IndexConfig())
    assert again.rebuilt_reason is None and again.watermark == len(TEXTS)
    assert again.fused_ids() == {2, 3, 4} and again.event_count() == len(TEXTS)
    again.close()


def test_text_index_commits_are_spaced_while_ingesting(tmp_path: Path) -> None:
    """A stream of batches commits at most once per ``text_commit_every_s`` (the sidecar
    records each commit's watermark); a search commits what is pending first."""
    from memfuse_lite.index.base import read_sidecar

    emb = FakeEmbedder()
    index = TEXT_BACKENDS["tantivy"](tmp_path, IndexConfig(text_commit_every_s=3600))

    def committed() -> int:
        meta = read_sidecar(tmp_path / "sparse.json")
        return 0 if meta is None else int(meta["watermark"])

    index.add(rows(emb, start=1))
    index.add(rows(emb, start=100))
    assert committed() < 100, "the second batch came well within the interval"
    assert {h.id for h in index.search("parcel", "ana", 5)} == {3, 102}
    assert committed() == 100 + len(TEXTS) - 1
    index.close()
    every = TEXT_BACKENDS["tantivy"](tmp_path / "b", IndexConfig(text_commit_every_s=0))
    every.add(rows(emb, start=1))
    assert read_sidecar(tmp_path / "b" / "sparse.json")["watermark"] == len(TEXTS)
    every.close()


@pytest.mark.parametrize("source", ["index", "store"])
def test_exact_scoring_is_blockwise_and_equals_one_pass(source: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact fallback reads vectors a block at a time (bounded memory), from hnswlib or
    from the store attached to the index, and returns what scoring all of them at once
    would: the k most similar, ties to the newer id; what the store no longer holds is
    left out."""
    from memfuse_lite.index import dense
    from memfuse_lite.store import Store
    from memfuse_lite.store.sqlite import insert_events

    rng = np.random.default_rng(3)
    vecs = rng.normal(size=(50, 8)).astype(np.float32)
    vecs[31] = vecs[7]  # a tie: the newer id comes first
    records = [EventRecord(id=i + 1, text=str(i), audience=None, ts_epoch=1.0e9 + i,
                           embedding=v, user="ana", source="sms", ts="")
               for i, v in enumerate(vecs)]
    index = dense.HnswIndex(tmp_path, dims=8, model_key="fake", cfg=IndexConfig())
    store = Store(tmp_path / "db")
    if source == "store":
        with store.atomic() as db:
            assert [r.id for r in insert_events(db, records)] == list(range(1, 51))
        index.read_vectors_from(store.vectors)
        monkeypatch.setattr(index, "vector_blocks", None)  # never read back from hnswlib
    index.add(records)
    query = vecs[7] + 0.01 * rng.normal(size=8).astype(np.float32)
    ids = np.arange(1, 51)
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    sims = unit @ query
    expected = [int(i) + 1 for i in np.lexsort((-ids, -sims))[:10]]
    monkeypatch.setattr(dense, "EXACT_BLOCK", 7)
    got = index._exact(query, ids, 10)
    assert [i for i, _ in got] == expected
    assert got[0][0] == 32 and got[1][0] == 8  # the tied pair, newer id first
    assert [s for _, s in got] == pytest.approx(sorted(sims, reverse=True)[:10], abs=1e-5)
    if source == "store":
        with store.atomic() as db:
            db.execute("DELETE FROM events WHERE id = 32")
        assert [i for i, _ in index._exact(query, ids, 9)] == expected[1:]
    index.close()
    store.close()


def test_a_selective_filter_is_scored_exactly_when_that_costs_less_than_a_walk() -> None:
    """A filtered walk visits about ef / share nodes: the fewer points pass, the longer it
    walks, while exact scoring costs in proportion to the events passing; reading vectors
    from the store makes exact scoring pay for larger subsets than hnswlib's read-back."""
    from memfuse_lite.index.cost import INDEX_ROW_US, STORED_ROW_US, exact_pays

    total = 100_000
    assert exact_pays(900, 900, total, 64, STORED_ROW_US)
    assert not exact_pays(900, 900, total, 64, INDEX_ROW_US)
    assert exact_pays(128, 128, 10_000, 64, INDEX_ROW_US)
    assert not exact_pays(5_000, 5_000, total, 64, STORED_ROW_US)
    assert not exact_pays(40, 40, 40, 64, STORED_ROW_US)  # nothing filtered out: walk


def test_a_filtered_walk_keeps_to_its_points_at_its_own_beam_width(tmp_path: Path) -> None:
    """A filtered walk returns only points that pass, nearest first, and searches at
    ``hnsw_ef_filtered`` unless told otherwise (an unfiltered one at ``hnsw_ef_search``)."""
    from memfuse_lite.index import dense

    rng = np.random.default_rng(5)
    vecs = rng.normal(size=(400, 8)).astype(np.float32)
    cfg = IndexConfig(hnsw_ef_search=64, hnsw_ef_filtered=24)
    index = dense.HnswIndex(tmp_path, dims=8, model_key="fake", cfg=cfg)
    index.add([EventRecord(id=i + 1, text=str(i), audience=None, ts_epoch=1.0e9 + i,
                           embedding=v, user="ana", source="sms", ts="")
               for i, v in enumerate(vecs)])
    passing = np.zeros(len(index._point), dtype=bool)
    passing[1:401:9] = True  # 45 of the 400 points
    query = rng.normal(size=8).astype(np.float32)
    beams: list[int] = []
    plain_set_ef = index.index.set_ef

    class Spy:  # hnswlib's Index cannot take attributes: wrap the one method
        def __getattr__(self, name: str) -> object:
            return getattr(plain, name)

        def set_ef(self, ef: int) -> None:
            beams.append(ef)
            plain_set_ef(ef)

    plain, index.index = index.index, Spy()
    found = index.walk(query, passing, 5)
    assert found is not None and all(passing[p] for p, _ in found)
    assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
    ids = np.flatnonzero(passing)
    unit = vecs[ids - 1] / np.linalg.norm(vecs[ids - 1], axis=1, keepdims=True)
    exact = ids[np.argsort(-(unit @ query))][:5]
    assert [p for p, _ in index.walk(query, passing, 5, ef=400) or []] == exact.tolist()
    assert index.walk(query, None, 5) is not None
    assert beams == [24, 400, 64]
    index.index = plain
    index.close()
    with pytest.raises(ValueError):
        IndexConfig(hnsw_ef_filtered=0)


@pytest.mark.parametrize("name", list(TEXT_BACKENDS))
def test_equal_scores_come_in_id_order_whatever_the_segments(name: str, tmp_path: Path) -> None:
    emb = FakeEmbedder()
    index = TEXT_BACKENDS[name](tmp_path, IndexConfig())
    vec = emb.embed(["parcel delivered"])[0]
    for i in range(12, 0, -1):  # the same text, added newest id first, a commit each
        index.add([EventRecord(id=i, text="parcel delivered", audience=None, ts_epoch=1.0e9,
                               embedding=vec, user="ana", source="sms", ts="")])
        index.persist()
    assert [i for i, _ in index.search_events("parcel", "ana", 3)] == [1, 2, 3]
    index.close()


@pytest.mark.parametrize("passes_over", [True, False], ids=["passing-over", "filtering"])
def test_passing_over_hidden_records_finds_what_a_filtered_query_finds(
        passes_over: bool, tmp_path: Path, monkeypatch) -> None:
    """A viewer's second search since a commit ranks the terms alone and passes over what
    they may not see (unless too much is hidden from them); it returns what the first
    (filter inside the query) returned, ties and all, and a commit starts over."""
    from memfuse_lite.index import sparse

    if not passes_over:
        monkeypatch.setattr(sparse, "HIDDEN_MOST", 10)
    emb = FakeEmbedder()
    index = sparse.TantivyIndex(tmp_path)
    vec = emb.embed(["x"])[0]
    owners = [None, ("ben",), ("ana",), ("ben", "mia"), None, ("mia",)]
    texts = ["dinner with grandma", "dinner at the market", "grandma called about dinner",
             "parcel delivered", "dinner dinner dinner", "market closed"]
    index.add([EventRecord(id=i, text=texts[i % len(texts)], audience=owners[i % 6],
                           ts_epoch=1.0e9 + i, embedding=vec, user="ana", source="sms",
                           ts="") for i in range(1, 301)])
    index.upsert_fused([(1, "dinner with grandma at the market", 1.0e9)])
    cases = [(viewer, where, kinds, k)
             for viewer in ("ana", "ben", "mia", "leo")
             for where in (None, IndexFilter(observed_before=2.0e9),
                           IndexFilter(observed_before=1.0e9 + 150))
             for kinds in ((EVENT,), (EVENT, FUSED))
             for k in (1, 5, 40)]

    def ask() -> list:
        return [index.search("grandma dinner market", v, k, where=w, kinds=kd)
                for v, w, kd, k in cases]

    first, second = ask(), ask()
    assert first == second
    assert any(index._hidden.values()) == passes_over, "how the second searches went"
    for (viewer, _, _, k), hits in zip(cases, first, strict=True):
        assert len(hits) == k
        assert all(h.kind == FUSED or owners[h.id % 6] is None or viewer in owners[h.id % 6]
                   for h in hits)
    index.add([EventRecord(id=1000, text="grandma dinner market", audience=("ben",),
                           ts_epoch=1.0e9, embedding=vec, user="ben", source="sms", ts="")])
    after = [index.search("grandma dinner market", "ana", 5) for _ in range(2)]
    assert after[0] == after[1] and all(h.id != 1000 for h in after[1])
    assert index.search("grandma dinner market", "ben", 1)[0].id == 1000
    index.close()
