"""What every pipeline shares: the request it answers and the context it returns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from ..records import FusedMemory, Hit
from .planner import Plan

if TYPE_CHECKING:
    from ..engine import Engine


@dataclass(frozen=True, slots=True)
class Request:
    """One validated search: the question, who asks, how many events, and when it is
    asked (only what was recorded by ``now`` is searched, in every pipeline)."""

    query: str
    viewer: str
    k: int
    now: datetime | None = None


@dataclass(frozen=True, slots=True)
class Context:
    """What a pipeline found: events in rank order, fused memories over them (fused
    pipelines), the plan it followed and the rounds it took."""

    hits: tuple[Hit, ...]
    fused: tuple[FusedMemory, ...] = ()
    plan: Plan | None = None
    rounds: int = 1


@dataclass(frozen=True, slots=True)
class Pipeline:
    """A named way of searching. ``run`` reads the engine's components and never writes
    them; ``needs_fusion`` pipelines refuse a memory whose fusion is off; ``grounded``
    pipelines return fused context and may back ``ask()``."""

    name: str
    run: Callable[[Engine, Request], Context]
    help: str
    needs_fusion: bool = False
    grounded: bool = False
