"""The Scene-to-Sensor generator: determinism, sound questions, committed data in sync."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

import pytest

from bench.gen import GenConfig, generate, household, review
from bench.gen.household import answers, content, dated, fits, identity, visible
from bench.gen.model import CATEGORIES, QuestionDraft, Scene
from bench.gen.scenes import TEMPLATES
from bench.gen.text import contains_item, day_text
from bench.generate import SMALL, load
from memfuse_lite import Observation

SMALL_CFG = GenConfig(seed=3, size=600, questions=60)


def test_same_seed_same_output_other_seed_differs() -> None:
    a, b = generate(SMALL_CFG), generate(SMALL_CFG)
    assert a.observations == b.observations and a.questions == b.questions
    assert generate(replace(SMALL_CFG, seed=4)).observations != a.observations


def test_observations_are_valid_and_unique() -> None:
    gen = generate(SMALL_CFG)
    assert len(gen.observations) >= SMALL_CFG.size
    obs = [Observation.from_json(o) for o in gen.observations]
    assert len({o.external_id for o in obs}) == len(obs)
    assert len({o.identity for o in obs}) == len(obs)
    assert {o.source for o in obs} >= {"calendar", "chat", "sms", "call", "payment", "push"}
    assert any("\u4e00" <= ch <= "\u9fff" for o in obs for ch in o.text)  # some Chinese
    assert len({o.user for o in obs}) == SMALL_CFG.users


def test_every_question_has_evidence_the_viewer_sees_and_states_its_checklist() -> None:
    gen = generate(SMALL_CFG)
    by_key = {(o["source"], o["external_id"]): o for o in gen.observations}
    assert {q["category"] for q in gen.questions} == set(CATEGORIES)
    for q in gen.questions:
        evidence = [by_key[tuple(e)] for e in q["evidence"]]  # every evidence record exists
        for o in evidence:
            vis = o["visibility"]
            assert vis == "household" or o["user"] == q["viewer"] or q["viewer"] in vis
        text = "\n".join(f"{o['user']}: {o['text']}" for o in evidence)
        for item in q["checklist"]:
            assert contains_item(text, item), (q["id"], item)


def test_distractors_differ_on_the_checked_slot() -> None:
    gen = generate(replace(SMALL_CFG, distractor_rate=0.9))
    scenes = {s["id"]: s for s in gen.scenes}
    by_id = {o["external_id"]: o for o in gen.observations}
    twins: dict[str, list[dict]] = {}
    for s in gen.scenes:
        if s["distractor_of"]:
            twins.setdefault(s["distractor_of"], []).append(s)
    checked = 0
    for q in gen.questions:
        for twin in twins.get(q["scene"], []):
            text = "\n".join(f"{by_id[x]['user']}: {by_id[x]['text']}"
                             for x in twin["observations"] if x in by_id)
            assert not all(contains_item(text, item) for item in q["checklist"])
            original = scenes[q["scene"]]["slots"].get(q["slot"])
            if q["slot"] in twin["slots"] and original is not None:
                assert twin["slots"][q["slot"]] != original
            checked += 1
    assert checked > 10


def test_reviewer_rejects_underivable_hidden_and_ambiguous_questions() -> None:
    import random

    rng = random.Random(1)
    users = ["ana", "ben", "mia"]
    scene = TEMPLATES["appointment"](rng, users, "en", GenConfig().start, None, True)
    good = next(q for q in scene.questions if q.category == "conflict arbitration")
    assert review(scene, good, []) is None
    wrong = replace(good, checklist=[["a value nobody wrote"]])
    assert "not in the evidence" in str(review(scene, wrong, []))
    outsider = next(u for u in users if not visible(u, scene.draft("sms")))
    hidden = QuestionDraft("cross-source causality", outsider, "why?", "", [["ill"]], ["sms"],
                           "reason")
    assert review(scene, hidden, []) == "evidence the asker may not see"
    twin = TEMPLATES["appointment"](random.Random(1), users, "en", GenConfig().start, None, True)
    twin.id = "twin"
    assert answers(good, twin.drafts)
    assert "also answers" in str(review(scene, good, [twin]))
    assert identity(scene) == identity(twin)
    assert content(scene.drafts[0]).startswith(scene.drafts[0].user + ": ")


def test_no_scene_a_question_fits_begins_between_its_scene_and_its_asking(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A question about "the party" is asked before the next party for the same guest
    (or names its day), so one scene answers it."""
    laid: list = []
    finish = household._finish

    def keep(rng, cfg, scenes, chatter):  # type: ignore[no-untyped-def]
        laid.extend(scenes)
        return finish(rng, cfg, scenes, chatter)

    monkeypatch.setattr(household, "_finish", keep)
    gen = generate(SMALL_CFG)
    by_id = {s.id: s for s in laid}

    def first(scene: Scene) -> str:
        return min(d.ts for d in scene.drafts).isoformat(timespec="minutes")

    fitted = 0
    for q in gen.questions:
        scene = by_id[q["scene"]]
        between = [o for o in laid if o is not scene and fits(q["text"], scene, o)
                   and first(scene) <= first(o) <= q["now"]]
        if q["text"].startswith("Around ") or "前后，" in q["text"]:
            fitted += 1
        else:
            assert not between, q["id"]
    assert fitted, "some questions another scene fits name their day"


def test_a_question_another_scene_fits_names_its_day() -> None:
    import random

    rng = random.Random(2)
    users = ["ana", "ben", "mia"]
    day = GenConfig().start
    trip = TEMPLATES["trip"](rng, users, "en", day, None, True)
    land = next(q for q in trip.questions if q.category == "cross-user query")
    again = TEMPLATES["trip"](rng, users, "en", day, {"city": trip.slots["city"]}, True)
    traveller = trip.draft("chat").user
    again_traveller = again.draft("chat").user
    assert fits(land.text, trip, again) == (traveller == again_traveller)
    elsewhere = replace(again, slots={**again.slots, "city": ["Nowhere", "无处"]})
    assert not fits(land.text, trip, elsewhere)
    assert not fits(land.text, trip, TEMPLATES["party"](rng, users, "en", day, None, False))
    when = trip.draft("chat").ts.date()
    assert dated(land, trip).startswith(f"Around {day_text(when, 'en')}, when does ")
    zh = TEMPLATES["trip"](rng, users, "zh", day, None, True)
    ask = next(q for q in zh.questions if q.category == "cross-user query")
    assert dated(ask, zh) == f"{day_text(zh.draft('chat').ts.date(), 'zh')}前后，{ask.text}"


@pytest.mark.parametrize("bad", [{"users": 1}, {"size": 10}, {"zh_rate": 1.5}])
def test_bad_knobs_are_refused(bad: dict) -> None:
    with pytest.raises(ValueError):
        GenConfig(**bad)


def test_committed_small_set_matches_its_generator_command() -> None:
    manifest = json.loads((SMALL / "manifest.json").read_text())
    cfg = manifest["config"]
    regenerated = generate(GenConfig(seed=cfg["seed"], size=cfg["size"], users=cfg["users"],
                                     questions=cfg["questions"]))
    assert load(SMALL, "observations.jsonl") == regenerated.observations
    assert load(SMALL, "questions.jsonl") == regenerated.questions
    assert manifest["questions"] == 150 and manifest["observations"] >= 2000
    assert Counter(q["category"] for q in regenerated.questions) == manifest["categories"]
