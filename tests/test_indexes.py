"""One shared test body for every derived index backend (dense, sparse)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memfuse_lite.config import IndexConfig
from memfuse_lite.index import HnswIndex, TantivyIndex
from memfuse_lite.store.sqlite import IndexRow

from .conftest import FakeEmbedder

TEXTS = ["dentist moved to thursday", "dinner with grandma", "parcel delivered",
         "flight delayed two hours", "牙医 预约 周四"]


def rows(embedder: FakeEmbedder, start: int = 1, audience=None) -> list[IndexRow]:
    vecs = embedder.embed(TEXTS)
    return [IndexRow(start + i, t, audience, 1.0e9 + i, vecs[i]) for i, t in enumerate(TEXTS)]


def open_index(kind: str, path: Path, emb: FakeEmbedder):
    if kind == "dense":
        return HnswIndex(path, dims=emb.info.dims, model_key=emb.info.key(), cfg=IndexConfig())
    return TantivyIndex(path)


def query(kind: str, index, emb: FakeEmbedder, text: str, viewer: str = "ana", k: int = 3):
    if kind == "dense":
        return index.search(emb.embed_query(text), viewer, k)
    return index.search(text, viewer, k)


@pytest.fixture(params=["dense", "sparse"])
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
    if kind == "dense":  # audiences live in SQLite: until described, nobody sees a label
        assert query(kind, again, emb, "grandma dinner") == []
        again.describe(rows(emb))
    assert query(kind, again, emb, "grandma dinner") == top
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


@pytest.mark.parametrize("damage", ["truncate", "garbage", "delete"])
def test_damaged_files_are_detected(kind: str, damage: str, tmp_path: Path) -> None:
    emb = FakeEmbedder()
    index = open_index(kind, tmp_path, emb)
    index.add(rows(emb))
    index.close()
    files = [tmp_path / "dense.hnsw"] if kind == "dense" else sorted(
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
