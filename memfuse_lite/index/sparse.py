"""Sparse index: tantivy BM25 over pre-tokenised text (jieba + lowercase words).

The ``text`` field uses tantivy's whitespace analyser over tokens made by
:func:`tokenize`; queries are built as term queries (never parsed), so no user text can
be read as query syntax. Visibility is a filter clause on the ``aud`` field.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Sequence
from pathlib import Path

import tantivy

from ..store.sqlite import IndexRow
from .base import DerivedIndex, IndexFilter, log, read_sidecar, write_sidecar
from .tokenize import tokenize

FORMAT = 3
HOUSEHOLD = "*"


def _schema() -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    sb.add_integer_field("event_id", stored=True, indexed=True, fast=True)
    sb.add_text_field("text", stored=False, tokenizer_name="whitespace")
    sb.add_text_field("aud", stored=False, tokenizer_name="raw")
    sb.add_float_field("when", stored=False, indexed=True, fast=True)
    sb.add_float_field("ts", stored=False, indexed=True, fast=True)
    sb.add_text_field("user", stored=False, tokenizer_name="raw")
    sb.add_text_field("source", stored=False, tokenizer_name="raw")
    return sb.build()


class TantivyIndex(DerivedIndex):
    """BM25 over event texts, filtered by audience inside the query."""

    name = "sparse"

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory) / "sparse"
        self.sidecar = Path(directory) / "sparse.json"
        self.schema = _schema()
        self._lock = threading.Lock()
        self.watermark = 0
        meta = read_sidecar(self.sidecar)
        reason = None
        if meta is None or meta.get("format") != FORMAT:
            reason = "no usable sidecar"
        else:
            try:
                self._open(create=False)
                if len(self) != int(meta["docs"]):
                    raise ValueError(f"holds {len(self)} documents, its sidecar says "
                                     f"{meta['docs']}")
                self.watermark = int(meta["watermark"])
                return
            except (ValueError, OSError, KeyError) as exc:
                reason = f"cannot open: {exc}"
        if self.dir.exists() or meta is not None:
            log.warning("sparse index at %s will be rebuilt from SQLite: %s", self.dir, reason)
        self.rebuilt_reason = reason
        self._open(create=True)

    def _open(self, *, create: bool) -> None:
        if create:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.sidecar.unlink(missing_ok=True)
            self.dir.mkdir(parents=True)
        elif not self.dir.exists():
            raise OSError("index directory missing")
        self.index = tantivy.Index(self.schema, path=str(self.dir), reuse=not create)
        self.writer = self.index.writer(heap_size=32_000_000, num_threads=1)
        self.index.reload()
        # A probe search: a damaged index fails here rather than at the first query.
        self.index.searcher().search(tantivy.Query.all_query(), 1)

    def reset(self) -> None:
        """Drop everything."""
        with self._lock:
            self.writer.delete_all_documents()
            self.writer.commit()
            self.index.reload()
            self.watermark = 0
            self._write_sidecar()

    def add(self, rows: Sequence[IndexRow]) -> None:
        """Add or replace documents and commit."""
        if not rows:
            return
        with self._lock:
            for r in rows:
                self.writer.delete_documents_by_term("event_id", r.id)
                doc = tantivy.Document()
                doc.add_integer("event_id", r.id)
                doc.add_text("text", " ".join(tokenize(r.text)))
                for a in r.audience or (HOUSEHOLD,):
                    doc.add_text("aud", a)
                doc.add_float("when", float(r.when_epoch))
                doc.add_float("ts", float(r.ts_epoch))
                doc.add_text("user", r.user)
                doc.add_text("source", r.source)
                self.writer.add_document(doc)
            self.writer.commit()
            self.index.reload()
            self.watermark = max(self.watermark, max(r.id for r in rows))
            self._write_sidecar()

    def upsert_fused(self, docs: Sequence[tuple[int, str, float]]) -> None:
        """Index fused memories as documents (id ``-fused_id``): the household-visible
        members' texts, so a question can match an episode as a whole."""
        if not docs:
            return
        with self._lock:
            for fid, text, when in docs:
                self.writer.delete_documents_by_term("event_id", -fid)
                if not text.strip():
                    continue
                doc = tantivy.Document()
                doc.add_integer("event_id", -fid)
                doc.add_text("text", " ".join(tokenize(text)))
                doc.add_text("aud", HOUSEHOLD)
                doc.add_float("when", float(when))
                doc.add_float("ts", float(when))
                self.writer.add_document(doc)
            self.writer.commit()
            self.index.reload()
            self._write_sidecar()

    def remove_fused(self, ids: Sequence[int]) -> None:
        """Drop fused-memory documents."""
        self.remove([-i for i in ids])

    def remove(self, ids: Sequence[int]) -> None:
        """Delete documents by event id."""
        with self._lock:
            for i in ids:
                self.writer.delete_documents_by_term("event_id", int(i))
            self.writer.commit()
            self.index.reload()
            self._write_sidecar()

    def _write_sidecar(self) -> None:
        write_sidecar(self.sidecar, {"format": FORMAT, "watermark": self.watermark,
                                     "docs": len(self)})

    def __len__(self) -> int:
        return int(self.index.searcher().num_docs)

    def labels(self) -> set[int]:
        """Every indexed event id (used to check consistency with the store)."""
        searcher = self.index.searcher()
        n = searcher.num_docs
        if n == 0:
            return set()
        res = searcher.search(tantivy.Query.all_query(), n)
        return {i for i in (int(searcher.doc(addr)["event_id"][0]) for _, addr in res.hits)
                if i > 0}

    def event_count(self) -> int:
        """Event documents (fused-memory documents not counted)."""
        query = tantivy.Query.range_query(self.schema, "event_id", tantivy.FieldType.Integer, 1,
                                          None, use_inverted_index=True)
        # tantivy-py's stubs lack SearchResult.count, which it has
        return int(self.index.searcher().search(query, 1, count=True).count)  # type: ignore[attr-defined]

    def fused_ids(self) -> set[int]:
        """Fused memories that have a document."""
        searcher = self.index.searcher()
        n = searcher.num_docs
        if n == 0:
            return set()
        res = searcher.search(tantivy.Query.all_query(), n)
        return {-i for i in (int(searcher.doc(addr)["event_id"][0]) for _, addr in res.hits)
                if i < 0}

    def search(self, text: str, viewer: str, k: int,
               where: IndexFilter | None = None) -> list[tuple[int, float]]:
        """BM25 top-k events the viewer may see within ``where``, as (event id, score)."""
        tokens = list(dict.fromkeys(tokenize(text)))
        if not tokens or k <= 0:
            return []
        terms = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(self.schema, "text", t))
             for t in tokens]
        )
        audience = tantivy.Query.const_score_query(
            tantivy.Query.term_set_query(self.schema, "aud", [HOUSEHOLD, viewer]), 0.0
        )
        clauses = [(tantivy.Occur.Must, terms), (tantivy.Occur.Must, audience)]
        clauses += [(tantivy.Occur.Must, tantivy.Query.const_score_query(f, 0.0))
                    for f in self._filters(where)]
        query = tantivy.Query.boolean_query(clauses)
        with self._lock:
            searcher = self.index.searcher()
            res = searcher.search(query, k)
            return [(int(searcher.doc(addr)["event_id"][0]), float(score))
                    for score, addr in res.hits]

    def search_events(self, text: str, viewer: str, k: int,
                      where: IndexFilter | None = None) -> list[tuple[int, float]]:
        """Like :meth:`search`, events only."""
        return [(i, s) for i, s in self.search(text, viewer, 2 * k, where) if i > 0][:k]

    def _filters(self, where: IndexFilter | None) -> list[tantivy.Query]:
        if where is None:
            return []
        out = []
        if where.start is not None or where.end is not None:
            out.append(tantivy.Query.range_query(
                self.schema, "when", tantivy.FieldType.Float, where.start, where.end))
        if where.observed_before is not None:
            out.append(tantivy.Query.range_query(
                self.schema, "ts", tantivy.FieldType.Float, None, where.observed_before))
        if where.users is not None:
            out.append(tantivy.Query.term_set_query(self.schema, "user", sorted(where.users)))
        if where.sources is not None:
            out.append(tantivy.Query.term_set_query(self.schema, "source",
                                                    sorted(where.sources)))
        return out

    def persist(self) -> None:
        """Commits happen per batch; only the sidecar needs writing."""
        with self._lock:
            self._write_sidecar()

    def close(self) -> None:
        """Commit and release the writer lock."""
        with self._lock:
            self.writer.commit()
            self.writer.wait_merging_threads()
            self._write_sidecar()
