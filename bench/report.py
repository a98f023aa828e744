"""``python3 -m bench report``: render bench/RESULTS.md from bench/results/*.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .common import RESULTS, outside_embedding, stage_overhead

OUT = Path(__file__).resolve().parent / "RESULTS.md"
PLOTS = OUT.parent / "plots"


def _load() -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json"))}


def _machine(m: dict[str, Any]) -> str:
    commit = f", commit {m['commit']}" if m.get("commit") else ""
    return f"{m['cpu']}, {m['cores']} cores, Python {m['python']}, {m['date']}{commit}"


def _heading(title: str, r: dict[str, Any]) -> list[str]:
    """A section's title, then the command and machine behind its figures."""
    return [f"### {title}", "", f"`{r['command'].strip()}` — {_machine(r['machine'])}", ""]


def engine_section(name: str, r: dict[str, Any]) -> list[str]:
    corpus = {"generated": "generated household", "real": "LifeBench + LoCoMo text"}.get(
        r.get("corpus", "real"), "")
    title = "Engine" if "ingest" in r else "Searches on a kept memory"
    lines = [
        f"### {title} at {r['size']:,} observations ({corpus}, embedder "
        f"{r.get('embedder', 'e5-small-int8')})",
        "",
        f"`{r['command'].strip()}` — {_machine(r['machine'])}",
        "",
    ]
    if "ingest" in r:
        lines += ingest_lines(r)
    return lines + search_lines(r)


def ingest_lines(r: dict[str, Any]) -> list[str]:
    """The ingest table of an engine run and its ratio to the raw embedder."""
    ing = r["ingest"]
    st = ing["stage_seconds"]
    lines = [
        "| ingest obs/s | extract s | embed s | fuse s | commit s | index s | index rebuild s "
        "| disk MB | peak RSS MB (while ingesting) |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {ing['obs_per_s']} | {st['extract']} | {st['embed']} | {st.get('fuse', '-')} | "
        f"{st['commit']} | {st['index']} | {r['index_rebuild_s']} | {r['disk_mb']} | "
        f"{r['rss_mb']['peak']} ({r['rss_mb'].get('peak_ingesting', '-')}) |",
        "",
    ]
    if "raw_embedder" in ing:
        raw = ing["raw_embedder"]
        lines += [f"The embedder alone on the first {raw['texts']:,} texts, same batches, same "
                  f"process: {raw['obs_per_s']} obs/s; ingest reaches "
                  f"{ing['obs_per_s'] / raw['obs_per_s']:.2f}x of it (stages overlap: the next "
                  "batch is embedded while the previous one commits)."
                  + (f" Ingest embeds each distinct text once: the same {raw['texts']:,} "
                     f"observations hold {raw['distinct_texts']:,} distinct texts, which the "
                     f"embedder alone takes at {raw['distinct_obs_per_s']} observations/s; "
                     f"ingest reaches {ing['obs_per_s'] / raw['distinct_obs_per_s']:.2f}x of "
                     "that." if "distinct_texts" in raw else "")
                  + f" Fusion, index and commit are {stage_overhead(st):.0%} of the summed stage "
                  f"time; {outside_embedding(ing):.0%} of the ingest's wall time lies outside "
                  "the embed stage (the rest overlaps it).", ""]
    return lines


def search_lines(r: dict[str, Any]) -> list[str]:
    """Search latency per pipeline and the ANN checks of an engine run."""
    lines: list[str] = []
    without = r.get("search_excluding_query_embedding")
    if without:
        e = r["query_embedding_ms"]
        lines += ["| pipeline | p50 ms | p95 ms | p99 ms | without query embedding p50 / p95 "
                  "/ p99 ms |", "|---|---|---|---|---|"]
        lines += [f"| {p} | {s['p50']} | {s['p95']} | {s['p99']} | {without[p]['p50']} / "
                  f"{without[p]['p95']} / {without[p]['p99']} |" for p, s in r["search"].items()]
        lines += ["", f"Query embedding (inside the searches that embed): p50 {e['p50']} ms, "
                  f"p95 {e['p95']} ms."]
    else:
        lines += ["| pipeline | p50 ms | p95 ms | p99 ms |", "|---|---|---|---|"]
        lines += [f"| {p} | {s['p50']} | {s['p95']} | {s['p99']} |"
                  for p, s in r["search"].items()]
    if "ann" in r:
        a = r["ann"]
        lines += ["", f"HNSW top-{a['k']} against exact search over "
                  f"{a['vectors']:,} vectors, {a['queries']} queries, ef_search "
                  f"{a['ef_search']}: recall {a['hnsw_recall']:.4f}; HNSW p50/p95 "
                  f"{a['hnsw_ms']['p50']}/{a['hnsw_ms']['p95']} ms vs numpy brute force "
                  f"{a['numpy_bruteforce_ms']['p50']}/{a['numpy_bruteforce_ms']['p95']} ms."]
        if a.get("curve"):
            lines += ["", "| ef_search | recall | p50 ms | p95 ms |", "|---|---|---|---|"]
            lines += [f"| {c['ef_search']} | {c['recall']:.4f} | {c['ms']['p50']} | "
                      f"{c['ms']['p95']} |" for c in a["curve"]]
        f = a.get("filtered")
        if f and f.get("curve"):
            lines += ["", f"Filtered walks (the {f['walks']} graph walks under a filter when "
                      f"{f['queries']} questions are searched by the fused and the dense "
                      f"pipeline, median share of points passing {f['share_passing']['p50']}) "
                      "against exact search over the points that pass (recall counting a "
                      "neighbour tied with the exact k-th as found in brackets); this run "
                      f"walked at ef {f['ef_filtered']}:", "",
                      "| ef | recall | p50 ms | p95 ms |", "|---|---|---|---|"]
            lines += [f"| {c['ef']} | {c['recall']:.4f} ({c.get('recall_ties_counted', '-')}) "
                      f"| {c['ms']['p50']} | {c['ms']['p95']} |" for c in f["curve"]]
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
    fusion = r.get("fusion", "rules")
    title = f"{r['dataset']}, {fusion} fusion scorer"
    if r.get("pair_model"):
        title += f" (pair model {r['pair_model']}, written by `bench fusion-fit`)"
    lines = [f"### Retrieval quality: {title}", "",
             f"`{r['command'].strip()}` — {_machine(r['machine'])}", ""]
    ks = r["ks"]
    overall = [row for row in r["rows"] if row["category"] == "all"]
    cov = "coverage" in overall[0] if overall else False
    lines += ["| pipeline (all questions) | " + " | ".join(f"recall@{k}" for k in ks)
              + " | all-hit@20 | any-hit@20 |" + (" checklist coverage@20 |" if cov else ""),
              "|" + "---|" * (3 + len(ks) + cov)]
    for row in overall:
        lines.append(f"| {row['pipeline']} | " + " | ".join(
            f"{row['recall'][str(k)]:.3f}" for k in ks) + f" | {row['all_hit']['20']:.3f} | "
            f"{row['any_hit']['20']:.3f} |" + (f" {row['coverage']['20']:.3f} |" if cov else ""))
    lines += ["", "Per category:", ""]
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
    lines = [*_heading(f"Fusion quality: {r['dataset']} ({r['observations']} records)", r),
             "B-cubed against the labelled episodes (LifeBench's `event_id`, the generated "
             "household's scenes; never ingested); evidence cohesion = mean share of a "
             "question's evidence records inside one fused memory. Each memfuse row rebuilds "
             "fusion over the stored events, except \"ingested online\": the same "
             "observations ingested into a new memory in batches of 256 with the stored "
             "vectors; \"labelled episodes\" is the ceiling: the labels themselves as "
             "memories, at most as many records a memory as fusion allows.", "",
             "| setting | precision | recall | F1 | memories | mean members | evidence "
             "cohesion | fusion obs/s | LLM tokens/obs |", "|---|---|---|---|---|---|---|---|---|"]
    for row in r["rows"]:
        lines.append(f"| {row['setting']} | {row['precision']:.3f} | {row['recall']:.3f} | "
                     f"{row['f1']:.3f} | {row['clusters']} | {row['mean_members']} | "
                     f"{row['evidence_cohesion']:.3f} | {row.get('fusion_obs_per_s', '')} | "
                     f"{row.get('llm_tokens_per_obs', '')} |")
    return lines + [""]


