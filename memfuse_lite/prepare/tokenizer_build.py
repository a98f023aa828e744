"""Build a ``tokenizer.json`` (XLM-R style Unigram) from a vocabulary and its scores."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors


def build_unigram_tokenizer(
    pieces: Sequence[str], scores: Sequence[float], *, unk_id: int, bos: str = "<s>",
    eos: str = "</s>",
) -> Tokenizer:
    """An XLM-R tokenizer: NFKC, collapsed spaces, Metaspace, ``<s> $A </s>``."""
    vocab = [(p, float(s)) for p, s in zip(pieces, scores, strict=True)]
    tok = Tokenizer(models.Unigram(vocab, unk_id=unk_id, byte_fallback=False))
    tok.normalizer = normalizers.Sequence(
        [normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")]
    )
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    bos_id, eos_id = pieces.index(bos), pieces.index(eos)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, bos_id), (eos, eos_id)],
    )
    specials = [p for p in pieces[:4] if p.startswith("<")] + (
        ["<mask>"] if "<mask>" in pieces else []
    )
    tok.add_special_tokens(specials)
    return tok


def save_tokenizer(tok: Tokenizer, directory: Path) -> Path:
    """Write ``tokenizer.json`` into ``directory``."""
    path = Path(directory) / "tokenizer.json"
    tok.save(str(path))
    return path
