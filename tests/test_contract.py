"""The documented contract: ``now`` bounds every pipeline, unsupported answers are refused,
and what a model says (planner rewrites and ranges, agentic follow-ups, fusion arbitration)
changes the outcome. The model is a scripted fake: these tests are about the engine."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memfuse_lite import InvalidQuery, MemFuse, MemFuseConfig
from memfuse_lite.answer import (
    DONT_KNOW,
    compose,
    evidence_for,
    for_answer,
    matches,
    supported,
)
from memfuse_lite.answer.extractive import extractive_answer
from memfuse_lite.answer.support import WRONG_PERSON, echoes
from memfuse_lite.answer.wording import about_question
from memfuse_lite.config import FusionConfig, IngestConfig, RetrievalConfig
from memfuse_lite.records import FusedMemory, Hit, Provenance
from memfuse_lite.retrieve.agentic import clip, without_head
from memfuse_lite.retrieve.llm_planner import merge_rewrites
from memfuse_lite.retrieve.planner import plan_query

from .conftest import obs
from .fakes import ScriptedLLM
from .scenarios import DENTIST, GRANDMA, TRIP, observations

PIPELINES = ("dense", "bm25", "hybrid", "fused", "agentic")
NOISE = ["Grocery delivery arriving between 6 and 7 pm", "Weekly team sync notes: budget review",
         "Your electricity bill of 230 yuan is due", "Rainy weather expected all weekend",
         "Gym class reminder: spin at 7am", "Package from JD.com shipped",
         "Piano lesson moved to the music school hall", "Car insurance renewal notice",
         "Book club picks a new novel", "Lunch with colleagues at the noodle bar",
         "Photo: sunset over the river", "Parking fee paid 15 yuan"]


def ingest(mem: MemFuse, rows: list[tuple[str, str]]) -> None:
    """(ts, text) rows, all ana's chat messages."""
    async def run() -> None:
        await mem.ingest_many([obs(text, ts=ts, ext=f"r{i}") for i, (ts, text) in
                               enumerate(rows)])
        await mem.flush()

    asyncio.run(run())


def noise_rows(n: int, month: str = "2025-02") -> list[tuple[str, str]]:
    return [(f"{month}-{1 + i % 27:02d}T{8 + i % 10:02d}:00", f"{NOISE[i % len(NOISE)]} #{i}")
            for i in range(n)]


@pytest.fixture
def dentist_memory(open_memory) -> MemFuse:
    mem = open_memory()
    ingest(mem, [("2025-03-01T09:00", "Dentist appointment with Dr. Lin on Wednesday"),
                 ("2025-03-10T09:00", "Dentist Dr. Lin: the cleaning is moved to March 20"),
                 *noise_rows(20)])
    return mem


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_now_bounds_every_pipeline(dentist_memory: MemFuse, pipeline: str) -> None:
    mem = dentist_memory
    now = datetime(2025, 3, 5, 12, 0)
    later = "Dentist Dr. Lin: the cleaning is moved to March 20"
    asked_later = mem.search("dentist Dr. Lin", viewer="ana", pipeline=pipeline)
    assert later in [h.text for h in asked_later.hits], "without now, everything is searched"
    asked_then = mem.search("dentist Dr. Lin", viewer="ana", pipeline=pipeline, now=now)
    assert asked_then.hits, "what was recorded before now is still found"
    assert later not in [h.text for h in asked_then.hits]
    assert all(datetime.fromisoformat(h.provenance[0].ts) <= now.replace(tzinfo=UTC)
               for h in asked_then.hits)  # the memory reads `now` in its zone, UTC


def cite(prompt: str, *texts: str) -> list[int]:
    """The numbers an answer prompt gives the records holding each of ``texts``."""
    lines = prompt.split("Records:\n")[1].splitlines()
    return [int(next(line for line in lines if t in line)[1:].split("]")[0]) for t in texts]


def citing(answer: str, text: str) -> ScriptedLLM:
    """A fake answer LLM that answers ``answer`` citing the record holding ``text``."""
    return ScriptedLLM(lambda op, prompt: {
        "answer": answer, "citations": cite(prompt, text), "known": True})


def answering(value: dict[str, Any]) -> ScriptedLLM:
    return ScriptedLLM(lambda op, prompt: value if op == "answer" else
                       {"sufficient": True, "follow_up": ""})


@pytest.mark.parametrize(("question", "value", "mode", "says"), [
    # supported by the cited record: kept, whatever the model's own flag says
    ("When is the dentist?", {"answer": "On Wednesday", "citations": ["FIRST"],
                              "known": False}, "llm", "On Wednesday"),
    # asserts what the record does not say: the extractive answer instead
    ("When is the dentist?", {"answer": "On Friday at 5pm", "citations": ["FIRST"],
                              "known": True}, "fallback", "Dentist appointment"),
    ("When is the dentist?", {"answer": "On Wednesday", "citations": [], "known": True},
     "fallback", "Dentist appointment"),
    ("When is the dentist?", {"answer": "On Wednesday", "citations": [2],
                              "known": True}, "fallback", "Dentist appointment"),
    ("When is the dentist?", {"answer": "", "citations": ["FIRST"], "known": True},
     "fallback", "Dentist appointment"),
    # a bare time: "why" is never answered by one; "when" is, by one the text states,
    # not by the record's own time (when it was written, not when the dentist is)
    ("When is the dentist?", {"answer": "2025-03-01T09:00", "citations": ["FIRST"],
                              "known": True}, "fallback", "Dentist appointment"),
    ("Why is the dentist on Wednesday?", {"answer": "2025-03-01T09:00", "citations": ["FIRST"],
                                          "known": True}, "fallback", "Dentist appointment"),
    # nothing in memory is about it: the documented refusal, even for a confident model
    ("What is my hamster called?", {"answer": "Your hamster is called Fluffy",
                                    "citations": ["FIRST"], "known": True}, "fallback",
     DONT_KNOW),
    # the record holds fewer than half of the question's key words: nothing to go on,
    # whatever it states
    ("When is the dentist appointment with Dr. Patel at the Elm Road clinic?",
     {"answer": "On Wednesday", "citations": ["FIRST"], "known": True}, "fallback", DONT_KNOW),
])
def test_llm_answers_stand_only_on_the_records_they_cite(
        config: MemFuseConfig, embedder, tmp_path, question: str, value: dict[str, Any],
        mode: str, says: str) -> None:
    seed = MemFuse(tmp_path / "seed", config=config, embedder=embedder)
    ingest(seed, [("2025-03-01T09:00", "Dentist appointment with Dr. Lin on Wednesday")])
    first = seed.search("dentist", viewer="ana", pipeline="bm25").hits[0].event_id
    seed.close()
    value = {**value, "citations": [1 if c == "FIRST" else c for c in value["citations"]]}
    llm = answering(value)
    cfg = MemFuseConfig(model_dir=config.model_dir, answer_llm="scripted")
    mem = MemFuse(tmp_path / "seed", config=cfg, embedder=embedder, llms={"scripted": llm})
    try:
        answer = asyncio.run(mem.ask(question, viewer="ana"))
    finally:
        mem.close()
    assert "answer" in llm.operations()
    assert answer.mode == mode and says in answer.text
    if says == DONT_KNOW:
        assert not answer.known and answer.citations == ()
    else:
        assert answer.known and [c.event_id for c in answer.citations] == [first]


def test_an_llm_answer_cites_only_the_records_it_rests_on(
        config: MemFuseConfig, embedder, tmp_path) -> None:
    seed = MemFuse(tmp_path / "m", config=config, embedder=embedder)
    ingest(seed, [("2025-03-01T09:00", "Dentist appointment with Dr. Lin on Wednesday"),
                  ("2025-03-01T10:00", "Dentist Dr. Lin: parking is behind the clinic")])
    ids = {h.text.split()[1]: h.event_id
           for h in seed.search("dentist", viewer="ana", pipeline="bm25").hits}
    seed.close()
    # the second record shares words with the answer, but none the first does not hold
    llm = ScriptedLLM(lambda op, prompt: {
        "answer": "With Dr. Lin on Wednesday", "known": True,
        "citations": cite(prompt, "parking", "appointment")} if op == "answer" else {})
    cfg = MemFuseConfig(model_dir=config.model_dir, answer_llm="scripted")
    mem = MemFuse(tmp_path / "m", config=cfg, embedder=embedder, llms={"scripted": llm})
    try:
        answer = asyncio.run(mem.ask("When is the dentist appointment?", viewer="ana"))
    finally:
        mem.close()
    assert answer.mode == "llm"
    assert [c.event_id for c in answer.citations] == [ids["appointment"]]
    # a question asking two things: each record stating a part of the answer is kept
    llm = ScriptedLLM(lambda op, prompt: {
        "answer": "On Wednesday; parking is behind the clinic", "known": True,
        "citations": cite(prompt, "parking", "appointment")} if op == "answer" else {})
    mem = MemFuse(tmp_path / "m", config=cfg, embedder=embedder, llms={"scripted": llm})
    try:
        answer = asyncio.run(mem.ask("When is the dentist appointment, and where is the "
                                     "parking?", viewer="ana"))
    finally:
        mem.close()
    assert answer.mode == "llm"
    assert sorted(c.event_id for c in answer.citations) == sorted(ids.values())