def fusion_fit_section(r: dict[str, Any]) -> list[str]:
    lines = [*_heading("Learned fusion scorer, cross-validated", r),
             "No fold is tested on episodes its model was fitted on. The person's EN and ZH "
             "records are translations of one year, so the year is cut at the median "
             "recording time: each half (both languages) is tested with a model fitted on "
             "the other half and the generated household; the generated household with a "
             "model fitted on the person. Fusion is rebuilt over the whole memory with the "
             "fold's model and scored over the test records; \"rules\" is the rule-based "
             "scorer and \"no fusion\" every record alone, in the same run. Co-location = "
             "mean share of a question's evidence records inside the one memory holding "
             "most of them.", "",
             "| trained on | tested on | setting | precision | recall | F1 | co-location "
             "| mean members |", "|---|---|---|---|---|---|---|---|"]
    for fold in r["folds"]:
        bridge = f", bridge at {fold['bridge']}" if "bridge" in fold else ""
        for key, label in (("no_fusion", "no fusion"), ("rules", "rules"),
                           ("learned", f"learned (join at p >= {fold['threshold']}{bridge})")):
            row = fold[key]
            lines.append(f"| {fold['train']} | {fold['test']} | {label} | "
                         f"{row['precision']:.3f} | {row['recall']:.3f} | {row['f1']:.3f} | "
                         f"{row['cohesion']:.3f} | {row['mean_members']} |")
    if "model" in r:
        weights = ", ".join(f"{k} {v}" for k, v in r["model"]["weights"].items())
        bridge = (f", bridge at p >= {r['model']['bridge']}" if "bridge" in r["model"]
                  else "")
        lines += ["", f"Shipped model (fitted on all three, join at p >= "
                      f"{r['model']['threshold']}{bridge}): {weights}."]
    return lines + [""]


def rank_fit_section(r: dict[str, Any]) -> list[str]:
    keys = ("R@1", "R@5", "R@10", "R@20", "first", "all@20", "adversarial R@5")
    lines = [*_heading("Ranking stage, cross-validated", r),
             "No fold is tested on questions of what its model was fitted on: "
             "leave-one-dataset-out (LoCoMo's ten conversations are one dataset, the "
             "LifeBench person's two languages one), and the person's year cut at the median "
             "time a question is asked (each half tested with a model fitted on the other "
             "half, LoCoMo and the household). The household of seed 11 is never fitted on "
             "and is tested with the shipped model. Figures come from `search` on the fused "
             "pipeline with the fold's model and with the stage off, in the same run; "
             "\"first\": a gold record first; AUC: of the model's probability over the "
             "tested candidates.", "",
             "| tested on | AUC | setting | questions | " + " | ".join(keys) + " |",
             "|---|---|---|---|" + "---|" * len(keys)]
    folds = [*r["folds"], {"test": "household seed 11 (held back)", "auc": None,
                           **r["held_back_household"]}]
    for fold in folds:
        for setting in ("no ranker", "ranked"):
            row = fold[setting]
            auc = "" if fold["auc"] is None else f"{fold['auc']:.3f}"
            lines.append(f"| {fold['test']} | {auc if setting == 'ranked' else ''} | "
                         f"{setting} | {row['questions']} | "
                         + " | ".join(f"{row[k]:.3f}" if k in row else "-" for k in keys)
                         + " |")
    weights = ", ".join(f"{k} {v}" for k, v in r["weights"].items())
    return lines + ["", f"Shipped model (fitted on all three): {weights}.", ""]


