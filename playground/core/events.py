"""What a chat backend yields: typed events stamped by an injected clock (core/client over the
openai SDK and core/wire's raw reader both produce them; core/runner consumes them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from playground.core.metrics import Usage
from playground.errors import PlaygroundError

Clock = Callable[[], float]
EventKind = Literal["sent", "headers", "chunk", "usage", "done", "error"]


@dataclass(frozen=True)
class Event:
    kind: EventKind
    t: float
    reasoning: str = ""
    content: str = ""
    finish_reason: str | None = None
    usage: Usage | None = None
    server_metrics: dict[str, float] | None = None
    status: int | None = None
    error: PlaygroundError | None = None
    t_call: float | None = None  # "sent" only: when our code called the client library