def test_an_llm_answer_resting_on_a_record_less_about_the_question_falls_back(
        config: MemFuseConfig, embedder, tmp_path) -> None:
    """"When does Ana land in Chengdu?": the calendar's meeting in Chengdu states its own
    time, but the message about landing holds more of the question."""
    seed = MemFuse(tmp_path / "m", config=config, embedder=embedder)
    ingest(seed, [("2025-02-01T08:20", "My flight is delayed, I now land in Chengdu at 14:00"),
                  ("2025-01-28T09:00", "Meeting with Omar Aziz in Chengdu, Monday 15:00")])
    seed.close()
    cfg = MemFuseConfig(model_dir=config.model_dir, answer_llm="scripted")
    for text, mode in (("Meeting", "fallback"), ("land", "llm")):
        answer_text = "Monday 15:00" if text == "Meeting" else "At 14:00"
        llm = ScriptedLLM(lambda op, prompt, text=text, said=answer_text: {
            "answer": said, "known": True, "citations": cite(prompt, text)}
            if op == "answer" else {})
        mem = MemFuse(tmp_path / "m", config=cfg, embedder=embedder, llms={"scripted": llm})
        try:
            answer = asyncio.run(mem.ask("When does Ana land in Chengdu?", viewer="ana"))
        finally:
            mem.close()
        assert answer.mode == mode, text
        assert "14:00" in answer.text


def test_an_evidence_line_copied_into_the_answer_loses_its_header(
        config: MemFuseConfig, embedder, tmp_path) -> None:
    seed = MemFuse(tmp_path / "m", config=config, embedder=embedder)
    ingest(seed, [("2025-03-01T09:00", "Dentist appointment with Dr. Lin on Wednesday")])
    seed.close()

    def copy_first_line(op: str, prompt: str) -> dict[str, Any]:
        line = prompt.split("Records:\n")[1].splitlines()[0]  # "[1] <time> chat/ana: <text>"
        return {"answer": line, "known": True, "citations": [1]} if op == "answer" else {}

    cfg = MemFuseConfig(model_dir=config.model_dir, answer_llm="scripted")
    mem = MemFuse(tmp_path / "m", config=cfg, embedder=embedder,
                  llms={"scripted": ScriptedLLM(copy_first_line)})
    try:
        answer = asyncio.run(mem.ask("When is the dentist appointment?", viewer="ana"))
    finally:
        mem.close()
    assert answer.mode == "llm"
    assert answer.text == "Dentist appointment with Dr. Lin on Wednesday"
    assert without_head("On 2025-03-01T09:00 chat/ana: it was booked") == \
        "On 2025-03-01T09:00 chat/ana: it was booked", "only a leading header goes"
    assert without_head("2025-02-13T08:40 calendar/ana (superseded by 1)") == "", \
        "a header copied alone is no answer"
    assert without_head("2025-03-07: 家长会 周五 15:00 实验小学 (2 reports from calendar, chat; "
                        "ben, mia)") == "家长会 周五 15:00 实验小学", "a summary's layout goes"
    assert without_head("my flight to Beijing is delayed (2 reports from calendar, sms; ana, "
                        "ben)") == "my flight to Beijing is delayed"
    assert without_head("2025-03-07") == "2025-03-07", "a date alone is an answer"


def test_merge_rewrites_keeps_a_place_for_each_source() -> None:
    rules = ("Where is the dentist?", "dentist", "Lin dentist")
    assert merge_rewrites(rules, ["dental clinic address"], 3) == (
        "Where is the dentist?", "dental clinic address", "dentist")
    assert merge_rewrites(rules, ["DENTIST", "x"], 3) == ("Where is the dentist?", "DENTIST", "x")
    assert merge_rewrites(rules, [], 3) == rules
    assert merge_rewrites(("q",), ["a", "b", "c"], 2) == ("q", "a")


def planner_memory(open_memory, config: MemFuseConfig, plan: dict[str, Any]) -> MemFuse:
    llm = ScriptedLLM(lambda op, prompt: plan)
    cfg = MemFuseConfig(model_dir=config.model_dir, plan_llm="scripted",
                        ingest=config.ingest, retrieval=RetrievalConfig(max_rewrites=2))
    return open_memory(config=cfg, llms={"scripted": llm})


SECRET = "Zephyrine sang in the choir at the winter recital"


def test_an_llm_rewrite_reaches_the_index(open_memory, config: MemFuseConfig) -> None:
    question = "Which gadget did the courier bring for the kitchen?"
    assert len(plan_query(question, None).rewrites) == 2, \
        "the rules alone fill every rewrite place (max_rewrites=2 below)"
    base = open_memory()
    ingest(base, [("2025-02-20T10:00", SECRET), *noise_rows(40)])
    plain = [h.text for h in base.search(question, viewer="ana", pipeline="fused", k=5).hits]
    assert plain[0] != SECRET
    base.close()
    mem = planner_memory(open_memory, config, {"rewrites": ["Zephyrine choir"], "start": None,
                                               "end": None, "source": None, "people": []})
    hits = [h.text for h in mem.search(question, viewer="ana", pipeline="fused", k=5).hits]
    # the rewrite's own lists put the record nothing else asks for first
    assert hits[0] == SECRET, (plain, hits)


def test_an_llm_time_range_filters(open_memory, config: MemFuseConfig) -> None:
    rows = [("2025-01-15T10:00", "Dinner with the Wangs at the dumpling house"),
            ("2025-02-15T10:00", "Dinner with the Wangs at the hotpot place")]
    question = "Where did we have dinner with the Wangs?"
    base = open_memory()
    ingest(base, [*rows, *noise_rows(10)])
    now = datetime(2025, 3, 1)
    both = [h.text for h in base.search(question, viewer="ana", pipeline="fused", now=now).hits]
    assert rows[0][1] in both and rows[1][1] in both
    base.close()
    mem = planner_memory(open_memory, config, {"rewrites": [], "start": "2025-02-01",
                                               "end": "2025-02-28", "source": None,
                                               "people": []})
    found = [h.text for h in mem.search(question, viewer="ana", pipeline="fused", now=now).hits]
    assert rows[1][1] in found and rows[0][1] not in found


def agentic_memory(open_memory, config: MemFuseConfig, script: ScriptedLLM) -> MemFuse:
    cfg = MemFuseConfig(model_dir=config.model_dir, answer_llm="scripted",
                        ingest=config.ingest)
    return open_memory(config=cfg, llms={"scripted": script})


def test_agentic_follow_ups_change_the_context(open_memory, config: MemFuseConfig) -> None:
    question = "Which gadget did the courier bring for the kitchen?"
    follow = iter(["Zephyrine choir", "winter recital singing", "kitchen gadget", "courier"])
    llm = ScriptedLLM(lambda op, prompt: {"sufficient": False, "follow_up": next(follow)})
    mem = agentic_memory(open_memory, config, llm)
    ingest(mem, [("2025-02-20T10:00", SECRET), *noise_rows(80)])
    one_round = mem.search(question, viewer="ana", pipeline="fused", k=5)
    assert SECRET not in [h.text for h in one_round.hits]
    result = mem.search(question, viewer="ana", pipeline="agentic", k=5)
    assert result.rounds == 5, "never sufficient: the maximum number of rounds"
    assert llm.operations().count("agentic") == 4
    assert SECRET in [h.text for h in result.hits], "the follow-up's find is in the context"


