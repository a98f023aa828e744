"""Sparse index: tantivy BM25 over pre-tokenised text (jieba + lowercase words).

Two kinds of document share the index: events, and fused memories as whole documents
(the household-visible members' texts), told apart by the ``kind`` field and keyed by
``key`` (``e:<id>`` / ``f:<id>``). The ``text`` field uses tantivy's whitespace analyser over tokens made by
:func:`tokenize`; queries are built as term queries (never parsed), so no user text can
be read as query syntax. Visibility is a filter clause on the ``aud`` field.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import tantivy

from ..event import EventRecord
from ..text.tokens import stems, tokenize
from .base import (
    EVENT,
    FUSED,
    DocKind,
    IndexFilter,
    TextHit,
    TextIndex,
    log,
    read_sidecar,
    write_sidecar,
)

FORMAT = 9  # 6: English words stemmed; 7: kind and id read from a fast field; 8: jieba-rs;
# 9: every field stored (forget writes a segment's other documents again from them)
HOUSEHOLD = "*"
HIDDEN_MOST = 4096
"""Up to this many documents hidden from a viewer (other users' private records), a
search ranks by the terms alone and passes over them (see ``TantivyIndex.search``);
with more, reading their addresses at each commit costs more than it saves, and the
filter stays inside the query."""
TIE_SLACK = 128
"""Documents read beyond the k asked for (more while they tie with the k-th), so that of
several with the k-th score the lowest ids are kept whatever order the segments are in.
Each shortfall runs the whole search again: short texts recorded many times (a recurring
call or reminder) tie in long runs, and with 8 the fused searches of a 100k household
memory ran 1.8 tantivy searches per call; with 128 one, and the same hits."""
_PREFIX: dict[DocKind, str] = {EVENT: "e", FUSED: "f"}


def index_terms(text: str) -> list[str]:
    """The index terms of a text: its tokens, English words reduced to their stem
    ("researching" and "research" meet; Chinese words and numbers pass unchanged)."""
    return stems(tokenize(text))


def _key(kind: DocKind, doc_id: int) -> str:
    return f"{_PREFIX[kind]}:{doc_id}"


def _code(kind: DocKind, doc_id: int) -> int:
    """A document's kind and id as one number (its ``code`` fast field)."""
    return 2 * doc_id + (kind == FUSED)


def _decode(code: int) -> tuple[DocKind, int]:
    return (FUSED if code % 2 else EVENT), code // 2


def _hits(searcher: tantivy.Searcher, addresses: list[tantivy.DocAddress]
          ) -> list[tuple[DocKind, int]]:
    """(kind, id) of each found document, in order, read from the ``code`` column (every
    document of this format has one)."""
    codes = searcher.fast_field_values("code", addresses)
    if any(code is None for code in codes):
        raise ValueError("sparse index documents without a code: rebuild the index")
    return [_decode(int(code)) for code in codes if code is not None]


def _schema() -> tantivy.Schema:
    # Every field is stored as well: forgetting writes the documents that shared a segment
    # with a forgotten one again as they are (:meth:`TantivyIndex.erase_documents`), three
    # to four times faster than from SQLite with its text tokenised anew. Searches never
    # read them: what they read back is the ``code`` column.
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("key", stored=True, tokenizer_name="raw")  # to delete by
    sb.add_unsigned_field("code", stored=True, fast=True)
    sb.add_text_field("kind", stored=True, tokenizer_name="raw")
    sb.add_text_field("text", stored=True, tokenizer_name="whitespace")
    sb.add_text_field("aud", stored=True, tokenizer_name="raw")
    sb.add_float_field("when", stored=True, indexed=True, fast=True)
    sb.add_float_field("ts", stored=True, indexed=True, fast=True)
    sb.add_text_field("user", stored=True, tokenizer_name="raw")
    sb.add_text_field("source", stored=True, tokenizer_name="raw")
    return sb.build()


class TantivyIndex(TextIndex):
    """BM25 over event texts, filtered by audience inside the query."""

    name = "sparse"

    def __init__(self, directory: Path, commit_every_s: float = 1.0) -> None:
        """``commit_every_s``: the shortest interval between commits while ingesting
        (see :meth:`add`)."""
        self.dir = Path(directory) / "sparse"
        self.sidecar = Path(directory) / "sparse.json"
        self.schema = _schema()
        self.commit_every_s = commit_every_s
        self._lock = threading.Lock()
        self._pending = False  # writer changes not committed yet (see _searcher)
        # read of the index's state, until the next reload (see _reload)
        self._hidden: dict[str, frozenset[tuple[int, int]] | None] = {}
        self._asked: set[str] = set()
        self._newest: float | None = None  # the newest document's ts (None: no document)
        self._newest_read = False
        self._last_commit = time.monotonic()
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
                self._release()  # its writer must not write into what is rebuilt
        if self.dir.exists() or meta is not None:
            log.warning("sparse index at %s will be rebuilt from SQLite: %s", self.dir, reason)
        self.rebuilt_reason = reason
        self._open(create=True)

    def _release(self) -> None:
        """Let go of a half-opened index: its writer's threads stop and its lock goes."""
        writer = self.__dict__.pop("writer", None)
        self.__dict__.pop("index", None)
        if writer is not None:
            with contextlib.suppress(Exception):  # whatever state the damage left it in
                writer.wait_merging_threads()

    def _open(self, *, create: bool) -> None:
        if create:
            for _ in range(3):  # a writer's thread that was still ending may add a file
                shutil.rmtree(self.dir, ignore_errors=True)
                if not self.dir.exists():
                    break
            self.sidecar.unlink(missing_ok=True)
            self.dir.mkdir(parents=True, exist_ok=True)
        elif not self.dir.exists():
            raise OSError("index directory missing")
        self.index = tantivy.Index(self.schema, path=str(self.dir), reuse=not create)
        # searches see what the last reload() showed them, never a merge that finished
        # meanwhile: what is cached per commit (see _hidden_from) stays true until then
        self.index.config_reader(reload_policy="Manual")
        self.writer = self.index.writer(heap_size=32_000_000, num_threads=1)
        self._reload()
        # A probe search: a damaged index fails here rather than at the first query.
        self.index.searcher().search(tantivy.Query.all_query(), 1)

    def reset(self) -> None:
        """Drop everything."""
        with self._lock:
            self.writer.delete_all_documents()
            self.writer.commit()
            self._reload()
            self._pending = False
            self.watermark = 0
            self._write_sidecar()

    def _document(self, kind: DocKind, doc_id: int) -> tantivy.Document:
        self.writer.delete_documents_by_term("key", _key(kind, doc_id))
        doc = tantivy.Document()
        doc.add_text("key", _key(kind, doc_id))
        doc.add_text("kind", kind)
        doc.add_unsigned("code", _code(kind, doc_id))
        return doc

    def add(self, rows: Sequence[EventRecord]) -> None:
        """Add or replace event documents, with any fused-document changes left
        uncommitted. They are committed once ``commit_every_s`` has passed since the last
        commit, or before the next search, count or :meth:`persist`, whichever comes
        first: a search never misses an added event, and a stream of small batches does
        not pay a commit each (what a crash loses is caught up from SQLite, above the
        watermark the last commit recorded)."""
        if not rows:
            if self._pending:
                with self._lock:
                    self._commit(now=self._due())
            return
        with self._lock:
            for r in rows:
                doc = self._document(EVENT, r.id)
                doc.add_text("text", " ".join(index_terms(r.text)))
                for a in r.audience or (HOUSEHOLD,):
                    doc.add_text("aud", a)
                doc.add_float("when", float(r.when_epoch))
                doc.add_float("ts", float(r.ts_epoch))
                doc.add_text("user", r.user)
                doc.add_text("source", r.source)
                self.writer.add_document(doc)
            self.watermark = max(self.watermark, max(r.id for r in rows))
            self._commit(now=self._due())

    def _due(self) -> bool:
        return time.monotonic() - self._last_commit >= self.commit_every_s

    def upsert_fused(self, docs: Sequence[tuple[int, str, float]], *,
                     commit: bool = True) -> None:
        """Index fused memories as documents: the household-visible members' texts, so
        a question can match an episode as a whole (an empty text removes the document).
        ``commit=False`` leaves the change for the next :meth:`add` to commit."""
        if not docs:
            return
        with self._lock:
            for fid, text, when in docs:
                if not text.strip():
                    self.writer.delete_documents_by_term("key", _key(FUSED, fid))
                    continue
                doc = self._document(FUSED, fid)
                doc.add_text("text", " ".join(index_terms(text)))
                doc.add_text("aud", HOUSEHOLD)
                doc.add_float("when", float(when))
                doc.add_float("ts", float(when))
                self.writer.add_document(doc)
            self._commit(now=commit)

    def remove_fused(self, ids: Sequence[int], *, commit: bool = True) -> None:
        """Drop fused-memory documents (``commit=False``: as in :meth:`upsert_fused`)."""
        self._remove(FUSED, ids, commit=commit)

    def remove(self, ids: Sequence[int]) -> None:
        """Delete event documents."""
        self._remove(EVENT, ids)

    def _remove(self, kind: DocKind, ids: Sequence[int], commit: bool = True) -> None:
        if not ids:
            return
        with self._lock:
            for i in ids:
                self.writer.delete_documents_by_term("key", _key(kind, int(i)))
            self._commit(now=commit)

    def erase_documents(self, events: Sequence[int], fused: Sequence[int]) -> None:
        """Delete these event and fused-memory documents so that nothing of them stays in
        the index's files, in one commit. A deleted document stays in its segment — its
        words in the term dictionary, its count in their statistics — until the segment is
        written again, and tantivy drops a segment whose documents are all deleted: so the
        other documents of their segments are written again, as stored, and the old
        segments go whole (their files at :meth:`erase`)."""
        keys = {_key(EVENT, int(i)) for i in events} | {_key(FUSED, int(i)) for i in fused}
        if not keys:
            return
        with self._lock:
            searcher = self._searcher()
            ordered = sorted(keys)
            segments: set[int] = set()
            for start in range(0, len(ordered), 512):
                chunk = ordered[start : start + 512]
                query = tantivy.Query.boolean_query(
                    [(tantivy.Occur.Should, tantivy.Query.term_query(self.schema, "key", k))
                     for k in chunk])
                segments.update(a.segment_ord for _, a in searcher.search(query, len(chunk)).hits)
            if segments:
                everything = searcher.search(tantivy.Query.all_query(), searcher.num_docs)
                for _, address in everything.hits:
                    if address.segment_ord not in segments:
                        continue
                    doc = searcher.doc(address)
                    key = str(doc["key"][0])
                    if key not in keys:  # written again: the copy replaces the original
                        self.writer.delete_documents_by_term("key", key)
                        self.writer.add_document(doc)
            for key in ordered:
                self.writer.delete_documents_by_term("key", key)
            self._commit()

    def erase(self) -> None:
        """Commit, and delete the files of segments no document lives in any more."""
        with self._lock:
            self._commit()
            self.writer.garbage_collect_files()

    def _commit(self, now: bool = True) -> None:
        """Commit what the writer holds and show it to searches (``now=False``: later)."""
        if not now:
            self._pending = True
            return
        self.writer.commit()
        self._reload()
        self._pending = False
        self._last_commit = time.monotonic()
        self._write_sidecar()

    def _searcher(self) -> tantivy.Searcher:
        """A searcher over everything added (what is pending is committed first; call
        with the lock held)."""
        if self._pending:
            self._commit()
        return self.index.searcher()

    def _write_sidecar(self) -> None:
        write_sidecar(self.sidecar, {"format": FORMAT, "watermark": self.watermark,
                                     "docs": int(self.index.searcher().num_docs)})

    def __len__(self) -> int:
        with self._lock:
            return int(self._searcher().num_docs)

    def _ids(self, kind: DocKind) -> set[int]:
        with self._lock:
            searcher = self._searcher()
        query = tantivy.Query.term_query(self.schema, "kind", kind)
        n = searcher.num_docs
        if n == 0:
            return set()
        res = searcher.search(query, n)
        return {doc_id for _, doc_id in _hits(searcher, [addr for _, addr in res.hits])}

    def labels(self) -> set[int]:
        """Every indexed event id (used to check consistency with the store)."""
        return self._ids(EVENT)

    def fused_ids(self) -> set[int]:
        """Fused memories that have a document."""
        return self._ids(FUSED)

    def event_count(self) -> int:
        """Event documents (fused-memory documents not counted)."""
        query = tantivy.Query.term_query(self.schema, "kind", EVENT)
        with self._lock:
            searcher = self._searcher()
        # tantivy-py's stubs lack SearchResult.count, which it has
        return int(searcher.search(query, 1, count=True).count)  # type: ignore[attr-defined]

    def terms_of(self, text: str) -> frozenset[str]:
        return frozenset(index_terms(text))

    def search(self, text: str, viewer: str, k: int, where: IndexFilter | None = None,
               kinds: Sequence[DocKind] = (EVENT,)) -> list[TextHit]:
        """BM25 top-k documents of ``kinds`` the viewer may see within ``where`` (a
        function of the text's :meth:`terms_of`: its terms are summed in one order)."""
        tokens = sorted(self.terms_of(text))
        if not tokens or k <= 0 or not kinds:
            return []
        terms = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(self.schema, "text", t))
             for t in tokens]
        )
        with self._lock:
            searcher = self._searcher()
            where = self._without_void_bound(searcher, where)
            # fused-memory documents alone are too few near the top to pass over the rest
            hidden = self._hidden_from(searcher, viewer) \
                if where is None and EVENT in kinds else None
            if hidden is None:
                kept, found = self._top(searcher, self._filtered(terms, viewer, where, kinds),
                                        k)
            else:
                # the terms alone are ranked by tantivy's block-max WAND, which skips what
                # cannot reach the top; a filter inside the query has every document the
                # terms reach scored (over twice as slow on a long question)
                wanted = set(kinds)
                kept, found = self._top(
                    searcher, terms, k, lambda addr, doc: doc[0] in wanted
                    and (addr.segment_ord, addr.doc) not in hidden)
        hits = [TextHit(kind, doc_id, float(score))
                for (score, _), (kind, doc_id) in zip(kept, found, strict=True)]
        # equal scores (the same text recorded twice) in id order, not in the order of
        # the segments, which a commit may list differently
        return sorted(hits, key=lambda h: (-h.score, h.kind, h.id))[:k]

    def _filtered(self, terms: tantivy.Query, viewer: str, where: IndexFilter | None,
                  kinds: Sequence[DocKind]) -> tantivy.Query:
        """``terms`` among the documents of ``kinds`` the viewer may see within
        ``where``, the filters inside the query (they add nothing to a score)."""
        audience = tantivy.Query.const_score_query(
            tantivy.Query.term_set_query(self.schema, "aud", [HOUSEHOLD, viewer]), 0.0
        )
        clauses = [(tantivy.Occur.Must, terms), (tantivy.Occur.Must, audience)]
        # Every document is an event or a fused memory: both kinds need no clause, and
        # events alone are found by leaving out the fewer fused-memory documents (a
        # clause every event matches would be checked for each one the terms reach)
        if set(kinds) == {EVENT}:
            clauses.append((tantivy.Occur.MustNot,
                            tantivy.Query.term_query(self.schema, "kind", FUSED)))
        elif set(kinds) == {FUSED}:
            clauses.append((tantivy.Occur.Must, tantivy.Query.const_score_query(
                tantivy.Query.term_query(self.schema, "kind", FUSED), 0.0)))
        clauses += [(tantivy.Occur.Must, tantivy.Query.const_score_query(f, 0.0))
                    for f in self._filters(where)]
        return tantivy.Query.boolean_query(clauses)

    @staticmethod
    def _top(searcher: tantivy.Searcher, query: tantivy.Query, k: int,
             passes: Callable[[tantivy.DocAddress, tuple[DocKind, int]], bool] | None = None
             ) -> tuple[list[tuple[float, tantivy.DocAddress]], list[tuple[DocKind, int]]]:
        """The top ``k`` hits of ``query`` that ``passes`` (all when None) and every one
        tied with the k-th, with their (kind, id): reads further down the ranking until
        ``k`` pass and the last one read ranks below the k-th, so that every tie is seen."""
        wanted = k + TIE_SLACK
        while True:
            res = searcher.search(query, wanted, count=False)
            kept = res.hits
            if passes is not None:  # (kind, id) read for every hit only to check them
                kept = [hit for hit, doc in zip(
                    kept, _hits(searcher, [addr for _, addr in kept]), strict=True)
                    if passes(hit[1], doc)]
            if len(res.hits) < wanted or (
                    len(kept) >= k and res.hits[-1][0] < kept[k - 1][0]):
                break
            wanted *= 2
        if len(kept) > k:  # only the ties with the k-th compete for its place
            kept = [hit for hit in kept if hit[0] >= kept[k - 1][0]]
        return kept, _hits(searcher, [addr for _, addr in kept])

    def _without_void_bound(self, searcher: tantivy.Searcher, where: IndexFilter | None
                            ) -> IndexFilter | None:
        """``where`` without an ``observed_before`` that every document meets (a question
        asked now), None when nothing else is left. Call holding the lock."""
        if where is None or where.observed_before is None:
            return where
        if not self._newest_read:
            top = searcher.search(tantivy.Query.all_query(), 1, count=False,
                                  order_by_field="ts").hits
            self._newest, self._newest_read = (float(top[0][0]) if top else None), True
        if self._newest is not None and where.observed_before < self._newest:
            return where
        rest = replace(where, observed_before=None)
        if (rest.start, rest.end, rest.users, rest.sources) == (None, None, None, None):
            return None
        return rest

    def _hidden_from(self, searcher: tantivy.Searcher, viewer: str
                     ) -> frozenset[tuple[int, int]] | None:
        """The (segment, document) addresses of documents ``viewer`` may not see, read at
        their second search since the last commit and kept until the next one (a search
        per commit, as while importing, never pays for it); None until then, or when they
        are more than :data:`HIDDEN_MOST`. Call holding the lock."""
        if viewer in self._hidden:
            return self._hidden[viewer]
        if viewer not in self._asked:
            self._asked.add(viewer)
            return None
        seen = tantivy.Query.term_set_query(self.schema, "aud", [HOUSEHOLD, viewer])
        query = tantivy.Query.boolean_query([(tantivy.Occur.Must, tantivy.Query.all_query()),
                                             (tantivy.Occur.MustNot, seen)])
        # tantivy-py's stubs lack SearchResult.count, which it has
        n = int(searcher.search(query, 1, count=True).count)  # type: ignore[attr-defined]
        hidden: frozenset[tuple[int, int]] | None = None
        if n <= HIDDEN_MOST:
            hidden = frozenset((a.segment_ord, a.doc) for _, a in
                               searcher.search(query, max(n, 1), count=False).hits)
        self._hidden[viewer] = hidden
        return hidden

    def _reload(self) -> None:
        """Show searches the last commit, and forget what was read of the state before."""
        self.index.reload()
        self._hidden.clear()
        self._asked.clear()
        self._newest_read = False

    def _filters(self, where: IndexFilter | None) -> list[tantivy.Query]:
        if where is None:
            return []
        out = []
        if where.start is not None or where.end is not None:
            def within(field: str) -> tantivy.Query:
                return tantivy.Query.range_query(self.schema, field, tantivy.FieldType.Float,
                                                 where.start, where.end)

            said = [(tantivy.Occur.Must, within("ts"))]
            planned = sorted(where.scheduled)
            if planned:
                said.append((tantivy.Occur.MustNot, tantivy.Query.term_set_query(
                    self.schema, "source", planned)))
            out.append(tantivy.Query.boolean_query([
                (tantivy.Occur.Should, within("when")),
                (tantivy.Occur.Should, tantivy.Query.boolean_query(said))]))
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
        """Commit what is pending and record the watermark."""
        with self._lock:
            if self._pending:
                self._commit()
            else:
                self._write_sidecar()

    def close(self) -> None:
        """Commit what is pending and release the writer lock (a session that changed
        nothing leaves the index's files as they were)."""
        with self._lock:
            if self._pending:
                self._commit()
            self.writer.wait_merging_threads()
