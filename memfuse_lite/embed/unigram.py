"""A compact Unigram tokenizer for the XLM-R vocabulary ``memfuse models prepare`` builds.

The ``tokenizers`` library keeps a Unigram vocabulary of 250,002 pieces in a character trie
of about 270 MB; this module holds the same vocabulary in a dict and an array (about 40 MB)
and reproduces that tokenizer exactly: NFKC, runs of spaces collapsed, Metaspace words
("▁"-prefixed, split at spaces), Viterbi over piece scores with the same tie-breaking
(first best path found, pieces tried shortest first), unknown characters fused into one
``<unk>``, special tokens matched in the raw text, ``<s> … </s>``, truncation. It is used
only when ``tokenizer.json`` has exactly that structure (checked field by field);
``tests/test_models.py`` compares it with ``tokenizers`` on real texts.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import unicodedata
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..once import Recent

SPACE = "\u2581"
UNK_PENALTY = 10.0
"""``tokenizers`` scores an unknown character at the lowest piece score minus this."""
CACHE_WORDS = 10_000


class CompactUnigram:
    """``encode(text) -> ids`` with ``<s>``/``</s>`` and truncation to ``max_length``."""

    def __init__(self, pieces: dict[str, int], scores: array, *, unk_id: int, bos_id: int,
                 eos_id: int, specials: dict[str, int], max_length: int) -> None:
        self.pieces = pieces
        self.scores = scores
        self.unk_id = unk_id
        self.bos_id = bos_id
        self.eos_id = eos_id
        self.unk_score = min(scores) - UNK_PENALTY
        self.longest = max(len(p) for p in pieces)
        self.max_length = max_length
        self._specials = specials
        self._special_re = re.compile("|".join(re.escape(s) for s in sorted(
            specials, key=len, reverse=True))) if specials else None
        self._cache: Recent[str, tuple[int, ...]] = Recent(CACHE_WORDS)
        self._cache_lock = threading.Lock()  # ingestion and queries tokenise concurrently

    @classmethod
    def load(cls, path: Path, max_length: int, source_sha256: str | None = None
             ) -> CompactUnigram | None:
        """The tokenizer in ``path``, or None when it is not the structure reproduced here.
        With ``source_sha256`` (the file's checksum, already verified), the vocabulary is
        read from a compact copy beside it (:data:`COMPACT_FILE`, written at the first
        load) when that copy says it was made from this file and its own checksum holds:
        parsing the JSON is most of a first embedding's wait."""
        compact = path.with_name(COMPACT_FILE)
        if source_sha256 is not None:
            held = _read_compact(compact, source_sha256)
            if held is not None:
                return cls(**held, max_length=max_length)
        with open(path, encoding="utf-8") as f:
            spec = json.load(f)
        if not _is_reproducible(spec):
            return None
        vocab = spec["model"].pop("vocab")
        # Copies of the pieces, made once the parsed JSON is gone, fill fresh memory
        # instead of pinning the parser's half-empty blocks (about 40 MB less resident).
        scores = array("d", (float(score) for _, score in vocab))
        if any("\x00" in piece for piece, _ in vocab):
            copies = [piece for piece, _ in vocab]
            joined = None
        else:
            joined = "\x00".join(piece for piece, _ in vocab)
            del vocab
            copies = joined.split("\x00")
        pieces = _piece_ids(copies)
        del copies
        special_ids = {t["content"]: int(t["id"]) for t in spec["added_tokens"]}
        template = spec["post_processor"]["special_tokens"]
        bos, eos = spec["post_processor"]["single"][0], spec["post_processor"]["single"][-1]
        ids = {"unk_id": int(spec["model"]["unk_id"]),
               "bos_id": int(template[bos["SpecialToken"]["id"]]["ids"][0]),
               "eos_id": int(template[eos["SpecialToken"]["id"]]["ids"][0])}
        del spec
        if source_sha256 is not None and joined is not None:
            _write_compact(compact, source_sha256, joined, scores, ids, special_ids)
        del joined
        _release_freed_memory()
        return cls(pieces, scores, **ids, specials=special_ids, max_length=max_length)

    def encode(self, text: str) -> list[int]:
        """Token ids of one text, as ``tokenizers`` gives them."""
        ids: list[int] = []
        if self._special_re is None:
            parts: list[tuple[str, int | None]] = [(text, None)]
        else:
            parts, last = [], 0
            for m in self._special_re.finditer(text):
                parts.append((text[last:m.start()], None))
                parts.append(("", self._specials[m.group(0)]))
                last = m.end()
            parts.append((text[last:], None))
        for chunk, special in parts:
            if special is not None:
                ids.append(special)
            elif chunk:
                ids.extend(self._encode_plain(chunk))
        room = self.max_length - 2
        return [self.bos_id, *ids[:room], self.eos_id]

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """``encode`` of each text."""
        return [self.encode(t) for t in texts]

    def _encode_plain(self, text: str) -> list[int]:
        text = re.sub(" {2,}", " ", unicodedata.normalize("NFKC", text))
        if not text:
            return []
        text = text.replace(" ", SPACE)
        if not text.startswith(SPACE):
            text = SPACE + text
        out: list[int] = []
        start = 0
        for i in range(1, len(text)):
            if text[i] == SPACE:
                out.extend(self._word(text[start:i]))
                start = i
        out.extend(self._word(text[start:]))
        return out

    def _word(self, word: str) -> tuple[int, ...]:
        with self._cache_lock:
            hit = self._cache.get(word)
        if hit is not None:
            return hit
        ids = self._viterbi(word)
        with self._cache_lock:
            self._cache.put(word, ids)
        return ids

    def _viterbi(self, word: str) -> tuple[int, ...]:
        n = len(word)
        best: list[float | None] = [0.0] + [None] * n
        back: list[tuple[int, int]] = [(0, 0)] * (n + 1)
        pieces, scores, longest = self.pieces, self.scores, self.longest
        for start in range(n):
            here = best[start]
            if here is None:
                continue
            single = False
            for end in range(start + 1, min(n, start + longest) + 1):
                pid = pieces.get(word[start:end])
                if pid is None:
                    continue
                score = here + scores[pid]
                if best[end] is None or score > best[end]:
                    best[end], back[end] = score, (start, pid)
                if end == start + 1:
                    single = True
            if not single:
                score = here + self.unk_score
                if best[start + 1] is None or score > best[start + 1]:
                    best[start + 1], back[start + 1] = score, (start, self.unk_id)
        ids: list[int] = []
        pos = n
        while pos > 0:
            start, pid = back[pos]
            if not (pid == self.unk_id and ids and ids[-1] == self.unk_id):
                ids.append(pid)
            pos = start
        ids.reverse()
        return tuple(ids)


COMPACT_FILE = "tokenizer.compact"
"""The vocabulary of ``tokenizer.json`` in a form read without a JSON parser: a header
line (JSON: the source's and the payload's sha256, the special ids), the scores as
float64, then the pieces joined by NUL."""
COMPACT_VERSION = 1


def _piece_ids(pieces: Sequence[str]) -> dict[str, int]:
    """Each piece's id (the first, where a piece repeats)."""
    ids: dict[str, int] = {}
    for i, piece in enumerate(pieces):
        ids.setdefault(piece, i)
    return ids


def _write_compact(path: Path, source_sha256: str, joined: str, scores: array,
                   ids: dict[str, int], specials: dict[str, int]) -> None:
    """Write the compact copy (to a temporary name, renamed when complete); a model
    directory that cannot be written is left as it is."""
    payload = scores.tobytes() + joined.encode("utf-8")
    header = {"version": COMPACT_VERSION, "source_sha256": source_sha256,
              "payload_sha256": hashlib.sha256(payload).hexdigest(), "count": len(scores),
              "specials": specials, **ids}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(json.dumps(header).encode() + b"\n" + payload)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)