def test_agentic_stops_when_the_model_says_enough(open_memory, config: MemFuseConfig) -> None:
    llm = ScriptedLLM(lambda op, prompt: {"sufficient": True, "follow_up": "more please"})
    mem = agentic_memory(open_memory, config, llm)
    ingest(mem, noise_rows(30))
    result = mem.search("electricity bill", viewer="ana", pipeline="agentic", k=20)
    assert result.rounds == 2, "sufficient at the first check: the minimum of two rounds"
    assert llm.operations().count("agentic") == 2


def household(mem: MemFuse) -> MemFuse:
    """``mem`` holding the dentist, trip and grandmother scenarios among 40 noise records."""
    async def run() -> None:
        await mem.ingest_many(list(observations(DENTIST + TRIP + GRANDMA)))
        await mem.flush()

    asyncio.run(run())
    ingest(mem, noise_rows(40))
    return mem


@pytest.mark.parametrize("pipeline", ["fused", "agentic"])
def test_context_holds_k_events_besides_the_summaries(open_memory, pipeline: str) -> None:
    mem = household(open_memory())
    result = mem.search("dentist appointment Dr. Lin", viewer="ana", pipeline=pipeline, k=20)
    assert result.fused, "fused summaries are in the context"
    assert len(result.hits) == 20, "and take none of the k event places"


@pytest.mark.parametrize("same", [True, False])
def test_fusion_arbiter_decides_the_ambiguous_band(tmp_path, embedder, model_dir,
                                                   same: bool) -> None:
    llm = ScriptedLLM({"fuse": {"same_episode": same}})
    cfg = MemFuseConfig(model_dir=model_dir, fusion_llm="scripted",
                        ingest=IngestConfig(batch_size=4, batch_latency_s=0.01),
                        fusion=FusionConfig(scorer="rules", join_threshold=1.4,
                                            ambiguous_threshold=0.0))
    mem = MemFuse(tmp_path / "m", config=cfg, embedder=embedder, llms={"scripted": llm})
    try:
        ingest(mem, [("2025-03-01T09:00", "Dentist appointment with Dr. Lin on Wednesday"),
                     ("2025-03-01T09:30", "The clinic moved the dentist to Thursday"),
                     ("2025-03-01T10:00", "Pick up Mia after the dentist")])
        assert llm.operations().count("fuse") >= 2
        fused = {mem.fused_of(i) for i in (1, 2, 3)}
    finally:
        mem.close()
    assert len(fused) == (1 if same else 3)


CHOICES = {"A": "At the dumpling house", "B": "At the hotpot place", "C": "At home"}


def test_multiple_choice_is_constrained_to_the_letters(open_memory, config: MemFuseConfig,
                                                        tmp_path) -> None:
    seen: list[dict[str, Any]] = []

    class Recording(ScriptedLLM):
        def _complete(self, messages, *, max_tokens, schema, temperature):  # type: ignore[override]
            seen.append(dict(schema or {}))
            return super()._complete(messages, max_tokens=max_tokens, schema=schema,
                                     temperature=temperature)

    llm = Recording(lambda op, prompt: {"answer": "dumplings", "citations": [], "known": False,
                                        "choice": "A"} if op == "answer" else {})
    mem = open_memory(config=MemFuseConfig(model_dir=config.model_dir, answer_llm="scripted",
                                           ingest=config.ingest), llms={"scripted": llm})
    ingest(mem, [("2025-02-15T10:00", "Dinner with the Wangs at the hotpot place")])
    answer = asyncio.run(mem.ask("Where did we eat with the Wangs?", viewer="ana",
                                 choices=CHOICES))
    assert answer.mode == "fallback", "no citation: the extractive answer"
    assert answer.choice == "B", "and the letter closest to the record, not the LLM's"
    assert seen[-1]["properties"]["choice"] == {"enum": ["A", "B", "C"]}
    assert "choice" in seen[-1]["required"]
    assert "B. At the hotpot place" in llm.calls[-1][1]
    with pytest.raises(InvalidQuery):
        asyncio.run(mem.ask("Where?", viewer="ana", choices={"A": "only one"}))


WHERE_WE_ATE = {"A": "At the dumpling house", "B": "At home", "C": "At the hotpot place"}


def ask_where_we_ate(tmp_path: Path, config: MemFuseConfig, embedder, record: str,
                     answer: str, letter: str) -> Any:
    """Multiple choice over one dinner record, with a scripted LLM that answers ``answer``,
    picks ``letter`` and cites the record."""
    llm = ScriptedLLM(lambda op, prompt: {
        "answer": answer, "known": True,
        "citations": [int(prompt.split("Records:\n[")[1].split("]")[0])],
        "choice": letter} if op == "answer" else {})
    cfg = MemFuseConfig(model_dir=config.model_dir, answer_llm="scripted", ingest=config.ingest)
    fresh = tmp_path / f"m{len(list(tmp_path.iterdir()))}"  # a new memory each call
    mem = MemFuse(fresh, config=cfg, embedder=embedder, llms={"scripted": llm})
    try:
        ingest(mem, [("2025-02-15T10:00", record)])
        return asyncio.run(mem.ask("Where did we eat with the Wangs?", viewer="ana",
                                   choices=WHERE_WE_ATE))
    finally:
        mem.close()


def test_an_llm_letter_stands_only_when_its_cited_records_state_the_option(
        config: MemFuseConfig, embedder, tmp_path) -> None:
    def ask(letter: str) -> Any:
        return ask_where_we_ate(tmp_path, config, embedder,
                                "Dinner with the Wangs at the hotpot place",
                                "We ate at the hotpot place with the Wangs", letter)

    right = ask("C")
    assert right.mode == "llm" and right.choice == "C"
    guessed = ask("A")  # the answer stands, but the record says nothing of dumplings
    assert guessed.mode == "llm" and guessed.choice == "C", guessed.rejected


def test_an_answer_that_is_only_a_letter_stands_on_the_option_its_records_favour(
        config: MemFuseConfig, embedder, tmp_path) -> None:
    """A small model often answers "B": a bare letter asserts its option, which stands only
    when the records the model cites hold more of that option than of any other (the
    letter's own character, "b" of "booked by Bella", counts for nothing)."""
    def ask(answer: str, letter: str) -> Any:
        return ask_where_we_ate(tmp_path, config, embedder,
                                "Dinner with the Wangs at the hotpot place, table booked by "
                                "Bella", answer, letter)

    stated = ask("C. At the hotpot place", "C")
    assert stated.mode == "llm" and stated.choice == "C"
    bare = ask("C", "C")
    assert bare.mode == "llm" and bare.text == "C. At the hotpot place" and bare.choice == "C"
    assert len(bare.citations) == 1
    other = ask("B", "B")
    assert other.mode == "fallback" and other.choice == "C"
    assert other.rejected is not None and other.rejected.choice == "B"


def test_evidence_lines_are_cut_by_width_wide_characters_counting_twice() -> None:
    assert clip("dentist   moved\nto Thursday") == "dentist moved to Thursday"
    assert len(clip("a" * 500)) == 140
    assert len(clip("牙" * 500)) == 70, "a Chinese character costs a small LLM about a token"
    assert clip("ab 牙医 cd", 6) == "ab 牙"


def test_records_are_ordered_for_the_answer_by_what_they_state() -> None:
    def hit(i: int, text: str) -> Hit:
        return Hit(event_id=i, score=1.0 - i / 10, text=text, provenance=(), via="seed")

    hits = (hit(1, "Dinner with the Wangs cancelled"), hit(2, "Flight to Beijing delayed"),
            hit(3, "The Wangs dinner is cancelled because the flight to Beijing is delayed"))
    ordered = for_answer("Why was the dinner with the Wangs cancelled, was a flight delayed?",
                         hits)
    assert [h.event_id for h in ordered] == [3, 1, 2]
    assert for_answer("?", hits) == hits, "no content words: retrieval order"
    assert matches("Which flight was delayed?", hits[1])
    assert not matches("Which flight was delayed?", hits[0])



def test_a_long_question_is_answered_from_a_record_holding_four_of_its_key_words() -> None:
    def hit(i: int, text: str) -> Hit:
        return Hit(event_id=i, score=1.0 - i / 10, text=text, via="seed",
                   provenance=(Provenance(i, "note", f"x{i}", "lei", "phone",
                                          "2025-01-15T09:00"),))

    # twelve key words, most of them about how it asks: no record holds half of them
    question = ("The real gun shooting activity that Lei experienced with friends in "
                "mid-January: what social interaction served as the initial inspiration for "
                "its planning?")
    memo = hit(1, "Weekend activity memo: Zhang Wei proposed a real gun shooting trip with "
                  "friends at the weekend")
    text, known, cited = extractive_answer(question, (memo,))
    assert known and cited == (1,) and "Zhang Wei proposed" in text
    three = hit(2, "Weekend activity memo: a real gun museum visit")
    assert extractive_answer(question, (three,)) == (DONT_KNOW, False, ()), \
        "three of twelve key words: not about the question"
    assert about_question(4, 11) and not about_question(3, 11)
    assert about_question(2, 4) and not about_question(1, 4), "a short question: half"


