"""Model benchmark: embedder sentences/s (fp32 vs int8, 1 vs 2 threads) and LLM tokens/s
(prompt, free generation, and generation under the answer step's JSON schema).

    python3 -m bench models [--sentences 256] [--llms smollm2-135m qwen2.5-coder-0.5b]

Each configuration runs in a fresh subprocess so its RSS is its own.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import time
from typing import Any

from memfuse_lite.config import default_model_dir
from memfuse_lite.prepare.registry import model_path, resolve_llm_file
from memfuse_lite.prompts import answer as answer_prompt

from .adapters import lifebench_observations
from .common import current_rss_mb, peak_rss_mb, write_result

PROMPT = ("You extract events from phone records. Record: SMS from Xu Feng at 10:45: "
          "'Regarding your loan application, please add the profit forecast basis for the "
          "Hangzhou pop-up store and an explanation of the family's home replacement plan, "
          "and send them to me via WeChat before Friday.' Describe the event, who is involved, "
          "when it happens and what must be done, in three short sentences.")


def sentences(n: int) -> list[str]:
    """Half English, half Chinese phone records, trimmed to one or two sentences."""
    en = (o["text"][:200] for o in lifebench_observations("en") if o["source"] != "fitness_health")
    zh = (o["text"][:120] for o in lifebench_observations("zh") if o["source"] != "fitness_health")
    return [s for pair in itertools.islice(zip(en, zh, strict=False), n // 2) for s in pair]


def embedder_run(onnx_file: str, threads: int, n: int) -> dict[str, Any]:
    """One embedder configuration (runs inside the subprocess)."""
    from memfuse_lite.embed import OnnxEmbedder

    texts = sentences(n)
    base = current_rss_mb()
    emb = OnnxEmbedder(model_path("e5-small-int8", default_model_dir()), threads=threads,
                       onnx_file=onnx_file, verify=False)
    emb.embed(texts[:32])
    t0 = time.perf_counter()
    emb.embed(texts, batch_size=32)
    seconds = time.perf_counter() - t0
    return {"model": onnx_file, "threads": threads, "sentences": len(texts),
            "sentences_per_s": round(len(texts) / seconds, 1),
            "rss_mb": round(peak_rss_mb() - base, 1)}


def llm_run(name: str, threads: int) -> dict[str, Any]:
    """Prompt-processing and generation speed of one GGUF (inside the subprocess)."""
    from memfuse_lite.llm import LlamaCppLLM

    base = current_rss_mb()
    llm = LlamaCppLLM(resolve_llm_file(name, default_model_dir()), n_ctx=2048, threads=threads)
    msgs = [{"role": "user", "content": PROMPT}]
    llm.complete(msgs, max_tokens=4)  # warm-up
    prompt_runs, gen_runs, schema_runs = [], [], []
    for _ in range(3):
        llm._llm.reset()  # no prefix reuse: measure full prompt processing
        c1 = llm.complete(msgs, max_tokens=1)
        prompt_runs.append((c1.usage.prompt_tokens, c1.seconds))
        llm._llm.reset()
        c2 = llm.complete(msgs, max_tokens=64, temperature=0.0)
        gen_runs.append((c2.usage.completion_tokens, c2.seconds - c1.seconds))
        llm._llm.reset()  # the same, constrained by the answer step's JSON schema
        c3 = llm.complete(msgs, max_tokens=64, temperature=0.0, schema=answer_prompt.SCHEMA)
        schema_runs.append((c3.usage.completion_tokens, c3.seconds - c1.seconds))
    p_tok = sum(t for t, _ in prompt_runs)
    p_sec = sum(s for _, s in prompt_runs)
    g_tok = sum(t for t, _ in gen_runs)
    g_sec = sum(s for _, s in gen_runs)
    j_tok = sum(t for t, _ in schema_runs)
    j_sec = sum(s for _, s in schema_runs)
    llm._llm.reset()
    llm.complete(msgs, max_tokens=1)
    t0 = time.perf_counter()
    llm.complete(msgs, max_tokens=1)  # same prompt again: the KV prefix is reused
    reuse = time.perf_counter() - t0
    return {"model": name, "threads": threads,
            "prompt_tokens_per_s": round(p_tok / p_sec, 1),
            "generation_tokens_per_s": round(g_tok / max(g_sec, 1e-6), 1),
            "schema_generation_tokens_per_s": round(j_tok / max(j_sec, 1e-6), 1),
            "prompt_tokens": prompt_runs[0][0],
            "cold_prompt_s": round(prompt_runs[0][1], 3), "reused_prefix_s": round(reuse, 3),
            "rss_mb": round(peak_rss_mb() - base, 1)}


def in_subprocess(kind: str, *args: str) -> dict[str, Any]:
    """Run one configuration in a fresh interpreter and read its JSON line."""
    out = subprocess.run([sys.executable, "-m", "bench.models_speed", "--one", kind, *args],
                         capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> None:
    """CLI entry."""
    ap = argparse.ArgumentParser(prog="python3 -m bench models", description=__doc__)
    ap.add_argument("--sentences", type=int, default=256)
    ap.add_argument("--llms", nargs="*", default=["smollm2-135m", "qwen2.5-coder-0.5b"])
    ap.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        kind, *rest = args.one
        if kind == "embed":
            print(json.dumps(embedder_run(rest[0], int(rest[1]), int(rest[2]))))
        else:
            print(json.dumps(llm_run(rest[0], int(rest[1]))))
        return
    embed = []
    for onnx_file, threads in itertools.product(("model_fp32.onnx", "model.onnx"), (1, 2)):
        r = in_subprocess("embed", onnx_file, str(threads), str(args.sentences))
        print(f"embed {r['model']:<16} threads={threads}: {r['sentences_per_s']} sentences/s, "
              f"RSS +{r['rss_mb']} MB")
        embed.append(r)
    llms = []
    for name, threads in itertools.product(args.llms, (1, 2)):
        r = in_subprocess("llm", name, str(threads))
        print(f"llm {name:<20} threads={threads}: prompt {r['prompt_tokens_per_s']} tok/s, "
              f"generation {r['generation_tokens_per_s']} tok/s (under the answer's JSON "
              f"schema {r['schema_generation_tokens_per_s']}), RSS +{r['rss_mb']} MB, "
              f"cold prompt {r['cold_prompt_s']} s vs reused prefix {r['reused_prefix_s']} s")
        llms.append(r)
    write_result("models", {"command": "python3 -m bench models " + " ".join(argv or []),
                            "embedders": embed, "llms": llms})


if __name__ == "__main__":
    main(sys.argv[1:])
