"""The open-question checklist score (bench/checklist.py): what a rubric point requires
and how much of it an answer states."""

from __future__ import annotations

import pytest

from bench.checklist import checklist_score, point_items

QUESTION = "Who first proposed the shooting trip in January?"
REFERENCE = "It was first proposed by Zhang Wei via WeChat on January 15th."
POINTS = [("Point out that the proposer is good friend Zhang Wei.", 5.0),
          ("It is indicated that the proposal was made on January 15th, via WeChat.", 5.0)]


def test_a_point_requires_the_facts_it_shares_with_the_reference_not_its_wording() -> None:
    assert point_items(POINTS[0][0], QUESTION, REFERENCE) == [{"wei"}, {"zhang"}]
    assert point_items(POINTS[1][0], QUESTION, REFERENCE) == [{"1-15"}, {"wechat"}]
    # nothing of its own: the reference answer's facts
    assert point_items("Clarify the specific date of the reunion.",
                       "On which day is the reunion?", "September 25, 2025") == [
        {"#2025"}, {"9-25"}]
    assert point_items('The answer includes "full refund".', "What did he offer?",
                       "A full refund or a new one") == ["full refund"]


@pytest.mark.parametrize(("answer", "score"), [
    (REFERENCE, 1.0),
    ("Zhang Wei suggested it over WeChat on 1月15日.", 1.0),  # dates in either language
    ("Zhang Wei suggested it.", 0.5),
    ("Wei, in person, on January 20th", 0.25),
    (QUESTION, 0.0),
    ("", 0.0),
])
def test_the_score_is_the_weighted_share_of_items_stated(answer: str, score: float) -> None:
    assert checklist_score(answer, POINTS, QUESTION, REFERENCE) == pytest.approx(score)


def test_a_quoted_phrase_counts_when_most_of_its_words_are_there() -> None:
    points = [("答案中包含“更换新品并赠送潮流袜子”这一解决方案", 5.0)]
    assert checklist_score("可以更换新品，并赠送潮流袜子", points, "他提供了哪两种方案？",
                           "全额退款或更换新品并赠送潮流袜子") == 1.0
    assert checklist_score("全额退款", points, "他提供了哪两种方案？",
                           "全额退款或更换新品并赠送潮流袜子") == 0.0