def test_a_record_holds_its_authors_name_and_its_app_for_the_answer() -> None:
    def hit(i: int, user: str, source: str, text: str) -> Hit:
        return Hit(event_id=i, score=1.0 - i / 10, text=text,
                   provenance=(Provenance(i, source, f"x{i}", user, "phone",
                                          "2025-02-01T08:00"),), via="seed")

    mia = hit(1, "mia", "chat", "My flight is delayed, I now land in Osaka at 15:10")
    ben = hit(2, "ben", "chat", "My flight is delayed, I now land in Osaka at 13:40")
    assert for_answer("When does Ben land in Osaka?", (mia, ben)) == (ben, mia)
    note = hit(1, "ana", "note", "Dinner with Zhou Tao at Golden Dragon")
    entry = hit(2, "ana", "calendar", "Dinner with Zhou Tao at Golden Dragon")
    assert for_answer("Which restaurant does Ana's calendar show for the dinner with "
                      "Zhou Tao?", (note, entry)) == (entry, note)


def test_a_report_that_replaced_a_record_comes_before_it_for_the_answer() -> None:
    plan = Hit(event_id=1, score=0.9, text="Dinner with Tom Becker – Blue Fin Sushi, Thursday "
               "20 February 18:30", provenance=(), via="seed", superseded_by=(3,))
    vet = Hit(event_id=2, score=0.8, text="Vet appointment Thursday 20 February 14:00",
              provenance=(), via="seed")
    moved = Hit(event_id=3, score=0.7, text="From Tom: Blue Fin is full tonight, let's go to "
                "Cafe Soleil instead, same time", provenance=(), via="seed")
    ordered = for_answer("Where did Ana have dinner with Tom Becker on Thursday 20 February?",
                         (plan, vet, moved))
    assert [h.event_id for h in ordered] == [3, 1, 2]


def test_the_latest_of_look_alike_reports_comes_first_for_the_answer() -> None:
    def hit(i: int, source: str, ts: str, text: str) -> Hit:
        return Hit(event_id=i, score=1.0 - i / 10, text=text, via="seed",
                   provenance=(Provenance(i, source, f"x{i}", "ben", "phone", ts),))

    older = hit(1, "chat", "2025-01-11T07:50", "My flight is delayed, I now land in Chengdu "
                "at 12:50 on Saturday 11 January")
    newer = hit(2, "chat", "2025-02-04T07:50", "My flight is delayed, I now land in Chengdu "
                "at 12:40 on Tuesday 4 February")
    assert for_answer("When does Ben land in Chengdu?", (older, newer)) == (newer, older)
    assert for_answer("When did Ben land in Chengdu on Saturday 11 January?",
                      (older, newer)) == (older, newer), "the older one holds the day asked"
    noted = hit(2, "note", "2025-02-04T07:50", newer.text)
    assert for_answer("When does Ben land in Chengdu?", (older, noted)) == (older, noted), \
        "another app's record is no look-alike report"
    other = hit(2, "chat", "2025-02-04T07:50", "Landed in Chengdu, the hotel is lovely, "
                "dinner at the hot pot place with Sara tonight")
    assert for_answer("When does Ben land in Chengdu?", (older, other)) == (older, other)


def test_asked_why_the_answer_quotes_what_the_record_names_as_its_cause(open_memory) -> None:
    mem = household(open_memory())
    now = datetime(2025, 4, 12, 9, 0)
    result = mem.search("Why did Ben move the client meeting with Zhou Tao?", viewer="ben",
                        now=now, pipeline="fused")
    move = next(h for h in result.hits if "Moved the client meeting" in h.text)
    notice = next(h for h in result.hits if h.text.startswith("Airline notice"))
    assert move.caused_by == (notice.event_id,)
    assert move.to_json()["caused_by"] == [notice.event_id]
    answer = asyncio.run(mem.ask("Why did Ben move the client meeting with Zhou Tao?",
                                 viewer="ben", now=now))
    assert "Airline notice" in answer.text and "Moved the client meeting" in answer.text
    cited = [c.event_id for c in answer.citations]
    assert cited[:2] == [move.event_id, notice.event_id]
    plain = asyncio.run(mem.ask("When was the client meeting with Zhou Tao moved to?",
                                viewer="ben", now=now))
    assert "Airline notice" not in plain.text, "only a question asking why quotes the cause"


def test_asked_why_a_plan_moved_the_answer_quotes_the_news_that_announced_it(
        open_memory) -> None:
    """The report that moved a plan names no cause; the news before it that announced the
    change ("Dr. Patel broke a wrist, your appointment has to be rebooked") is why."""
    rows = [("cal", "calendar", "ben", "laptop", "2025-01-02T08:00",
             "Dentist – Dr. Patel, Thursday 9 January 16:30 at Patel Dental Clinic", {},
             "household"),
            ("news", "sms", "ben", "phone", "2025-01-08T10:57",
             "Patel Dental Clinic: we are sorry, Dr. Patel broke a wrist. Your appointment on "
             "Thursday 9 January has to be rebooked, we will call you.",
             {"contactName": "Patel Dental Clinic"}, "household"),
            ("call", "call", "ben", "phone", "2025-01-08T11:30",
             "Incoming call from Patel Dental Clinic, 3 min",
             {"contactName": "Patel Dental Clinic"}, "household"),
            ("moved", "chat", "ben", "phone", "2025-01-08T11:33",
             "The clinic rang: my dentist appointment is now Saturday 11 January 15:00, can "
             "you take the kids?", {}, "household")]
    mem = open_memory()

    async def load() -> None:
        await mem.ingest_many(observations(rows))
        await mem.flush()

    asyncio.run(load())
    question = "Why did Ben's dentist appointment move to Saturday 11 January?"
    now = datetime(2025, 1, 9, 9, 0)
    hits = {h.provenance[0].external_id: h
            for h in mem.search(question, viewer="ben", now=now, pipeline="fused").hits}
    assert hits["moved"].caused_by == (hits["news"].event_id,)
    answer = asyncio.run(mem.ask(question, viewer="ben", now=now))
    assert "broke a wrist" in answer.text, answer.text
    assert hits["news"].event_id in [c.event_id for c in answer.citations]


def test_a_bare_value_answers_only_a_question_asking_for_one() -> None:
    meeting = Hit(event_id=1, score=1.0, text="家长会 周五 15:00 实验小学", via="seed",
                  provenance=(Provenance(1, "calendar", "c1", "ben", "laptop",
                                         "2025-03-05T21:00:00"),))
    assert supported("15:00", "家长会是什么时候？", [meeting])
    assert supported("15:00", "When is the 家长会?", [meeting])
    assert not supported("15:00", "Why is the 家长会 on Friday?", [meeting])
    assert not supported("2025-03-05T21:00", "家长会是什么时候？", [meeting]), \
        "the record's own time is when it was written"


def test_a_time_or_date_pieced_together_from_two_records_is_not_supported() -> None:
    def hit(i: int, text: str) -> Hit:
        return Hit(event_id=i, score=1.0, text=text, via="seed", provenance=(
            Provenance(i, "chat", f"c{i}", "ben", "phone", "2025-02-14T11:18:00"),))

    moved = hit(1, "诊所来电了：我的宠物医生预约改到2月17日周一 16:00")
    reminder = hit(2, "家庭日历提醒：Ben的宠物医生预约 2月15日周六 09:30")
    question = "Ben的宠物医生预约是什么时候？"
    # every number of "15:00" is in them ("2月15日", "16:00"), the time is in neither
    assert not supported("2月15日周六 15:00", question, [moved, reminder])
    assert supported("2月15日周六 09:30", question, [moved, reminder])
    assert supported("2月17日 16:00", question, [moved])
    assert not supported("2月16日 16:00", question, [moved]), "a day another record has not"
    # the day of one record and the time of a look-alike cited beside it
    other = hit(3, "诊所来电了：我的宠物医生预约改到1月25日周六 15:00")
    assert not supported("2月15日周六 15:00", question, [moved, reminder, other])
    assert supported("2月15日周六 09:30，后来改到2月17日 16:00", question,
                     [moved, reminder, other])


