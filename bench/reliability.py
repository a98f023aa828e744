"""Reliability: crashes, corruption, fuzzed input, isolation and forgetting.

    python3 -m bench reliability [--kills 100] [--fuzz 3000] [--sections ...]

- crash: SIGKILL an ingesting, forgetting child ``--kills`` times (bench/crash.py);
- corruption: truncate, overwrite or delete each derived file and check that the memory
  rebuilds it on open (with a log line) and answers as before — exactly for the dense
  index; a long-lived tantivy index still counts deleted documents in its BM25 statistics
  until its segments merge, so a rebuilt one is compared with another rebuild (exact) and
  with the original (top-20 overlap); a damaged SQLite file must raise StoreCorrupt;
- fuzz: hypothesis-built observations, JSONL lines and queries (bench/fuzz.py);
- isolation: every question of the committed generated household as every user through
  every pipeline, ``show`` and ``ask`` (bench/isolation.py);
- forget: forget by source, user, time and id on that household, then check that no
  search, expansion, fused summary or ``show`` returns anything derived from it, and,
  after close, that no file holds a forgotten text, the text index counts none of their
  words and the dense index's file holds none of their vectors;
- multiprocess: an ingesting owner killed part-way while a second ingest hands its
  records over and searches read beside them (bench/multiprocess.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import shutil
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from memfuse_lite import LLM, MemFuse, MemFuseConfig, NotFound, Observation, StoreCorrupt
from memfuse_lite.timeutil import parse_ts

from .common import RESULTS, HashingEmbedder, write_result
from .crash import run_crashes
from .fuzz import fuzz
from .generate import SMALL, load
from .isolation import PIPELINES, RECORDER_CONFIG, check, recorder_llms
from .multiprocess import run_multiprocess

DAMAGE = [("dense.hnsw", "truncate"), ("dense.hnsw", "garbage"), ("dense.hnsw", "delete"),
          ("dense.json", "delete"), ("sparse", "truncate"), ("sparse", "garbage"),
          ("sparse", "delete"), ("sparse.json", "delete")]


class _Count(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.rebuilt = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.rebuilt += "rebuilt" in record.getMessage()


def household(path: Path, config: MemFuseConfig, llms: dict[str, LLM] | None = None
              ) -> tuple[MemFuse, list[dict[str, Any]]]:
    """The committed generated household, ingested (real embedder)."""
    mem = MemFuse(path, config=config, llms=llms)

    async def ingest() -> None:
        await mem.ingest_many([Observation.from_json(o)
                               for o in load(SMALL, "observations.jsonl")])
        await mem.flush()

    asyncio.run(ingest())
    return mem, load(SMALL, "questions.jsonl")


def answers(mem: MemFuse, questions: list[dict[str, Any]]) -> list[list[int]]:
    """Hit ids of each question (hybrid and fused) — what must survive a rebuild."""
    out = []
    for q in questions:
        now = parse_ts(q["now"])
        for pipeline in ("hybrid", "fused"):
            out.append([h.event_id for h in mem.search(q["text"], viewer=q["viewer"], now=now,
                                                       pipeline=pipeline).hits])
    return out


def _damage(root: Path, target: str, how: str) -> None:
    path = root / target
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix != ".lock") \
        if path.is_dir() else [path]
    rng = np.random.default_rng(0)
    for f in files:
        if how == "delete":
            f.unlink()
        elif how == "truncate":
            f.write_bytes(f.read_bytes()[: f.stat().st_size // 3])
        else:
            f.write_bytes(rng.bytes(max(64, f.stat().st_size)))


def corruption(work: Path, config: MemFuseConfig) -> dict[str, Any]:
    """Damage each derived file in turn; reopen; compare answers; damage SQLite last."""
    mem, questions = household(work / "c", config)
    qs = questions[:40]
    before = answers(mem, qs)
    mem.close()
    counter = _Count()
    logging.getLogger("memfuse_lite").addHandler(counter)
    cases = []
    rebuilt_reference: dict[str, list[list[int]]] = {}
    try:
        for target, how in DAMAGE:
            _damage(work / "c", target, how)
            counter.rebuilt = 0
            t0 = time.perf_counter()
            mem = MemFuse(work / "c", config=config)
            seconds = time.perf_counter() - t0
            after = answers(mem, qs)
            mem.close()
            kind = target.split(".")[0]
            reference = rebuilt_reference.setdefault(kind, after)
            overlap = float(np.mean([len(set(a) & set(b)) / max(1, len(set(a) | set(b)))
                                     for a, b in zip(after, before, strict=True)]))
            cases.append({"file": target, "damage": how, "rebuild_logged": counter.rebuilt > 0,
                          "same_results": after == before, "top20_jaccard": round(overlap, 4),
                          "same_as_other_rebuilds": after == reference,
                          "reopen_s": round(seconds, 2)})
            print(f"  {target} {how}: {cases[-1]}")
    finally:
        logging.getLogger("memfuse_lite").removeHandler(counter)
    db = work / "c" / "memfuse.db"
    raw = bytearray(db.read_bytes())
    raw[:100] = bytes(100)  # the header
    db.write_bytes(bytes(raw))
    for suffix in ("-wal", "-shm"):
        (work / "c" / f"memfuse.db{suffix}").unlink(missing_ok=True)
    try:
        MemFuse(work / "c", config=config).close()
        sqlite = "opened silently"
    except StoreCorrupt:
        sqlite = "StoreCorrupt"
    return {"cases": cases, "sqlite_header_zeroed": sqlite,
            "all_rebuilt_and_deterministic": all(c["rebuild_logged"]
                                                 and c["same_as_other_rebuilds"] for c in cases)}


def forgetting(mem: MemFuse, questions: list[dict[str, Any]], users: list[str]
               ) -> dict[str, Any]:
    """Forget four ways; afterwards nothing derived from the forgotten records shows."""
    with mem.engine.store.reading() as db:
        first = int(db.execute("SELECT min(id) FROM observations").fetchone()[0])
        before = {int(i): (str(t), np.frombuffer(v, np.float32).copy()) for i, t, v in
                  db.execute("SELECT id, text, embedding FROM events")}
    results = {
        "source=payment": mem.forget(source="payment"),
        f"user={users[-1]}": mem.forget(user=users[-1]),
        "before=2025-01-20": mem.forget(before="2025-01-20T00:00"),
        f"observation={first + 1}": mem.forget(observation=first + 1),
    }
    with mem.engine.store.reading() as db:
        events = {int(r[0]) for r in db.execute("SELECT id FROM events")}
    violations = 0
    checks = 0
    for q in questions:
        for viewer in users[:-1]:
            for pipeline in PIPELINES:
                result = mem.search(q["text"], viewer=viewer, pipeline=pipeline,
                                    now=parse_ts(q["now"]))
                for hit in result.hits:
                    checks += 1
                    p = hit.provenance
                    violations += hit.event_id not in events or any(
                        x.source == "payment" or x.user == users[-1]
                        or x.ts < "2025-01-20" for x in p)
                for fused in result.fused:
                    checks += 1
                    violations += any(m not in events for m in fused.member_ids)
                    try:
                        _, members, _ = mem.timeline(fused.id, viewer=viewer)
                        violations += any(e.id not in events for e in members)
                    except NotFound:
                        pass
    index_ok = mem.engine.dense.labels() == events == mem.engine.text.labels()
    live = {before[i][0] for i in events}
    gone = {text: vector for i, (text, vector) in before.items()
            if i not in events and text not in live}
    return {"forgets": {k: asdict(v) for k, v in results.items()}, "checks": checks,
            "violations": violations, "indexes_match_sqlite": index_ok,
            "_gone": gone, "_live": live}


def forgotten_on_disk(path: Path, gone: dict[str, np.ndarray], live: set[str]
                      ) -> dict[str, int]:
    """After forget and close: forgotten texts found in any file's bytes, their words
    (held by no live record) still counted by the text index, and their vectors still in
    the dense index's file (deleted points included)."""
    import hnswlib
    import tantivy

    from memfuse_lite.index.sparse import index_terms

    needles = [t.encode("utf-8") for t in gone if len(t) >= 12]
    traces = 0
    for file in path.rglob("*"):
        if file.is_file():
            raw = file.read_bytes()
            traces += sum(needle in raw for needle in needles)
    live_terms = {term for text in live for term in index_terms(text)}
    words = {term for text in gone for term in index_terms(text)} - live_terms
    searcher = tantivy.Index.open(str(path / "sparse")).searcher()
    terms_left = sum(searcher.doc_freq("text", w) > 0 for w in words)
    dense = hnswlib.Index(space="cosine", dim=len(next(iter(gone.values()))) if gone else 384)
    dense.load_index(str(path / "dense.hnsw"))
    labels = dense.get_ids_list()
    for label in labels:
        try:
            dense.unmark_deleted(label)
        except RuntimeError:  # not deleted
            continue
    stored = np.asarray(dense.get_items(labels), dtype=np.float32)
    stored /= np.maximum(np.linalg.norm(stored, axis=1, keepdims=True), 1e-12)
    vectors_left = 0
    for vector in gone.values():
        unit = vector / max(float(np.linalg.norm(vector)), 1e-12)
        vectors_left += bool(len(stored)) and float((stored @ unit).max()) > 0.9999
    return {"texts_checked": len(needles), "traces_in_files": traces,
            "words_checked": len(words), "words_still_indexed": terms_left,
            "vectors_checked": len(gone), "vectors_still_stored": vectors_left,
            "files_scanned": sum(1 for f in path.rglob("*") if f.is_file())}


