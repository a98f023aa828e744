"""Text → BM25 tokens: jieba's words (search mode) for Chinese, lowercase words for the rest.

Chinese runs are cut by jieba-rs (``rjieba``: jieba's dictionary and algorithm, compiled:
about twenty times faster than the Python package, and half its memory); everything
between them is split into words as in any other text, so a Latin word, number or code
inside a Chinese sentence gives the same tokens as anywhere else.

tantivy-py cannot call a Python tokenizer, so documents and queries are tokenised
here and indexed into a whitespace-analysed field.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Callable, Iterable
from types import ModuleType

import tantivy

_CJK_CHARS = "\u3400-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"
_CJK = re.compile(f"[{_CJK_CHARS}]")
_CJK_RUN = re.compile(f"[{_CJK_CHARS}]+")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STEMMER = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).filter(
    tantivy.Filter.stemmer("english")).build()
_lock = threading.Lock()
_jieba: ModuleType | None = None


def _jieba_module() -> ModuleType:
    """jieba-rs, its dictionary loaded at the first Chinese text (~30 MB), not by
    a memory that never holds one."""
    global _jieba
    with _lock:
        if _jieba is None:
            import rjieba

            _jieba = rjieba
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
    cut: Callable[[str], list[str]] = jieba.cut_for_search if search else jieba.cut
    tokens: list[str] = []
    at = 0
    for run in _CJK_RUN.finditer(text):
        tokens.extend(_WORD.findall(text, at, run.start()))
        tokens.extend(cut(run.group(0)))
        at = run.end()
    tokens.extend(_WORD.findall(text, at))
    return tokens


def stems(tokens: Iterable[str]) -> list[str]:
    """Tokens with English words reduced to their Snowball stem ("researching" and
    "research" meet); Chinese words and numbers pass unchanged."""
    return _STEMMER.analyze(" ".join(tokens))