def test_the_answer_prompt_reads_the_best_records_that_fit_its_budget() -> None:
    def hit(i: int, text: str, superseded_by: tuple[int, ...] = ()) -> Hit:
        return Hit(event_id=i, score=1.0, text=text, provenance=(), via="seed",
                   superseded_by=superseded_by)

    llm = ScriptedLLM({})
    hits = [hit(41, "Dinner with the Wangs on Friday", superseded_by=(43,)),
            hit(42, "Flight delayed " * 8), hit(43, "Dinner with the Wangs cancelled")]
    memory = FusedMemory(id=9, member_ids=(41, 42), start=None, end=None, participants=(),
                         sources=(), users=(), summary="Trip to Beijing postponed")
    everything = evidence_for(hits, [memory], llm, budget=1000)
    lines = everything.text.split("\n")
    # numbered in answer order, not by event id; the summary cannot be cited
    assert [line.split(":")[0] for line in lines] == [
        "[1] (superseded by 3)", "[2]", "[3]", "Summary"]
    assert [h.event_id for h in everything.cited([3, 1, 7, 0, True, "2"])] == [43, 41]
    cost = [llm.count_tokens(line) + 1 for line in lines]
    # the long second record does not fit, the short third one (now [2]) and the summary do
    tight = evidence_for(hits, [memory], llm, budget=cost[0] + cost[2] + cost[3])
    assert tight.text.split("\n") == ["[1] (superseded by 2): Dinner with the Wangs on Friday",
                                       "[2]: Dinner with the Wangs cancelled", lines[3]]
    assert [h.event_id for h in tight.records] == [41, 43]
    alone = evidence_for(hits, [memory], llm, budget=1)
    assert alone.text == "[1] (superseded): Dinner with the Wangs on Friday", \
        "the best one always fits; what superseded it is not shown"


def test_an_extractive_answer_quotes_a_record_per_part_of_the_question() -> None:
    def hit(eid: int, text: str, source: str) -> Hit:
        return Hit(eid, 1.0 / eid, text, (Provenance(eid, source, f"x{eid}", "ben", "phone",
                                                     "2025-01-06T08:53:00"),))

    calendar = hit(1, "Dentist – Dr. Patel, Friday 10 January 11:30 at Patel Dental Clinic",
                   "calendar")
    sms = hit(2, "Patel Dental Clinic: please bring your medication list. Address: 36 Harbour "
                 "Street", "sms")
    other = hit(3, "Dentist – Dr. Patel, Friday 10 January 11:30 reminder", "push")
    hits = (calendar, sms, other)
    both = compose("When is Ben's dentist appointment with Dr. Patel, and at what address?",
                   hits, (), None, None)
    assert both.known and both.cited == (1, 2), both
    assert "11:30" in both.text and "36 Harbour Street" in both.text
    # one thing asked: one record quoted (a second would only add citations)
    one = compose("When is Ben's dentist appointment with Dr. Patel?", hits, (), None, None)
    assert one.known and one.cited == (1,) and "Harbour" not in one.text
    # the app and user a question names count as what a record holds ("Ben's calendar")
    named = compose("Which clinic does Ben's calendar show for the dentist?", (calendar,), (),
                    None, None)
    assert named.known and named.cited == (1,)
    # an LLM answer to one of the two parts the records answer does not stand
    question = "When is Ben's dentist appointment with Dr. Patel, and at what address?"
    def citing(answer: str, *texts: str) -> ScriptedLLM:
        return ScriptedLLM(lambda op, prompt: {
            "answer": answer, "citations": cite(prompt, *texts), "known": True})

    half = compose(question, hits, (), None, citing("Friday 10 January 11:30", "Patel, Friday"))
    assert half.mode == "fallback" and half.cited == (1, 2), half
    whole = compose(question, hits, (), None, citing(
        "Friday 10 January 11:30 at 36 Harbour Street", "Patel, Friday", "Harbour"))
    assert whole.mode == "llm" and whole.cited == (1, 2), whole


def _record(eid: int, text: str, user: str, ts: str, source: str = "payment") -> Hit:
    """A retrieved record by ``user`` in ``source``, ranked by its id."""
    return Hit(eid, 1.0 / eid, text, (Provenance(eid, source, f"x{eid}", user, "phone", ts),))


def test_an_extractive_answer_to_each_of_several_things_quotes_each_record() -> None:
    hits = (_record(1, "Paid ¥297.58 for paper lanterns for Lucas Martin's party", "ana",
                "2025-01-10T17:37:00"),
            _record(2, "Lucas Martin's birthday party at home, Monday 13 January 18:00", "ben",
                "2025-01-07T09:05:00", "calendar"),
            _record(3, "Paid ¥93.57 for birthday cake for Kenji Ito's party", "ben",
                "2025-01-09T17:36:00"),
            _record(4, "Paid ¥37.78 for balloons for Lucas Martin's party", "mia",
                "2025-01-09T17:33:00"),
            _record(5, "Paid ¥12.00 for party hats for Lucas Martin's party", "mia",
                "2024-12-01T17:00:00"),
            _record(6, "Paid ¥127.64 for party hats for Lucas Martin's party", "ben",
                "2025-01-08T17:36:00"))
    each = compose("What did the household buy for Lucas Martin's party, and what did each "
                   "item cost?", hits, (), None, None)
    # the payments for this party, by whoever paid; not another guest's, nor one paid for
    # a party weeks before
    assert each.known and each.cited == (1, 4, 6), each
    assert all(price in each.text for price in ("297.58", "37.78", "127.64"))
    one = compose("What did the household pay for lanterns for Lucas Martin's party?", hits, (),
                  None, None)
    assert one.known and one.cited == (1,), one


def test_asked_for_each_of_several_things_the_answer_quotes_the_latest_episode() -> None:
    # the payment naming the birthday cake holds the most of the question's words, but
    # belongs to the guest's party of a month before
    hits = (_record(1, "Paid ¥93.57 for birthday cake for Kenji Ito's party", "ben",
                "2025-01-16T17:36:00"),
            _record(2, "Paid ¥104.89 for balloons for Kenji Ito's party", "mia",
                "2025-01-14T17:20:00"),
            _record(3, "Paid ¥210.84 for paper lanterns for Kenji Ito's party", "ben",
                "2025-02-01T17:50:00"),
            _record(4, "Paid ¥132.86 for balloons for Kenji Ito's party", "mia",
                "2025-01-31T17:24:00"),
            _record(5, "Paid ¥279.85 for a board game for Kenji Ito's party", "ana",
                "2025-01-30T17:20:00"),
            _record(6, "Kenji Ito's birthday party at home, Tuesday 4 February 15:00", "ana",
                "2025-01-29T09:05:00", "calendar"))
    latest = compose("What did the household buy for Kenji Ito's birthday party, and what "
                     "did each item cost?", hits, (), None, None)
    assert latest.known and {3, 4, 5} <= set(latest.cited) <= {3, 4, 5, 6}, latest
    # asked about one thing: the best record, whenever it was paid
    one = compose("How much was the birthday cake for Kenji Ito's party?", hits, (), None,
                  None)
    assert one.known and one.cited == (1,), one


def test_asked_what_was_paid_the_answer_quotes_the_payments_first() -> None:
    # the party's calendar entry holds more of the question's words than any payment
    hits = (_record(1, "Maria Gomez的生日派对（在家），1月15日周三 15:00", "mia",
                "2025-01-07T09:05:00", "calendar"),
            _record(2, "为Maria Gomez的派对买水果拼盘，支付¥207.48", "ana", "2025-01-09T17:44:00"),
            _record(3, "为Maria Gomez的派对买气球，支付¥264.65", "mia", "2025-01-08T17:34:00"),
            _record(4, "为Lucas Martin的派对买气球，支付¥251.15", "ben", "2025-01-12T17:07:00"))
    paid = compose("家里为Maria Gomez的生日派对买了哪些东西，各花了多少钱？", hits, (), None,
                   None)
    assert paid.known and paid.cited[:2] == (2, 1) and set(paid.cited) == {1, 2, 3}, paid
    assert "207.48" in paid.text and "264.65" in paid.text and "251.15" not in paid.text
    # not asked about money: the best record alone
    when = compose("Maria Gomez的生日派对是什么时候？", hits, (), None, None)
    assert when.known and when.cited == (1,), when


