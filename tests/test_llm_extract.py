"""Optional LLM refinement of extraction and LLM arbitration of fusion, through the real
local model (smollm2: fast and weak, so only the plumbing and accounting are asserted)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from memfuse_lite import MemFuse, MemFuseConfig
from memfuse_lite.config import FusionConfig, IngestConfig

from .scenarios import GRANDMA, observations


def test_llm_extraction_and_arbitration_count_tokens(tmp_path: Path, model_dir: Path,
                                                     embedder) -> None:
    config = MemFuseConfig(
        model_dir=model_dir, extract_llm="smollm2-135m", fusion_llm="smollm2-135m",
        summary_llm="smollm2-135m",
        llm_ctx=1024, ingest=IngestConfig(batch_size=8),
        # an ambiguous band covering everything, so arbitration is exercised
        fusion=FusionConfig(scorer="rules", join_threshold=1.4, ambiguous_threshold=0.0))
    mem = MemFuse(tmp_path / "m", config=config, embedder=embedder)

    async def run() -> None:
        for obs in observations(GRANDMA):
            await mem.ingest(obs)
        await mem.flush()

    asyncio.run(run())
    usage = mem.llm_usage()
    assert usage["extract"].calls == len(GRANDMA)
    assert usage["extract"].prompt_tokens > 50 * len(GRANDMA)
    assert usage["fuse"].calls == mem.engine.fusion.llm_calls >= 1
    stats = mem.stats()
    assert stats["events"] == len(GRANDMA) and stats["dead_letters"] == 0
    # the rule-based time survives whatever the small model says
    ev = mem.get_event(1)
    assert ev.event_start is not None
    assert len(mem.engine.llms) == 1, "one model instance serves every task"
    fid = mem.fused_of(1)
    assert fid is not None
    for viewer in ("ana", "ben"):
        summary = mem.get_fused(fid, viewer=viewer).summary
        assert summary and mem.get_fused(fid, viewer=viewer).summary == summary  # cached
    assert mem.llm_usage()["summary"].calls >= 1
    mem.close()