def arbiter_section(r: dict[str, Any]) -> list[str]:
    lines = [*_heading(f"LLM arbiter ({r['llm']}) on the band below the join probability", r),
             "Events whose most probable candidate lies in the band the arbiter is asked "
             "about; a seeded sample, each asked with that candidate, against the episode "
             "labels. Precision = share of its \"same episode\" answers that are right "
             "(compare with the band's same-episode share: chance).", "",
             "| dataset | band | events in band | same-episode share | asked | said same | "
             "precision | recall | s / call | tokens / call |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for row in r["rows"]:
        low, high = row["band"]
        lines.append(f"| {row['dataset']} | {low:.3f}–{high:.3f} | {row['band_events']} | "
                     f"{row['same_episode_share']:.3f} | {row['asked']} | "
                     f"{row['said_same']:.3f} | {row['precision']:.3f} | {row['recall']:.3f} "
                     f"| {row['seconds_per_call']} | {row['tokens_per_call']} |")
    return lines + [""]


def memory_section(name: str, r: dict[str, Any]) -> list[str]:
    lines = [*_heading(f"Resident memory per component: {r['events']:,} events", r),
             "Each row is the resident set added by opening that component, in a fresh "
             "process, in this order (differences of `/proc/self/statm`, so native "
             "allocations count).", "",
             "| component | + MB | resident MB |", "|---|---|---|"]
    for s in r["steps"]:
        lines.append(f"| {s['component']} | {s['mb']} | {s['rss_mb']} |")
    queries = r.get("after_queries_rss_mb", {})
    opened = ""
    if "opened_and_queried_mb" in r:  # the graph's edges are read at the first fused query
        opened = (f"a memory opened by `MemFuse` without the embedder and queried by every "
                  f"pipeline, another fresh process: {r['opened_and_queried_mb']} MB, the "
                  f"steps above sum to {r['steps_sum_mb']} MB; ")
    elif "opened_mb" in r:
        opened = (f"a memory opened by `MemFuse` without the embedder, another fresh "
                  f"process: {r['opened_mb']} MB, the steps above sum to "
                  f"{r['steps_sum_mb']} MB; ")
    lines += ["", f"Index + store + graph ({opened}per 100k events): "
                  f"{r['index_store_graph_mb_per_100k']} MB "
                  f"(target ≤ 250); disk {r['disk_mb']} MB; Python objects after "
                  f"opening {r['python_objects_mb']} MB. Resident after opening the whole "
                  f"memory (hashing vectors) and after each pipeline's first query: "
              + ", ".join(f"{k} {v}" for k, v in queries.items()) + " MB."]
    if "bm25_cold" in r:
        c = r["bm25_cold"]
        lines += ["", f"A fresh process that opens the memory and answers one BM25 query "
                      f"(no model loaded): {c['process_s']} s in all, interpreter start and "
                      f"imports included (open {c['open_s']} s, query {c['first_query_s']} s"
                      + (f", then a first Chinese query, which loads jieba's dictionary, "
                         f"{c['first_chinese_query_s']} s" if "first_chinese_query_s" in c
                         else "")
                      + f"; target ≤ 1 s at 100k; the OS file cache was warm), "
                      f"{c['rss_mb']} MB resident."]
    return lines + [""]


def scale_section(r: dict[str, Any]) -> list[str]:
    steps = r["steps"]
    state = "" if r.get("complete", True) else (
        f" The run stopped before {r['sizes'][-1]:,}; the steps below are what it measured.")
    lines = [f"### Cost against size: one memory grown to {steps[-1]['size']:,} observations "
             f"(generated household, embedder {r['embedder']})", "",
             f"`{r['command'].strip()}` — {_machine(r['machine'])}", "",
             "Each step ingests the next observations into the same memory, then measures. "
             "Search latency is without the query embedding; resident memory is the "
             "process's less what it held before opening the memory (the whole process in "
             "brackets); HNSW recall@20 counts a neighbour tied in distance with the exact "
             "20th as found (bag-of-words vectors tie often; e5's recall is in the engine "
             f"tables).{state}", "",
             "| observations | step obs/s | resident MB (process) | peak while ingesting MB "
             "| disk MB | HNSW recall@20 | bm25 p50/p95 | hybrid p50/p95 | fused p50/p95 | "
             "agentic p50/p95 |", "|---|---|---|---|---|---|---|---|---|---|"]
    for st in steps:
        w = st["search_excluding_query_embedding"]
        lat = " | ".join(f"{w[p]['p50']} / {w[p]['p95']}"
                         for p in ("bm25", "hybrid", "fused", "agentic"))
        lines.append(f"| {st['size']:,} | {st['obs_per_s']} | {st['rss_mb']['memory']} "
                     f"({st['rss_mb']['process']}) | {st['rss_mb']['peak_ingesting']} | "
                     f"{st['disk_mb']} | {st['ann']['hnsw_recall_ties_counted']} | {lat} |")
    if len(steps) >= 2:
        lines += ["", "How each cost grows between steps, as the exponent b of cost ∝ size^b "
                      "(0: flat, 1: linear): " + "; ".join(
                          f"{name} " + ", ".join(f"{b:+.2f}" for b in exps)
                          for name, exps in r["growth"].items()) + "."]
    return lines + [""]


def ann_section(r: dict[str, Any]) -> list[str]:
    steps = r["steps"]
    efs = [p["ef_search"] for p in steps[0]["curve"]]
    per_text = r.get("one_per_text", False)  # earlier runs gave every record a point
    layout = "one point per distinct text" if per_text else "a point per record"
    lines = [f"### HNSW on e5 vectors, grown to {steps[-1]['size']:,} (generated household, M "
             f"{r['m']}, {layout})", "",
             f"`{r['command'].strip()}` — {_machine(r['machine'])}", "",
             f"The dense index alone (hnswlib, cosine, M {r['m']}, ef_construction "
             f"{r['ef_construction']}, {r['threads']} threads, {layout}), over "
             f"{r['embedder']} vectors of the household's texts; {r['queries']} of its questions "
             f"as queries, one thread each. Recall@{r['k']} against exact search counts records "
             "(a point found stands for each record of its text) and a record at the exact "
             "20th's distance as found; the plain id-set recall"
             + (" of distinct texts" if per_text else "") + " is in brackets. The library "
             f"searches at ef_search {r['default_ef_search']}.", "",
             "| observations | distinct texts | build s (cumulative) | index MB |",
             "|---|---|---|---|"]
    lines += [f"| {st['size']:,} | {st['distinct']:,} | {st['build_seconds']} | "
              f"{st['index_mb']} |" for st in steps]
    lines += ["", "| ef_search | " + " | ".join(
        f"{st['size']:,}: recall (plain), p50 / p95 ms" for st in steps) + " |",
        "|---|" + "---|" * len(steps)]
    for i, ef in enumerate(efs):
        lines.append(f"| {ef} | " + " | ".join(
            f"{st['curve'][i]['recall_ties_counted']} ({st['curve'][i]['recall']}), "
            f"{st['curve'][i]['ms']['p50']} / {st['curve'][i]['ms']['p95']}"
            for st in steps) + " |")
    return lines + [""]


def candidates_section(results: dict[str, dict[str, Any]]) -> list[str]:
    rows = [r for name, r in results.items() if name.startswith("fusion-candidates-")]
    if not rows:
        return []
    lines = ["### Fusion candidates: recall and ranking of true episode mates", "",
             f"`python3 -m bench fusion-candidates --dataset D` — {_machine(rows[0]['machine'])}",
             "", "For events with an earlier record of the same labelled episode: is one among "
             "fusion's candidates, is it the top one under the shipped pair model, and how "
             "precise is joining the top candidate at the model's join probability.", "",
             "| dataset | events with an earlier mate | mate among candidates | mate on top "
             "| true-pair probability quartiles | top-1 joins at the join probability "
             "(precision) |", "|---|---|---|---|---|---|"]
    for r in rows:
        j = r["top1_join"][str(r["shipped_threshold"])]
        lines.append(f"| {r['dataset']} | {r['events_with_earlier_mate']} of {r['events']} | "
                     f"{r['mate_among_candidates']} | {r['mate_is_top_candidate']} | "
                     f"{r['gold_pair_probability_quartiles']} | {j['joins']} "
                     f"({j['precision']}) |")
    return lines + [""]


def edges_section(r: dict[str, Any]) -> list[str]:
    lines = [*_heading("Causal and supersedes edges: generated household", r),
             "The memory's edges against the generator's ground-truth links, by event. "
             "\"episode order\" (each event → the member of its memory recorded before it that "
             "it matches best) is the naive reading; \"explicit cue\" edges come from \"because\", \"so\", 因为 …; "
             "\"news of a change\" edges from the news that announced a change to the report of it "
             "that replaced the plan. \"Within one scene\" is the share of edges joining two "
             "records of one scene: the gold lists one link per change or cause, while a report "
             "of a change also replaces the plan's reminders; an edge across scenes is wrong "
             "whatever the gold lists.", "",
             "| scorer | edges | count | gold links | precision | recall | precision "
             "(undirected) | recall (undirected) | within one scene |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in r["rows"]:
        lines.append(f"| {row['scorer']} | {row['edges']} | {row['count']} | {row['gold']} "
                     f"{row['against']} | {_or_dash(row['precision'])} | "
                     f"{_or_dash(row['recall'])} | {_or_dash(row['precision_undirected'])} | "
                     f"{_or_dash(row['recall_undirected'])} | "
                     f"{_or_dash(row.get('precision_same_scene'))} |")
    return lines + [""]


def misses_section(r: dict[str, Any]) -> list[str]:
    lines = [*_heading("Evidence left out of the fused context: where it sits", r),
             f"Questions with two or more evidence records; each record missing from the top "
             f"{r['k']} of `fused` placed against the question's evidence that was found "
             "(\"no link\": in no memory or edge with it; \"same episode\": its labelled "
             "episode is a found record's). Top sources in brackets.", "",
             "| dataset | questions | all evidence in the top k | missing records | "
             + " | ".join(r["rows"][0]["places"]) + " | edge kinds |",
             "|---|---|---|---|" + "---|" * len(r["rows"][0]["places"]) + "---|"]
    for row in r["rows"]:
        cells = [f"{v['share']} ({', '.join(f'{s} {n}' for s, n in v['sources'].items())})"
                 for v in row["places"].values()]
        lines.append(f"| {row['dataset']} | {row['questions']} | "
                     f"{row['all_evidence_in_top_k']} | {row['missing_records']} | "
                     + " | ".join(cells) + " | "
                     + ", ".join(f"{k} {n}" for k, n in row["edge_kinds"].items()) + " |")
    return lines + [""]


def _or_dash(value: object) -> str:
    return "-" if value is None else str(value)


def ask_every_section(r: dict[str, Any]) -> list[str]:
    lines = [*_heading("ask: every question of every dataset", r),
             "Each question asked on the fused pipeline (LifeBench multiple choice with and "
             "without its options); goal 0 exceptions, 0 answers without text or letter.", "",
             "| dataset | mode | asks | exceptions | no text | no letter |",
             "|---|---|---|---|---|---|"]
    for row in r["rows"]:
        lines.append(f"| {row['dataset']} | {row['mode']} | {row.get('asks', 0)} | "
                     f"{row.get('exceptions', 0)} | {row.get('no text', 0)} | "
                     f"{row.get('no letter', 0)} |")
    return [*lines, ""]


def abstain_section(r: dict[str, Any]) -> list[str]:
    lines = [*_heading("ask: questions about another memory", r),
             "Extractive answers on the fused pipeline. Foreign: questions of another memory "
             "(other people), asked by the memory's usual viewer; answered should be 0. Own: "
             "the memory's questions with evidence; with gold: answered citing a gold record. "
             "Rules: an answer rests on records holding half of a question's key words, or "
             "four (ships), against half alone.", "",
             "| memory | rule | foreign asked | foreign answered | own asked | own answered | "
             "own answered with gold |", "|---|---|---|---|---|---|---|"]
    for row in r["rows"]:
        lines.append(f"| {row['memory']} | {row['rule']} | {row['foreign']} | "
                     f"{row['foreign_answered']} | {row['own']} | {row['own_answered']} | "
                     f"{row['own_answered_with_gold']} |")
    return [*lines, ""]


def import_scale_section(r: dict[str, Any]) -> list[str]:
    lines = [*_heading("import: large generated exports", r),
             f"Read in a fresh process each, streamed (as `memfuse import` reads) and whole "
             f"(the baseline); nothing ingested. Goal: peak RSS ≤ {r['goal_peak_rss_mb']:.0f} MB "
             "streamed.", "",
             "| importer | file MB | how | records | rejected | records/s | peak RSS MB |",
             "|---|---|---|---|---|---|---|"]
    for row in r["rows"]:
        lines.append(f"| {row['kind']} | {row['file_mb']} | {row['how']} | {row['records']} | "
                     f"{row['rejected']} | {row['records_per_s']} | {row['peak_rss_mb']} |")
    return [*lines, ""]


def ask_section(r: dict[str, Any]) -> list[str]:
    lines = [*_heading(f"ask: {r['dataset']} ({r['questions']} questions)", r),
             "Citation precision = share of cited records that are gold evidence; recall = "
             "share of gold records cited. LLM answers kept = share in the model's own words "
             "(mode `llm`; the rest fall back to the extractive answer, for the reasons "
             "below). First text = time to the first piece of the streamed answer. Answer "
             "checklist beside the same score of the gold records joined (the ceiling). "
             "Multiple choice beside the model's own letters (kept or not), its chance rate and "
             "the rate of always answering the letter most often right in these questions.", "",
             "| answer LLM | pipeline | p50 ms | p95 ms | first text p50 ms | LLM calls/q "
             "| prompt tok/q | completion tok/q | citation precision | citation recall "
             "| cites any gold | LLM answers kept | answer checklist (ceiling) "
             "| multiple choice | model's letters | chance | most frequent letter |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in r["rows"]:
        lat = row["latency_ms"]
        first = (row.get("first_text_ms") or {}).get("p50")
        lines.append(f"| {row['llm']} | {row['pipeline']} | {lat['p50']} | {lat['p95']} | "
                     f"{_or_dash(first)} | "
                     f"{row['llm_calls_per_q']} | {row['prompt_tokens_per_q']} | "
                     f"{row['completion_tokens_per_q']} | "
                     f"{_or_dash(row.get('citation_precision'))} | "
                     f"{_or_dash(row.get('citation_recall'))} | {row['cites_gold_evidence']} | "
                     f"{_or_dash(row.get('llm_answers_kept'))} | "
                     f"{_or_dash(row.get('answer_checklist'))}"
                     + (f" ({row['checklist_evidence_ceiling']})"
                        if row.get("checklist_evidence_ceiling") is not None else "") + " | "
                     f"{_or_dash(row.get('mc_accuracy'))} | "
                     f"{_or_dash(row.get('model_letter_accuracy'))} | "
                     f"{_or_dash(row.get('mc_chance'))} | {_or_dash(row.get('mc_majority'))} |")
    kept = [row for row in r["rows"] if row.get("not_kept")]
    if kept:
        lines += ["", "Why the model's answer was not kept (answers per reason):", ""]
        for row in kept:
            lines.append(f"- {row['llm']}, {row['pipeline']}: " + "; ".join(
                f"{reason}: {n}" for reason, n in row["not_kept"].items()))
    typed = [row for row in r["rows"] if row.get("by_type")]
    if typed:
        lines += ["", "Per question type (multiple choice beside the rate of the letter most "
                  "often right among all these questions):", "",
                  "| question type | questions | answer LLM | pipeline | citation precision "
                  "| citation recall | answer checklist | multiple choice "
                  "| most frequent letter |", "|---|---|---|---|---|---|---|---|---|"]
        for kind in sorted({k for row in typed for k in row["by_type"]}):
            for row in typed:
                t = row["by_type"].get(kind)
                if t is None:
                    continue
                lines.append(f"| {kind} | {t['questions']} | {row['llm']} | {row['pipeline']} | "
                             f"{_or_dash(t['citation_precision'])} | "
                             f"{_or_dash(t['citation_recall'])} | "
                             f"{_or_dash(t['answer_checklist'])} | "
                             f"{_or_dash(t['mc_accuracy'])} | {_or_dash(t['mc_majority'])} |")
    return lines + [""]


def citations_section(r: dict[str, Any]) -> list[str]:
    ranker = r["rows"][0].get("ranker", True)
    title = "Multiple-choice citations against what retrieval holds" + (
        "" if ranker else ", without the ranking stage (baseline)")
    lines = [*_heading(title, r),
             "Share of chosen records that are gold evidence, over the LifeBench "
             "multiple-choice questions, extractive answers on the fused pipeline: the records "
             "cited (citation precision), the context's first record, the LLM's pick among the "
             "first k; then the share of questions with a gold record within the first n, the "
             "ceiling of any choice among them. Goal for citation precision: 0.80.", "",
             "| dataset | questions | cited | search's first | LLM's pick (k) "
             + "".join(f"| gold within {n} " for n in r["rows"][0]["within"]) + "|",
             "|---|---|---|---|---|" + "---|" * len(r["rows"][0]["within"])]
    for row in r["rows"]:
        lines.append(f"| {row['dataset']} | {row['questions']} | {_or_dash(row['cited'])} | "
                     f"{_or_dash(row['first'])} | {_or_dash(row['llm_pick'])} ({row['llm']}, "
                     f"{row['k']}) | " + " | ".join(str(v) for v in row["within"].values())
                     + " |")
    return lines + [""]


def _run_as(r: dict[str, Any], command: str) -> str:
    """``command`` as the run was made: under ``bench low-end`` when it was."""
    return command.replace("python3 -m bench", r["wrapper"], 1) if r.get("wrapper") else command


def ui_section(r: dict[str, Any]) -> list[str]:
    command = _run_as(r, f"python3 -m bench ui --db DIR --viewer {r['viewer']} "
                      f"--repeats {r['repeats']}")
    lines = [*_heading(f"Memory inspector over HTTP, {r['events']:,} events",
                       {**r, "command": command}),
             "Each request timed by the client, send to last byte; the script file (no data) "
             f"is the server's floor. Goal: first page (HTML + stats + first timeline page) "
             f"p50 ≤ {r['goal_first_page_ms']:.0f} ms: "
             f"{'met' if r['first_page_met'] else 'not met'}.", "",
             "| request | p50 ms | p95 ms |", "|---|---|---|"]
    lines += [f"| {k} | {v['p50_ms']} | {v['p95_ms']} |" for k, v in r["requests"].items()]
    return lines + [""]


def cold_section(r: dict[str, Any]) -> list[str]:
    command = _run_as(r, f"python3 -m bench cold --db DIR --trials {r['trials']}")
    lines = [*_heading(f"First search in a fresh process, {r['events']:,} events",
                       {**r, "command": command}),
             "p50 of the trials, each a new process (library imported before the clock "
             "starts). `fused` loads on demand (the baseline); `fused-warm` calls `warm_up()` "
             "at open and searches at once; `server` searches once the warm-up is done.", "",
             "| mode | open s | warm-up s | first search s | open → answer s | warm search ms |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {m} | {v['open_s']} | {v['warm_up_s']} | {v['first_s']} | "
              f"{v['open_to_answer_s']} | {v['warm_ms']} |" for m, v in r["modes"].items()]
    lines += ["", "Goals: " + "; ".join(f"{g}: {'met' if ok else 'not met'}"
                                        for g, ok in r["goals"].items()) + "."]
    return lines + [""]


def sync_section(r: dict[str, Any]) -> list[str]:
    lines = [*_heading(f"Sync through a folder, {r['size']:,} observations", r),
             "Device A holds a generated household (hashing embedder); B is fresh and syncs "
             "through the folder; C is the baseline, ingesting A's exported household records "
             "directly (sync sends only those).", "",
             "| | sync | export + ingest | ratio |", "|---|---|---|---|",
             f"| fresh device, s | {r['first_send_s'] + r['fresh_device_sync_s']:.2f} | "
             f"{r['export_s'] + r['fresh_device_ingest_s']:.2f} | {r['fresh_ratio']} |",
             f"| incremental, s for {r['incremental_received']} records | "
             f"{r['incremental_send_s'] + r['incremental_receive_s']:.3f} | "
             f"{r['incremental_ingest_s']:.3f} | {r['incremental_ratio']} |",
             f"| bytes | {r['folder_bytes']:,} (folder) | {r['export_bytes']:,} (whole export)"
             " | |", "",
             f"B holds A's {r['household_records']:,} household records: "
             f"{r['b_holds_a_household']}."]
    if "sealed_ratio" in r:
        lines += ["", f"Sealed with a household key (AES-256-GCM): A's first sync to a second "
                  f"folder and a fresh device D's took "
                  f"{r['sealed_first_send_s'] + r['sealed_fresh_device_sync_s']:.2f} s, "
                  f"{r['sealed_ratio']}x the unsealed first sync; folder "
                  f"{r['sealed_folder_bytes']:,} bytes; D holds them: "
                  f"{r['d_holds_a_household']}."]
    return lines + [""]


def timeexpr_section(r: dict[str, Any]) -> list[str]:
    lines = [*_heading(f"Time expressions: {r['rows'][0]['parser']} parser", r),
             f"Hand-labelled phrases read at {r['reference_now']}: `obs` = the event time an "
             "observation names (to the minute), `question` = the range a question names "
             "(only ranges strong enough to filter count). The rules were fitted to the dev "
             "set; the held-out set was written afterwards and never used to change them. "
             "Targets: precision >= 0.97, recall >= 0.90.", "",
             "| set | language | kind | phrases | positives | precision | recall |",
             "|---|---|---|---|---|---|---|"]
    for row in r["rows"]:
        lines.append(f"| {row.get('set', 'dev')} | {row['lang']} | {row['kind']} | "
                     f"{row['rows']} | {row['positives']} | {row['precision']:.3f} | "
                     f"{row['recall']:.3f} |")
    return lines + [""]


def identity_section(r: dict[str, Any]) -> list[str]:
    lines = [*_heading("Records the old duplicate key dropped", r),
             "The old key took any two observations of one (source, user, time, text) for one "
             "record, whatever their ids, counterparts or visibility. `dropped now`: what the "
             "record identity merges (the same id, or a copy from another device or without "
             "an id: the same instant, text and the fields the source profile names). `kept "
             "now`: records the old key dropped that are stored now.", "",
             "| dataset | observations | old key dropped | dropped now | kept now |",
             "|---|---|---|---|---|"]
    for name, row in r["datasets"].items():
        lines.append(f"| {name} | {row['observations']:,} | {row['dropped_old_key']:,} | "
                     f"{row['dropped_now']:,} | {row['kept_now']:,} |")
    examples = [(name, ex) for name, row in r["datasets"].items() for ex in row["examples"]]
    if examples:
        lines += ["", "Kept now that the old key dropped, for example:", ""]
        lines += [f"- {name}: {ex['source']} of {ex['user']} at {ex['ts']} "
                  f"(`{ex['external_id']}`): {ex['text']!r}" for name, ex in examples[:6]]
    return lines + [""]


def _cmd(section: dict[str, Any]) -> str:
    return str(section.get("command", ""))


def reliability_section(r: dict[str, Any]) -> list[str]:
    lines = ["### Reliability", "", f"{_machine(r['machine'])}; each item names its command.",
             ""]
    if "crash" in r:
        c = r["crash"]
        lines += [f"- **Crash** (`{_cmd(c)}`): {c['kills']} SIGKILLs "
                  f"of an ingesting, forgetting child in {c.get('runs', c['kills'])} runs "
                  f"({c['acknowledged']:,} acknowledgements, re-ingested duplicates included; "
                  f"{c['forgotten']} forgets; {c['seconds']} s): lost {c['lost']}, duplicated "
                  f"{c['duplicated']}, resurrected {c['resurrected']}, index mismatches "
                  f"{c['index_mismatches']}, dangling rows {c['dangling']}; canonicalised "
                  f"memory equal to a clean build: {c['same_as_clean_build']}."]
    if "corruption" in r:
        c = r["corruption"]
        lines += [f"- **Corruption** (`{_cmd(c)}`): {len(c['cases'])} damaged derived "
                  f"files, each rebuilt "
                  f"from SQLite with a log line and answering like every other rebuild: "
                  f"{c['all_rebuilt_and_deterministic']}; zeroed SQLite header: "
                  f"{c['sqlite_header_zeroed']}.", "",
                  "| file | damage | rebuild logged | same results as before | top-20 Jaccard "
                  "vs before | same as other rebuilds |", "|---|---|---|---|---|---|"]
        lines += [f"| {x['file']} | {x['damage']} | {x['rebuild_logged']} | "
                  f"{x['same_results']} | {x['top20_jaccard']} | {x['same_as_other_rebuilds']} |"
                  for x in c["cases"]]
        lines.append("")
    if "fuzz" in r:
        f = r["fuzz"]
        lines += [f"- **Fuzz** (`{_cmd(f)}`): {f['observations']} observations "
                  f"({f['rejected']} refused with "
                  f"InvalidObservation, {f['accepted']} ingested, {f['dead_letters']} "
                  f"dead-lettered, {f['half_written']} half-written), {f['lines']} JSONL lines "
                  f"({f['line_errors']} refused with a reason), {f['queries']} queries "
                  f"({f['query_errors']} InvalidQuery); crashes {f['crashes']}."]
    if "isolation" in r:
        i = r["isolation"]
        lines += [f"- **Isolation** (`{_cmd(i)}`): {i['questions']} questions × "
                  f"{len(i['users'])} users: "
                  f"{i['searches']} searches, {i['shows']} `show`s of fused memories, "
                  f"{i['asks']} asks with every LLM prompt recorded: leaks {i['leaks']}."]
    if "forget" in r:
        g = r["forget"]
        done = "; ".join(f"{k}: {v['observations']} obs, {v['events']} events, "
                         f"{v['fused_removed']} memories removed, {v['fused_updated']} updated"
                         for k, v in g["forgets"].items())
        lines += [f"- **Forget** (`{_cmd(g)}`): {done}. Afterwards {g['checks']} hits and "
                  f"fused memories "
                  f"checked: {g['violations']} derived from forgotten records; indexes match "
                  f"SQLite: {g['indexes_match_sqlite']}."]
        if "on_disk" in g:
            d = g["on_disk"]
            lines += [f"  After close, in the {d['files_scanned']} files of the directory: "
                      f"{d['traces_in_files']} of {d['texts_checked']} forgotten texts found in "
                      f"any file's bytes; {d['words_still_indexed']} of {d['words_checked']} "
                      f"of their words (held by no live record) still counted by the text "
                      f"index; {d['vectors_still_stored']} of {d['vectors_checked']} of their "
                      f"vectors in the dense index's file (deleted points read too)."]
    if "multiprocess" in r:
        m = r["multiprocess"]
        lines += [f"- **Several processes** (`{_cmd(m)}`): {m['rounds']} rounds of an "
                  f"ingesting owner ({m['takeovers']} SIGKILLed part-way), a second ingest "
                  f"handing its records over through the inbox and {m['searches']} searches "
                  f"beside them, over {m['observations']:,} observations: lost {m['lost']}, "
                  f"duplicated {m['duplicated']}, failed commands {m['failed_commands']}, left "
                  f"in the inbox {m['inbox_left']}."]
    return lines + [""]


def forget_section(r: dict[str, Any]) -> list[str]:
    lines = [*_heading("Forget latency", r),
             "Each row on its own copy of one generated household memory (hashing "
             "vectors, 384-d). `erase on` (the default) writes the index files again so "
             "nothing forgotten stays in them; `erase off` only hides the records from "
             "searches (`IndexConfig(erase_on_forget=False)`, what forget did before). "
             f"Goal: one record <= {r['goal_one_record_s']} s p50 at 100k.", "",
             "| observations | erase | one record p50 (s) | one record, each (s) | whole "
             "source | its observations | seconds | dense compacted |",
             "|---|---|---|---|---|---|---|---|"]
    for row in r["rows"]:
        lines.append(f"| {row['size']:,} | {'on' if row['erase'] else 'off'} | "
                     f"{row['one_record_p50_s']} | "
                     f"{', '.join(str(x) for x in row['one_record_s'])} | {row['source']} | "
                     f"{row['source_observations']:,} | {row['source_s']} | "
                     f"{row['source_compacted']} |")
    return lines + [""]


def plots(results: dict[str, dict[str, Any]]) -> list[str]:
    """PNG plots next to RESULTS.md; returns the Markdown that shows them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    PLOTS.mkdir(exist_ok=True)
    out = []
    engines = sorted((r for n, r in results.items() if n.startswith("engine-")
                      and "-efc" not in n and "ingest" in r
                      and r.get("corpus") == "generated" and "hashing" not in r.get(
                          "embedder", "")), key=lambda r: r["size"])
    if len(engines) >= 2:
        fig, ax = plt.subplots(figsize=(6, 4))
        for pipeline in engines[0]["search"]:
            ax.plot([r["size"] for r in engines], [r["search"][pipeline]["p50"] for r in engines],
                    marker="o", label=f"{pipeline} p50")
        ax.plot([r["size"] for r in engines], [r["ann"]["numpy_bruteforce_ms"]["p50"]
                                               for r in engines], "k--",
                label="vector scan only: numpy brute force")
        ax.plot([r["size"] for r in engines], [r["ann"]["hnsw_ms"]["p50"] for r in engines],
                "k:", label="vector scan only: HNSW")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("observations")
        ax.set_ylabel("search latency ms")
        ax.set_title("Search latency vs corpus size (generated household)")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(PLOTS / "latency_vs_size.png", dpi=110)
        plt.close(fig)
        out += ["![latency vs size](plots/latency_vs_size.png)", ""]
    scale = next((r for n, r in results.items() if n.startswith("scale-")), None)
    if scale and len(scale["steps"]) >= 2:
        steps = scale["steps"]
        sizes = [st["size"] for st in steps]
        fig, ax = plt.subplots(figsize=(6, 4))
        series = {
            "ingest ms per observation": [1000 * st["ingest_seconds"] / st["added"]
                                          for st in steps],
            "hybrid p50 ms": [st["search_excluding_query_embedding"]["hybrid"]["p50"]
                              for st in steps],
            "fused p50 ms": [st["search_excluding_query_embedding"]["fused"]["p50"]
                             for st in steps],
            "resident MB / 100": [st["rss_mb"]["memory"] / 100 for st in steps],
            "disk MB / 100": [st["disk_mb"] / 100 for st in steps],
        }
        for label, values in series.items():
            ax.plot(sizes, values, marker="o", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("observations in the memory")
        ax.set_title(f"Cost vs size ({scale['embedder']} vectors)")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(PLOTS / "cost_vs_size.png", dpi=110)
        plt.close(fig)
        out += ["![cost vs size](plots/cost_vs_size.png)", ""]
    quality = results.get("quality-generated")
    if quality:
        rows = [r for r in quality["rows"] if r["category"] != "all"]
        cats = sorted({r["category"] for r in rows})
        pipes = list(dict.fromkeys(r["pipeline"] for r in rows))
        fig, ax = plt.subplots(figsize=(8, 4))
        width = 0.8 / len(pipes)
        for j, p in enumerate(pipes):
            vals = [next((r["recall"]["20"] for r in rows
                          if r["category"] == c and r["pipeline"] == p), 0) for c in cats]
            ax.bar([i + j * width for i in range(len(cats))], vals, width, label=p)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(cats))])
        ax.set_xticklabels([c.replace(" ", "\n", 1) for c in cats], fontsize=7)
        ax.set_ylabel("evidence recall@20")
        ax.set_title("Generated household: recall@20 per category and pipeline")
        ax.legend(fontsize=6, ncol=3)
        fig.tight_layout()
        fig.savefig(PLOTS / "quality_per_category.png", dpi=110)
        plt.close(fig)
        out += ["![quality per category](plots/quality_per_category.png)", ""]
    return out


def main(argv: list[str] | None = None) -> None:
    """Write RESULTS.md and the plots."""
    import argparse

    argparse.ArgumentParser(prog="python3 -m bench report",
                            description="Render bench/RESULTS.md and bench/plots/*.png from "
                                        "bench/results/*.json.").parse_args(argv)
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
        if name.startswith("memory-"):
            lines += memory_section(name, r)
    for name, r in results.items():
        if name.startswith("scale-"):
            lines += scale_section(r)
    for name, r in results.items():
        if name.startswith("ann-"):
            lines += ann_section(r)
    for name, r in results.items():
        if name.startswith(("fusion-lifebench", "fusion-generated")):
            lines += fusion_section(r)
    if "fusion-fit" in results:
        lines += fusion_fit_section(results["fusion-fit"])
    if "rank-fit" in results:
        lines += rank_fit_section(results["rank-fit"])
    if "fusion-arbiter" in results:
        lines += arbiter_section(results["fusion-arbiter"])
    lines += candidates_section(results)
    if "edges-generated" in results:
        lines += edges_section(results["edges-generated"])
    if "misses" in results:
        lines += misses_section(results["misses"])
    for name, r in results.items():
        if name.startswith("quality-"):
            lines += quality_section(r)
    for name, r in results.items():
        if name.startswith("timeexpr-"):
            lines += timeexpr_section(r)
    for name, r in results.items():
        if name.startswith("ask-") and name != "ask-every":
            lines += ask_section(r)
    if "ask-every" in results:
        lines += ask_every_section(results["ask-every"])
    if "abstain" in results:
        lines += abstain_section(results["abstain"])
    if "import-scale" in results:
        lines += import_scale_section(results["import-scale"])
    for name, r in results.items():
        if name.startswith("citations-"):
            lines += citations_section(r)
    for name, r in results.items():
        if name.startswith("ui-"):
            lines += ui_section(r)
        if name.startswith("cold-"):
            lines += cold_section(r)
        if name.startswith("sync-"):
            lines += sync_section(r)
    if "identity" in results:
        lines += identity_section(results["identity"])
    if "forget" in results:
        lines += forget_section(results["forget"])
    if "reliability" in results:
        lines += reliability_section(results["reliability"])
    lines += ["## Plots", ""] + plots(results)
    OUT.write_text("\n".join(lines))
    print(f"wrote {OUT}")