def test_asked_what_a_plan_said_and_what_happened_the_answer_quotes_both() -> None:
    def hit(eid: int, text: str, source: str, superseded_by: tuple[int, ...] = ()) -> Hit:
        return Hit(eid, 1.0 / eid, text, (Provenance(eid, source, f"x{eid}", "ana", "phone",
                                                     "2025-01-10T13:11:00"),),
                   superseded_by=superseded_by)

    moved = hit(1, "From Zhou Tao: Golden Dragon is fully booked tonight, let's meet at "
                   "Lotus Garden instead, same time", "sms")
    planned = hit(2, "Dinner with Zhou Tao – Golden Dragon, Tuesday 14 January 18:30",
                  "calendar", superseded_by=(1,))
    party = hit(3, "Zhou Tao's birthday party at home, Friday 24 January 12:00", "calendar")
    answer = compose("Which restaurant does Ana's calendar show for the dinner with Zhou Tao, "
                     "and where did it actually happen?", (moved, planned, party), (), None,
                     None)
    # the report that moved the dinner, with the plan it replaced: what the calendar shows
    assert answer.known and answer.cited == (1, 2), answer
    assert "Golden Dragon" in answer.text and "Lotus Garden" in answer.text


def test_asked_one_thing_the_answer_quotes_the_plan_a_report_replaced_only_when_asked(
        ) -> None:
    planned = Hit(1, 1.0, "Dentist – Dr. Lin, Friday 10 January 15:00 at Lin Dental Clinic",
                  (Provenance(1, "calendar", "x1", "ana", "laptop", "2025-01-07T08:38:00"),),
                  superseded_by=(2,))
    moved = Hit(2, 0.9, "The clinic rang: my dentist appointment is now Saturday 11 January "
                        "16:00, can you take the kids?",
                (Provenance(2, "chat", "x2", "ana", "phone", "2025-01-09T11:45:00"),))
    address = Hit(3, 0.8, "Lin Dental Clinic: please bring your vaccination record. Address: "
                          "131 Canal Street",
                  (Provenance(3, "sms", "x3", "ana", "phone", "2025-01-07T10:40:00"),))
    hits = (planned, moved, address)
    # the new time answers it; the calendar entry naming the doctor adds no part asked
    now = compose("When is Ana's dentist appointment with Dr. Lin?", hits, (), None, None)
    assert now.known and now.cited == (2,) and "16:00" in now.text, now
    # asked about the plan before the change: the calendar entry, not the chat that moved it
    first = compose("When was Ana's dentist appointment with Dr. Lin first booked for?", hits,
                    (), None, None)
    assert first.known and first.cited == (1,) and "15:00" in first.text, first


def test_the_answer_prefers_the_record_holding_the_questions_phrase() -> None:
    def chat(eid: int, text: str, ts: str) -> Hit:
        return _record(eid, text, "ana", ts, "chat")

    party = chat(1, "Lucas Martin's birthday party at home, Monday 13 January 18:00",
                 "2025-01-07T09:05:00")
    # a later message holding every word of the question ("meeting", "Lucas Martin"), but
    # about another meeting and a dinner with him, comes first in retrieval
    other = chat(2, "My flight is delayed, I now land in Chengdu at 14:20. I moved the meeting "
                    "with Omar Aziz to tomorrow, so I can't make dinner with Lucas Martin "
                    "tonight", "2025-01-20T08:20:00")
    this = chat(3, "My flight is delayed, I now land in Singapore at 13:40. I moved the "
                   "meeting with Lucas Martin to tomorrow, so I can't make dinner with Tom "
                   "Becker tonight", "2025-01-19T08:50:00")
    question = "Why did Ana move the meeting with Lucas Martin?"
    assert for_answer(question, (party, other, this))[0] is this
    answer = compose(question, (party, other, this), (), None, None)
    assert answer.known and answer.cited == (3,), answer


def test_further_parts_are_quoted_from_the_best_records_memory_first() -> None:
    def hit(eid: int, text: str, source: str, memory: int) -> Hit:
        return replace(_record(eid, text, "mia", "2025-01-20T08:38:00", source),
                       fused_id=memory)

    calendar = hit(1, "Eye test – Dr. Rossi, Sunday 26 January 11:00 at Rossi Care Clinic",
                   "calendar", 10)
    # another memory's message holding two of the words quoted and one more
    # ("double-booked")
    other = hit(2, "Tanaka Dental Clinic: sorry, Dr. Tanaka double-booked the slot. Your eye "
                   "test has to be rebooked", "sms", 11)
    clinic = hit(3, "Rossi Care Clinic: please bring your vaccination record. Address: 187 "
                    "Elm Road", "sms", 10)
    question = ("When was Mia's eye test appointment with Dr. Rossi first booked for, at what "
                "address, and what should be brought?")
    together = compose(question, (calendar, other, clinic), (), None, None)
    assert together.known and together.cited == (1, 3), together
    # without fusion's memories, the message that shares the words is quoted as before
    apart = compose(question, tuple(replace(h, fused_id=None) for h in (calendar, other, clinic)),
                    (), None, None)
    assert apart.cited == (1, 2, 3), apart


def test_another_memorys_record_recorded_closest_to_the_best_one_is_quoted_first() -> None:
    def hit(eid: int, text: str, source: str, ts: str, memory: int) -> Hit:
        return replace(_record(eid, text, "ben", ts, source), fused_id=memory)

    calendar = hit(1, "Meeting with Lucas Martin in Osaka, Friday 21 February 15:00", "calendar",
                   "2025-02-17T10:29:00", 10)
    # both add "flight" and hold two words quoted: another trip's message two days later,
    # and the booking an hour before the calendar entry
    chat = hit(2, "My flight is delayed, I now land in Beijing at 15:30. I moved the meeting "
                  "with Sara Kim to tomorrow", "chat", "2025-02-19T07:50:00", 11)
    booking = hit(3, "Booking confirmed: flight HO2695 to Osaka on Friday 21 February, departs "
                     "08:00", "email", "2025-02-17T09:27:00", 12)
    question = ("Which flight did Ben take to Osaka for the meeting with Lucas Martin, and "
                "when was the meeting planned?")
    answer = compose(question, (calendar, chat, booking), (), None, None)
    assert answer.known and answer.cited == (1, 3), answer


def test_a_report_of_a_change_holds_what_the_plan_it_replaced_names() -> None:
    def hit(eid: int, text: str, source: str, user: str, ts: str,
            superseded_by: tuple[int, ...] = ()) -> Hit:
        return replace(_record(eid, text, user, ts, source), superseded_by=superseded_by)

    # two calls the same morning, each moving another dentist appointment: only the plans
    # they replaced say whose
    other = hit(1, "The clinic rang: my dentist appointment is now Thursday 13 February "
                   "16:30, can you take the kids?", "chat", "ben", "2025-02-11T11:43:00")
    reminder = hit(2, "Family calendar: Ben's dentist appointment Wednesday 12 February 10:00",
                   "push", "mia", "2025-02-08T09:00:00", (1,))
    this = hit(3, "The clinic rang: my dentist appointment is now Wednesday 19 February 15:00, "
                  "can you take the kids?", "chat", "ben", "2025-02-11T11:14:00")
    patel = hit(4, "Dentist – Dr. Patel, Wednesday 12 February 10:30 at Patel Dental Clinic",
                "calendar", "ben", "2025-02-08T08:29:00", (3,))
    hits = (other, reminder, this, patel)
    assert for_answer("When is Ben's dentist appointment with Dr. Patel?", hits)[0] is this
    # a report that holds none of the question's words inherits nothing: of two reports
    # that replaced the plan asked about, the one about it comes first
    plan = hit(1, "Dinner with Omar Aziz at Golden Dragon on Tuesday 4 February 18:00, booked "
                  "a table", "chat", "ana", "2025-02-01T12:00:00", (2, 3))
    unrelated = hit(2, "来自Tom Becker：Golden Dragon今晚满了，改去Lotus Garden吧，时间不变", "sms",
                    "ben", "2025-02-04T13:00:00")
    moved = hit(3, "From Omar Aziz: Golden Dragon is fully booked tonight, let's meet at Blue "
                   "Fin Sushi instead, same time", "sms", "ana", "2025-02-04T13:00:00")
    assert for_answer("Where did Ana have dinner with Omar Aziz?",
                      (unrelated, moved, plan))[:2] == (moved, unrelated)