def _read_compact(path: Path, source_sha256: str) -> dict[str, Any] | None:
    """The tokenizer's arguments but ``max_length`` from the compact copy, or None when
    there is none, it was made from another file, or it does not hold together."""
    try:
        raw = path.read_bytes()
        line, _, payload = raw.partition(b"\n")
        header = json.loads(line)
        if header.get("version") != COMPACT_VERSION or \
                header.get("source_sha256") != source_sha256 or \
                hashlib.sha256(payload).hexdigest() != header.get("payload_sha256"):
            return None
        count = int(header["count"])
        scores = array("d")
        scores.frombytes(payload[: 8 * count])
        pieces = payload[8 * count:].decode("utf-8").split("\x00")
        if len(pieces) != count:
            return None
        return {"pieces": _piece_ids(pieces), "scores": scores,
                **{k: int(header[k]) for k in ("unk_id", "bos_id", "eos_id")},
                "specials": {str(k): int(v) for k, v in header["specials"].items()}}
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


def _release_freed_memory() -> None:
    """Give the parser's freed memory back to the system (glibc only; a no-op elsewhere)."""
    import ctypes
    import ctypes.util
    import gc

    gc.collect()
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        if libc is not None and hasattr(libc, "malloc_trim"):
            libc.malloc_trim(0)
    except OSError:
        pass


def _is_reproducible(spec: dict[str, Any]) -> bool:
    """Whether ``tokenizer.json`` is the structure ``prepare`` writes and this reproduces."""
    try:
        model, norm, pre = spec["model"], spec["normalizer"], spec["pre_tokenizer"]
        post = spec["post_processor"]
        steps = [(s["type"], s.get("pattern"), s.get("content")) for s in norm["normalizers"]]
        return (model["type"] == "Unigram" and not model.get("byte_fallback")
                and norm["type"] == "Sequence"
                and steps == [("NFKC", None, None), ("Replace", {"Regex": " {2,}"}, " ")]
                and pre == {"type": "Metaspace", "replacement": SPACE,
                            "prepend_scheme": "always", "split": True}
                and post["type"] == "TemplateProcessing"
                and [next(iter(x)) for x in post["single"]] == ["SpecialToken", "Sequence",
                                                                "SpecialToken"]
                and spec.get("truncation") is None and spec.get("padding") is None
                and all(t.get("special") and not t.get("normalized") for t in
                        spec["added_tokens"]))
    except (KeyError, TypeError, AttributeError):
        return False
