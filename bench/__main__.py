"""``python3 -m bench COMMAND [options]``; ``python3 -m bench COMMAND --help`` for each."""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS: dict[str, tuple[str, str]] = {
    "generate": ("bench.generate", "generate a household's observations and reviewed questions"),
    "engine": ("bench.engine", "ingest throughput, search latency, HNSW recall, RSS and disk"),
    "scale": ("bench.scale", "cost against size: one memory grown to 100k, 300k and 1M"),
    "ann": ("bench.ann", "HNSW recall and latency on e5 vectors at 100k, 300k and 1M"),
    "memory": ("bench.memory_profile", "resident memory per component of an open memory"),
    "models": ("bench.models_speed", "embedder sentences/s and LLM tokens/s per thread count"),
    "quality": ("bench.quality", "retrieval recall per pipeline, baselines and ablations"),
    "fusion": ("bench.fusion_eval", "fusion B-cubed and evidence co-location vs event labels"),
    "edges": ("bench.edges_eval", "causal and supersedes edges vs the generator's links"),
    "fusion-candidates": ("bench.fusion_candidates",
                          "fusion's candidate recall and ranking of true episode mates"),
    "misses": ("bench.misses", "where the evidence left out of fused's context sits in the graph"),
    "fusion-fit": ("bench.fusion_fit", "fit the learned fusion pair scorer, cross-validated"),
    "rank-fit": ("bench.rank_fit", "fit the fused pipeline's ranking stage, cross-validated"),
    "search-parts": ("bench.search_parts", "where a search's time goes, stage by stage, for "
                     "questions as asked"),
    "rank-trees": ("bench.rank_trees", "probe: boosted trees against the logistic ranking "
                   "stage, left-out datasets"),
    "timeexpr": ("bench.timeexpr_eval", "time-expression parser precision/recall on a corpus"),
    "ask": ("bench.ask_speed", "answer quality, citations, tokens and latency per LLM"),
    "ask-every": ("bench.ask_every", "every question of every dataset through ask: exceptions "
                  "and empty answers"),
    "abstain": ("bench.abstain", "questions about another memory answered (goal 0) beside "
                "the memory's own answered"),
    "citations": ("bench.citations",
                  "multiple-choice citations: the cited record against search's first, an "
                  "LLM's pick and the gold held in the first n"),
    "forget": ("bench.forget_cost", "forget latency for one record and a whole source, erasing "
               "the index files or not"),
    "import": ("bench.import_corpus", "import every export file of a folder: per-file counts "
               "and reasons"),
    "identity": ("bench.identity", "records the old duplicate key dropped, per dataset"),
    "reliability": ("bench.reliability", "crashes, corruption, fuzzing, isolation, forgetting"),
    "cold": ("bench.cold_start", "a memory's first search in a fresh process, with and "
             "without warming up"),
    "sync": ("bench.sync_speed", "a fresh and an incremental sync through a folder beside "
             "export and ingest"),
    "ui": ("bench.ui_speed", "the memory inspector's first page, a memory and a search over "
           "HTTP on a large memory"),
    "low-end": ("bench.low_end", "rerun a benchmark on one core under a 1 GB memory limit"),
    "report": ("bench.report", "render bench/RESULTS.md and plots from bench/results/"),
}


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser: one sub-command per benchmark (their options are their own)."""
    parser = argparse.ArgumentParser(prog="python3 -m bench", description=__doc__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> None:
    """Dispatch to the benchmark's own ``main`` with the remaining arguments."""
    args, rest = build_parser().parse_known_args(sys.argv[1:] if argv is None else argv)
    module = importlib.import_module(COMMANDS[args.command][0])
    module.main(rest)


if __name__ == "__main__":
    main()