def test_asked_around_a_day_the_look_alike_recorded_closest_to_it_is_quoted() -> None:
    def chat(eid: int, text: str, ts: str) -> Hit:
        return _record(eid, text, "ben", ts, "chat")

    later = chat(1, "My flight is delayed, I now land in Osaka at 16:00. I moved the meeting "
                    "with Tom Becker to tomorrow", "2025-01-30T08:20:00")
    this = chat(2, "My flight is delayed, I now land in Osaka at 13:10. I moved the meeting "
                   "with Omar Aziz to tomorrow", "2025-01-28T07:20:00")
    now = datetime(2025, 1, 30, 21, 0)
    dated = compose("Around Tuesday 28 January, when did Ben land in Osaka?", (later, this),
                    (), now, None)
    assert dated.known and dated.cited == (2,), dated
    # naming no day, the latest
    assert compose("When did Ben land in Osaka?", (this, later), (), now, None).cited == (1,)


def test_an_llm_answer_to_what_a_replaced_report_said_and_what_replaced_it_needs_both(
        ) -> None:
    def hit(eid: int, text: str, source: str, user: str, ts: str,
            superseded_by: tuple[int, ...] = ()) -> Hit:
        return Hit(eid, 1.0 / eid, text, (Provenance(eid, source, f"x{eid}", user, "phone",
                                                     ts),), superseded_by=superseded_by)

    moved = hit(1, "The clinic rang: my eye test appointment is now Thursday 6 February "
                   "10:00, can you take the kids?", "chat", "mia", "2025-01-29T11:19:00")
    reminder = hit(2, "Family calendar: Mia's eye test appointment Tuesday 4 February 10:30",
                   "push", "ben", "2025-01-20T20:00:00", superseded_by=(1,))
    other = hit(3, "Family calendar: Mia's eye test appointment Tuesday 25 February 11:00",
                "push", "ben", "2025-02-20T20:00:00")
    question = ("What time does Ben's reminder give for Mia's eye test appointment, and what "
                "time did Mia say it is?")
    # one look-alike reminder answers one of the two things asked: it does not stand
    one = compose(question, (moved, reminder, other), (), None,
                  citing("Tuesday 25 February 11:00", "25 February"))
    assert one.mode == "fallback" and one.cited == (1, 2), one
    assert "10:30" in one.text and "10:00" in one.text


def test_an_llm_answer_resting_on_a_record_for_its_date_alone_answers_no_part() -> None:
    plan = replace(_record(1, "Dinner with Sara Kim – Spice Route, Wednesday 19 February 19:30",
                           "mia", "2025-02-16T13:00:00", "calendar"), superseded_by=(2,))
    moved = _record(2, "From Sara Kim: Spice Route is fully booked tonight, let's meet at Cafe "
                       "Soleil instead, same time", "ben", "2025-02-19T14:30:00", "sms")
    question = ("Which restaurant does Mia's calendar show for the dinner with Sara Kim, and "
                "where did it actually happen?")
    # where it happened, and the calendar entry's date: the restaurant it shows is left out
    llm = ScriptedLLM(lambda op, prompt: {
        "answer": "Cafe Soleil, Wednesday 19 February 19:30", "known": True,
        "citations": cite(prompt, "Spice Route, Wednesday", "Cafe Soleil instead")})
    answer = compose(question, (plan, moved), (), None, llm)
    assert answer.mode == "fallback" and "Spice Route, Wednesday" in answer.text, answer
    assert answer.cited == (2, 1), answer


def test_an_llm_answer_from_an_older_look_alike_report_does_not_stand() -> None:
    def hit(eid: int, text: str, ts: str) -> Hit:
        return Hit(eid, 1.0 / eid, text, (Provenance(eid, "push", f"x{eid}", "ana", "phone",
                                                     ts),))

    hits = (hit(1, "SF Express: your parcel from Maple Home arrives today", "2025-02-21T08:10:00"),
            hit(2, "DHL: your parcel from Maple Home arrives today", "2025-02-23T08:33:00"))
    question = "Which courier brings Ana's parcel from Maple Home?"

    # the question names no day: the latest of the look-alike reports is the one meant
    old = compose(question, hits, (), None, citing("SF Express", "SF Express"))
    assert old.mode == "fallback" and old.cited == (2,), old
    latest = compose(question, hits, (), None, citing("DHL", "DHL:"))
    assert latest.mode == "llm" and latest.cited == (2,), latest


def test_an_llm_answer_from_a_look_alike_below_the_best_record_does_not_stand() -> None:
    def hit(eid: int, text: str, source: str, ts: str) -> Hit:
        return Hit(eid, 1.0 / eid, text, (Provenance(eid, source, f"x{eid}", "mia", "phone",
                                                     ts),))

    hits = (hit(1, "The clinic rang: my physiotherapy appointment is now Thursday 20 February "
                   "17:30", "chat", "2025-02-12T11:26:00"),
            hit(2, "Physiotherapy appointment – Dr. Haddad, Monday 17 February 15:30",
                "calendar", "2025-02-10T09:00:00"))
    question = "When is Mia's physiotherapy appointment now?"

    # the other appointment states what the answer says and is as much about the question,
    # but the answer order puts it below: the extractive answer stands instead
    other = compose(question, hits, (), None, citing("Monday 17 February 15:30", "Monday"))
    assert other.mode == "fallback" and other.cited == (1,), other
    best = compose(question, hits, (), None, citing("Thursday 20 February 17:30", "Thursday"))
    assert best.mode == "llm" and best.cited == (1,), best


def test_an_llm_answer_from_a_replaced_report_alone_does_not_stand() -> None:
    def hit(eid: int, text: str, superseded_by: tuple[int, ...] = ()) -> Hit:
        return Hit(eid, 1.0 / eid, text, (Provenance(eid, "chat", f"x{eid}", "ana", "phone",
                                                     "2025-01-08T14:30:00"),),
                   superseded_by=superseded_by)

    planned = hit(1, "Dinner with Wang Fang – Cafe Soleil, Wednesday 8 January 19:30",
                  superseded_by=(2,))
    moved = hit(2, "From Wang Fang: Cafe Soleil is full tonight, let's go to Trattoria Roma "
                   "instead, same time")
    question = "Where is the dinner with Wang Fang?"

    def citing(answer: str, *texts: str) -> ScriptedLLM:
        return ScriptedLLM(lambda op, prompt: {
            "answer": answer, "citations": cite(prompt, *texts), "known": True})

    # the answer rests on the record stating most of it, not the first one cited
    reminder = hit(3, "Reminder: dinner with Wang Fang on Wednesday", superseded_by=(9,))
    copied = compose(question, (reminder, moved), (), None, citing(
        "Wang Fang: let's go to Trattoria Roma instead", "Reminder", "Trattoria"))
    assert copied.mode == "llm" and copied.cited == (2,), copied
    stale = compose(question, (planned, moved), (), None, citing("Cafe Soleil", "Wednesday"))
    assert stale.mode == "fallback" and "Trattoria Roma" in stale.text, stale
    # citing the replacement is not enough: the answer must say something it says anew
    both = compose(question, (planned, moved), (), None, citing(
        "Cafe Soleil, Wednesday 8 January 19:30", "Wednesday", "Trattoria"))
    assert both.mode == "fallback" and "Trattoria Roma" in both.text, both
    current = compose(question, (planned, moved), (), None,
                      citing("Trattoria Roma, not Cafe Soleil", "Wednesday", "Trattoria"))
    assert current.mode == "llm" and 2 in current.cited, current
    # asked one thing, an answer from the report that moved the plan rests on it alone
    moved_only = compose(question, (moved, planned), (), None,
                         citing("Trattoria Roma", "Trattoria"))
    assert moved_only.mode == "llm" and moved_only.cited == (2,), moved_only
    assert moved_only.text == "Trattoria Roma"
    # asked several things, the plan it replaced answers a part when it holds a word
    # asked that the report does not ("dinner"): the extractive answer quotes and cites
    # both, and an answer resting on the report alone does not stand
    several = "Where is the dinner with Wang Fang, and at what time?"
    partial = compose(several, (moved, planned), (), None,
                      citing("Trattoria Roma", "Trattoria"))
    assert partial.mode == "fallback" and partial.cited == (2, 1), partial
    assert "this replaces an earlier report" in partial.text
    whole = compose(several, (moved, planned), (), None,
                    citing("Trattoria Roma at 19:30", "Trattoria", "Dinner with"))
    assert whole.mode == "llm" and whole.cited == (2, 1), whole