def main(argv: list[str] | None = None) -> None:
    """CLI entry."""
    ap = argparse.ArgumentParser(prog="python3 -m bench reliability", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--fuzz", type=int, default=3000, help="examples per fuzzed input kind")
    ap.add_argument("--rounds", type=int, default=5, help="multiprocess rounds")
    ap.add_argument("--sections", nargs="+",
                    default=["crash", "corruption", "fuzz", "isolation", "forget",
                             "multiprocess"])
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="memfuse-reliability-"))
    config = MemFuseConfig()
    command = "python3 -m bench reliability " + " ".join(argv or [])
    previous = RESULTS / "reliability.json"
    # Sections run separately keep the others' figures; each section names its command.
    out: dict[str, Any] = json.loads(previous.read_text()) if previous.exists() else {}
    out.pop("machine", None)
    out["command"] = command
    try:
        if "crash" in args.sections:
            print(f"crash: {args.kills} kills")
            t0 = time.perf_counter()
            report = run_crashes(work / "crash", args.kills, seed=0, progress=True)
            out["crash"] = {**asdict(report), "seconds": round(time.perf_counter() - t0, 1)}
            print(f"  {report}")
        if "corruption" in args.sections:
            print("corruption")
            out["corruption"] = corruption(work, config)
        if "fuzz" in args.sections:
            print(f"fuzz: {args.fuzz} examples per kind")
            mem = MemFuse(work / "fuzz", embedder=HashingEmbedder())
            out["fuzz"] = fuzz(mem, work, args.fuzz)
            mem.close()
            print(f"  {out['fuzz']}")
        if "isolation" in args.sections or "forget" in args.sections:
            mem, questions = household(work / "h", replace(config, **RECORDER_CONFIG),
                                       recorder_llms())
            users = sorted({o["user"] for o in load(SMALL, "observations.jsonl")})
            if "isolation" in args.sections:
                print("isolation")
                report = check(mem, questions, users)
                out["isolation"] = {**asdict(report), "leaks": report.leaks,
                                    "questions": len(questions), "users": users}
                print(f"  {report.searches} searches, {report.asks} asks, {report.shows} "
                      f"shows: {report.leaks} leaks")
            forgot = None
            if "forget" in args.sections:
                print("forget")
                forgot = forgetting(mem, questions, users)
                print(f"  {forgot['checks']} checks, {forgot['violations']} violations")
            mem.close()
            if forgot is not None:
                gone, live = forgot.pop("_gone"), forgot.pop("_live")
                forgot["on_disk"] = forgotten_on_disk(work / "h", gone, live)
                out["forget"] = forgot
                print(f"  on disk after close: {forgot['on_disk']}")
        if "multiprocess" in args.sections:
            print(f"multiprocess: {args.rounds} rounds")
            rows = load(SMALL, "observations.jsonl")
            report = run_multiprocess(work / "multi", rows, args.rounds,
                                      ["--model-dir", str(config.model_dir), "--tz", "UTC"])
            out["multiprocess"] = asdict(report)
            print(f"  {report}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for section in args.sections:
        if isinstance(out.get(section), dict):
            out[section]["command"] = command
    write_result("reliability", out)
