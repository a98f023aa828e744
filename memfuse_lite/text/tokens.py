"""Text → BM25 tokens: jieba (search mode) for Chinese, lowercase words for the rest.

tantivy-py cannot call a Python tokenizer, so documents and queries are tokenised
here and indexed into a whitespace-analysed field.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections.abc import Iterable

import tantivy

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_lock = threading.Lock()
_jieba = None
_STEMMER = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).filter(
    tantivy.Filter.stemmer("english")).build()


def _jieba_module():
    global _jieba
    with _lock:
        if _jieba is None:
            import jieba

            jieba.setLogLevel(logging.WARNING)
            jieba.initialize()
            _jieba = jieba
    return _jieba


def words(text: str) -> list[str]:
    """Lowercased words; Chinese runs cut by jieba in its precise mode (each character in
    one word, unlike :func:`tokenize`'s overlapping search-mode pieces)."""
    return _cut(text, search=False)


def tokenize(text: str) -> list[str]:
    """Lowercased word tokens; Chinese runs are cut by jieba in search mode."""
    return _cut(text, search=True)


def _cut(text: str, *, search: bool) -> list[str]:
    text = unicodedata.normalize("NFKC", text).lower()
    if not _CJK.search(text):
        return _WORD.findall(text)
    jieba = _jieba_module()
    pieces = jieba.cut_for_search(text) if search else jieba.lcut(text)
    tokens: list[str] = []
    for piece in pieces:
        tokens.extend(_WORD.findall(piece))
    return tokens


def stems(tokens: Iterable[str]) -> list[str]:
    """Tokens with English words reduced to their Snowball stem ("researching" and
    "research" meet); Chinese words and numbers pass unchanged."""
    return _STEMMER.analyze(" ".join(tokens))