def test_an_llm_answer_without_a_number_does_not_answer_how_much() -> None:
    paid = Hit(1, 1.0, "Paid ¥46.30 for party hats for Omar Aziz's party",
               (Provenance(1, "payment", "x1", "mia", "phone", "2025-02-03T17:37:00"),))
    question = "How much did the party hats for Omar Aziz's party cost?"

    def answering_from(answer: str) -> ScriptedLLM:
        return ScriptedLLM(lambda op, prompt: {"answer": answer, "citations": [1],
                                               "known": True})

    vague = compose(question, (paid,), (), None, answering_from("Party hats for Omar Aziz"))
    assert vague.mode == "fallback" and "46.30" in vague.text, vague
    exact = compose(question, (paid,), (), None, answering_from("¥46.30 for the party hats"))
    assert exact.mode == "llm", exact
    party = Hit(2, 0.9, "Omar Aziz's birthday party at home, Thursday 16 January 18:00",
                (Provenance(2, "calendar", "x2", "ben", "laptop", "2025-01-10T09:05:00"),))
    bought = "What did the household buy for Omar Aziz's party, and what did each item cost?"
    dated = compose(bought, (paid, party), (), None, ScriptedLLM(lambda op, prompt: {
        "answer": "Party hats for Omar Aziz's party at home, Thursday 16 January 18:00",
        "citations": [1, 2], "known": True}))
    assert dated.mode == "fallback" and "46.30" in dated.text, "a date is not what it cost"


def test_an_llm_answer_that_restates_the_question_does_not_stand() -> None:
    chat = Hit(1, 1.0, "航班延误了，我11:10才到新加坡。和Omar Aziz的会改到明天了",
               (Provenance(1, "chat", "x1", "ben", "phone", "2025-02-04T06:20:00"),))
    meeting = Hit(2, 0.9, "与Omar Aziz在新加坡开会，2月4日周二 14:00",
                  (Provenance(2, "calendar", "x2", "ben", "laptop", "2025-01-30T10:05:00"),))
    question = "2月4日周二前后，Ben几点到新加坡？"
    echo = compose(question, (chat, meeting), (), datetime(2025, 2, 5, 21), ScriptedLLM(
        lambda op, prompt: {"answer": question, "citations": [1, 2], "known": True}))
    assert echo.mode == "fallback" and "11:10" in echo.text, echo
    assert echoes(question, question) and echoes("Ben几点到新加坡", question)
    assert not echoes("11:10", question) and not echoes("Ben到新加坡是上午", question)


def test_extractive_multiple_choice_follows_the_evidence(open_memory) -> None:
    mem = open_memory()
    ingest(mem, [("2025-02-15T10:00", "Dinner with the Wangs at the hotpot place"),
                 *noise_rows(10)])
    answer = asyncio.run(mem.ask("Where did we eat with the Wangs?", viewer="ana",
                                 choices=CHOICES))
    assert answer.choice == "B"
    # worded unlike the record, still closest in meaning to it
    paraphrased = asyncio.run(mem.ask("Where did we eat with the Wangs?", viewer="ana",
                                      choices={"A": "a dumpling house", "B": "a hot pot restaurant",
                                               "C": "at home"}))
    assert paraphrased.choice == "B"


def test_a_letter_picked_from_a_record_cites_it_when_the_answer_quotes_none() -> None:
    def hit(i: int, text: str) -> Hit:
        return Hit(i, 1.0 - i / 10, text, (Provenance(i, "note", f"n{i}", "ana", "phone",
                                                        "2025-02-15T21:00:00"),))

    hits = (hit(1, "Weather today: sunny, 12 degrees"),
            hit(2, "Booked the hotpot restaurant on Elm Road for Saturday"))
    question = "Which venue did the whole family finally settle on for grandpa's celebration?"
    draft = compose(question, hits, (), None, None,
                    choices={"A": "a dumpling house", "B": "the hotpot restaurant"})
    assert not draft.known and draft.choice == "B"
    assert draft.cited == (2,), "the record the letter was picked from"
    plain = compose(question, hits, (), None, None)
    assert plain.cited == (), "without choices nothing is picked, nothing cited"


def test_fused_pipelines_run_with_fusion_off(tmp_path) -> None:
    """The "fusion off" ablation: fused and agentic still answer, every event alone."""
    import asyncio

    from memfuse_lite import MemFuse, MemFuseConfig
    from memfuse_lite.config import FusionConfig

    from .conftest import FakeEmbedder, obs

    async def run() -> list[int]:
        config = MemFuseConfig(fusion=FusionConfig(enabled=False))
        async with MemFuse(tmp_path / "m", config=config, embedder=FakeEmbedder()) as mem:
            await mem.ingest_many([obs("dentist moved to Thursday", ext="1"),
                                   obs("dentist clinic called", ext="2")])
            await mem.flush()
            found = []
            for pipeline in ("fused", "agentic"):
                result = mem.search("dentist", viewer="ana", pipeline=pipeline)
                assert all(h.fused_id is None for h in result.hits) and not result.fused
                found.append(len(result.hits))
            return found

    assert asyncio.run(run()) == [2, 2]


@pytest.mark.parametrize(("said", "mode"), [
    ("Ana", "fallback"),  # in the record, but not the one who picks Mia up
    ("Ana will pick Mia up after the dentist", "fallback"),
    ("Ben will pick her up", "llm"),
])
def test_a_who_answer_must_name_the_one_the_record_says_does_it(
        config: MemFuseConfig, embedder, tmp_path, said: str, mode: str) -> None:
    seed = MemFuse(tmp_path / "m", config=config, embedder=embedder)

    async def run() -> None:
        await seed.ingest_many([
            obs("Reminder for Ana: dentist Thursday 4pm, I'll pick up Mia from school",
                user="ben", source="sms", ts="2025-03-04T18:30", ext="b1"),
            obs("The clinic moved my dentist to Thursday 4pm", ts="2025-03-04T12:10",
                ext="a1")])
        await seed.flush()

    asyncio.run(run())
    seed.close()
    llm = ScriptedLLM(lambda op, prompt: {
        "answer": said, "known": True, "citations": cite(prompt, "pick up Mia")}
        if op == "answer" else {"sufficient": True, "follow_up": ""})
    cfg = MemFuseConfig(model_dir=config.model_dir, answer_llm="scripted", tz="UTC")
    mem = MemFuse(tmp_path / "m", config=cfg, embedder=embedder, llms={"scripted": llm})
    try:
        answer = asyncio.run(mem.ask("Who is picking up Mia from school on Thursday?",
                                     viewer="ana", now=datetime(2025, 3, 5)))
    finally:
        mem.close()
    assert answer.mode == mode, answer.rejected
    if mode == "fallback":
        assert answer.rejected is not None and answer.rejected.reason == WRONG_PERSON
        assert "I'll pick up Mia" in answer.text


def test_a_long_question_stands_on_the_records_the_model_cites_together(
        config: MemFuseConfig, embedder, tmp_path) -> None:
    # no one record holds half of the question's key words, the two cited together do
    seed = MemFuse(tmp_path / "m", config=config, embedder=embedder)
    ingest(seed, [("2025-03-01T09:00", "Booked the pottery workshop"),
                  ("2025-03-01T09:30", "Bought glazes for the glazing class")])
    seed.close()
    question = ("What did I buy at the Hangzhou pottery workshop on Saturday with Lily for "
                "the glazing class?")
    llm = ScriptedLLM(lambda op, prompt: {
        "answer": "Glazes, for the glazing class of the pottery workshop", "known": True,
        "citations": cite(prompt, "Booked the pottery", "Bought glazes")}
        if op == "answer" else {"sufficient": True, "follow_up": ""})
    cfg = MemFuseConfig(model_dir=config.model_dir, answer_llm="scripted", tz="UTC")
    mem = MemFuse(tmp_path / "m", config=cfg, embedder=embedder, llms={"scripted": llm})
    try:
        answer = asyncio.run(mem.ask(question, viewer="ana", now=datetime(2025, 3, 2)))
    finally:
        mem.close()
    extractive = compose(question, answer.evidence, (), datetime(2025, 3, 2), None)
    assert extractive.text == DONT_KNOW, "no one record is enough for the extractive answer"
    assert answer.mode == "llm", answer.rejected
    assert answer.text.startswith("Glazes")
