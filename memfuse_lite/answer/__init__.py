"""Grounded answers: the LLM reads the final context as numbered records and cites them by
number, and its answer stands only when the records it cites state what it says;
otherwise, and without an LLM, a deterministic extractive answer quotes the best current
record, or says "I don't know" when no record matches the question.

    compose      the answer step: evidence for the LLM, its answer checked, or the
                 extractive one (Answer, Citation, Draft, Evidence, Rejected)
    stream       an answer streamed while the model writes it (AnswerStream)
    order        the order records are read in for answering (for_answer)
    support      whether cited records state what an answer says (supported, objection)
    extractive   quotes of the best current records; the option closest to them
    wording      content words, numbers, times and the shapes of question
"""

from .compose import Answer, Citation, Draft, Evidence, Rejected, compose, evidence_for
from .extractive import DONT_KNOW, Embed
from .order import for_answer
from .support import matches, supported

__all__ = ["DONT_KNOW", "Answer", "Citation", "Draft", "Embed", "Evidence", "Rejected",
           "compose", "evidence_for", "for_answer", "matches", "supported"]
