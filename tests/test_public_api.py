"""The public API is what the README documents, no more and no less."""

from __future__ import annotations

import re
from pathlib import Path

import memfuse_lite

README = Path(__file__).parents[1] / "README.md"


def test_all_is_the_documented_list() -> None:
    text = README.read_text()
    rest = text[text.index("- Public names (`memfuse_lite.__all__`"):]
    block = rest[: min(i for i in (rest.find("\n- ", 1), rest.find("\n\n")) if i > 0)]
    documented = set(re.findall(r"`([A-Za-z]\w*)`", block.split(":", 1)[1]))
    assert documented == set(memfuse_lite.__all__)
    for name in memfuse_lite.__all__:
        assert getattr(memfuse_lite, name) is not None


def test_every_error_derives_from_the_root() -> None:
    for name in memfuse_lite.__all__:
        obj = getattr(memfuse_lite, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, memfuse_lite.MemFuseError), name
