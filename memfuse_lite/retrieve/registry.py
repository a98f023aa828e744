"""Every search pipeline by name: config, the CLI and ``ask()`` read this registry.

A new pipeline is a function ``(engine, request) -> Context`` wrapped in a
:class:`~memfuse_lite.retrieve.base.Pipeline` and passed to :func:`register`.
"""

from __future__ import annotations

from ..errors import InvalidConfig
from . import agentic, fused, plain
from .base import Pipeline

PIPELINES: dict[str, Pipeline] = {}


def register(pipeline: Pipeline) -> None:
    """Make a pipeline available by its name (a name taken already is an error)."""
    if pipeline.name in PIPELINES:
        raise InvalidConfig(f"a pipeline named {pipeline.name!r} is registered already")
    PIPELINES[pipeline.name] = pipeline


def names(*, grounded: bool = False) -> tuple[str, ...]:
    """Registered pipeline names (only those that can back ``ask()`` if ``grounded``)."""
    return tuple(n for n, p in PIPELINES.items() if p.grounded or not grounded)


for _pipeline in (*plain.PIPELINES, fused.PIPELINE, agentic.PIPELINE):
    register(_pipeline)
