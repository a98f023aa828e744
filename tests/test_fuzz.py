"""Property-based checks: any input is either accepted or refused with our own error."""

from __future__ import annotations

import contextlib
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from memfuse_lite import InvalidObservation, InvalidQuery, Observation

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children,
                                                                       max_size=4),
    max_leaves=20)


@given(source=st.text(max_size=20), user=st.text(max_size=20), text=st.text(max_size=300),
       ts=st.one_of(st.text(max_size=30), st.integers(), st.floats(), st.none()),
       meta=json_values, visibility=st.one_of(st.text(max_size=10),
                                              st.lists(st.text(max_size=8), max_size=3)))
@settings(max_examples=300, deadline=None)
def test_observation_is_valid_or_invalid_observation(source, user, text, ts, meta,
                                                     visibility) -> None:
    try:
        obs = Observation(source=source, user=user, text=text, ts=ts, meta=meta,
                          visibility=visibility)
    except InvalidObservation as exc:
        assert exc.field in {"source", "user", "text", "ts", "meta", "visibility", "device",
                             "external_id"}
        return
    assert obs.text.strip() and obs.source and obs.user
    assert Observation.from_json(json.loads(json.dumps(obs.to_json()))) == obs


@given(line=st.binary(max_size=200))
@settings(max_examples=200, deadline=None)
def test_jsonl_lines_never_crash(tmp_path_factory, line: bytes) -> None:
    from memfuse_lite.jsonl import read_observations
    from memfuse_lite.records import Rejected

    path = tmp_path_factory.mktemp("fuzz") / "in.jsonl"
    path.write_bytes(line.replace(b"\n", b" ") + b"\n")
    for item in read_observations(path):
        assert isinstance(item, Observation | Rejected)


def test_any_query_returns_or_is_invalid(open_memory) -> None:
    mem = open_memory()

    @given(query=st.text(max_size=200))
    @settings(max_examples=60, deadline=None)
    def check(query: str) -> None:
        for pipeline in ("bm25", "hybrid", "fused"):
            with contextlib.suppress(InvalidQuery):
                mem.search(query, viewer="ana", pipeline=pipeline)

    check()
