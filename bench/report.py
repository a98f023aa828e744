"""``python3 -m bench report``: render bench/RESULTS.md from bench/results/*.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .common import RESULTS

OUT = Path(__file__).resolve().parent / "RESULTS.md"


def _load() -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json"))}


def _machine(m: dict[str, Any]) -> str:
    commit = f", commit {m['commit']}" if m.get("commit") else ""
    return f"{m['cpu']}, {m['cores']} cores, Python {m['python']}, {m['date']}{commit}"


def engine_section(name: str, r: dict[str, Any]) -> list[str]:
    ing = r["ingest"]
    st = ing["stage_seconds"]
    lines = [
        f"### Engine at {r['size']:,} observations",
        "",
        f"`{r['command'].strip()}` — {_machine(r['machine'])}",
        "",
        "| ingest obs/s | extract s | embed s | fuse s | commit s | index s | index rebuild s "
        "| disk MB | peak RSS MB |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {ing['obs_per_s']} | {st['extract']} | {st['embed']} | {st.get('fuse', '-')} | "
        f"{st['commit']} | {st['index']} | {r['index_rebuild_s']} | {r['disk_mb']} | "
        f"{r['rss_mb']['peak']} |",
        "",
        "| pipeline | p50 ms | p95 ms | p99 ms |",
        "|---|---|---|---|",
    ]
    for p, s in r["search"].items():
        lines.append(f"| {p} | {s['p50']} | {s['p95']} | {s['p99']} |")
    return lines + [""]


def models_section(r: dict[str, Any]) -> list[str]:
    lines = [
        "### Models",
        "",
        f"`{r['command'].strip()}` — {_machine(r['machine'])}",
        "",
        "| embedder (e5-small) | threads | sentences/s | RSS MB |",
        "|---|---|---|---|",
    ]
    for e in r["embedders"]:
        kind = "int8" if e["model"] == "model.onnx" else "fp32"
        lines.append(f"| {kind} | {e['threads']} | {e['sentences_per_s']} | {e['rss_mb']} |")
    lines += ["", "| LLM | threads | prompt tok/s | generation tok/s | cold prompt s "
              "| reused prefix s | RSS MB |", "|---|---|---|---|---|---|---|"]
    for m in r["llms"]:
        lines.append(f"| {m['model']} | {m['threads']} | {m['prompt_tokens_per_s']} | "
                     f"{m['generation_tokens_per_s']} | {m['cold_prompt_s']} | "
                     f"{m['reused_prefix_s']} | {m['rss_mb']} |")
    return lines + [""]


def quality_section(r: dict[str, Any]) -> list[str]:
    lines = [f"### Retrieval quality: {r['dataset']}", "",
             f"`{r['command'].strip()}` — {_machine(r['machine'])}", ""]
    ks = r["ks"]
    header = "| category | questions | pipeline | " + " | ".join(
        f"recall@{k}" for k in ks) + " | " + " | ".join(f"all-hit@{k}" for k in ks) + " |"
    lines += [header, "|" + "---|" * (3 + 2 * len(ks))]
    for row in r["rows"]:
        lines.append(
            f"| {row['category']} | {row['questions']} | {row['pipeline']} | "
            + " | ".join(f"{row['recall'][str(k)]:.3f}" for k in ks) + " | "
            + " | ".join(f"{row['all_hit'][str(k)]:.3f}" for k in ks) + " |")
    return lines + [""]


def fusion_section(r: dict[str, Any]) -> list[str]:
    lines = [f"### Fusion quality: {r['dataset']} ({r['observations']} records)", "",
             f"`{r['command'].strip()}` — {_machine(r['machine'])}", "",
             "B-cubed against the records' `event_id` (never ingested); evidence cohesion = "
             "mean share of a question's evidence records inside one fused memory.", "",
             "| setting | precision | recall | F1 | memories | mean members | evidence "
             "cohesion | fusion obs/s | LLM tokens/obs |", "|---|---|---|---|---|---|---|---|---|"]
    for row in r["rows"]:
        lines.append(f"| {row['setting']} | {row['precision']:.3f} | {row['recall']:.3f} | "
                     f"{row['f1']:.3f} | {row['clusters']} | {row['mean_members']} | "
                     f"{row['evidence_cohesion']:.3f} | {row.get('fusion_obs_per_s', '')} | "
                     f"{row.get('llm_tokens_per_obs', '')} |")
    return lines + [""]


def ask_section(r: dict[str, Any]) -> list[str]:
    lines = [f"### ask: {r['dataset']} ({r['questions']} questions)", "",
             f"`{r['command'].strip()}` — {_machine(r['machine'])}", "",
             "| answer LLM | pipeline | p50 ms | p95 ms | LLM calls/q | prompt tok/q "
             "| completion tok/q | cites gold evidence |", "|---|---|---|---|---|---|---|---|"]
    for row in r["rows"]:
        lat = row["latency_ms"]
        lines.append(f"| {row['llm']} | {row['pipeline']} | {lat['p50']} | {lat['p95']} | "
                     f"{row['llm_calls_per_q']} | {row['prompt_tokens_per_q']} | "
                     f"{row['completion_tokens_per_q']} | {row['cites_gold_evidence']} |")
    return lines + [""]


def main(argv: list[str] | None = None) -> None:
    """Write RESULTS.md."""
    del argv
    results = _load()
    lines = ["# Benchmark results", "",
             "Generated by `python3 -m bench report` from `bench/results/*.json`; each table "
             "names the command that produced it and the machine it ran on. Timings on a "
             "shared two-core machine are noisy: compare rows of one run, not across runs.", ""]
    for name, r in results.items():
        if name.startswith("engine-"):
            lines += engine_section(name, r)
    if "models" in results:
        lines += models_section(results["models"])
    for name, r in results.items():
        if name.startswith("fusion-"):
            lines += fusion_section(r)
    for name, r in results.items():
        if name.startswith("quality-"):
            lines += quality_section(r)
    for name, r in results.items():
        if name.startswith("ask-"):
            lines += ask_section(r)
    OUT.write_text("\n".join(lines))
    print(f"wrote {OUT}")
