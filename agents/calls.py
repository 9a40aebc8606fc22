"""One A2A call as every handler sees it: which agent, who is calling, in which version."""

from __future__ import annotations

from dataclasses import dataclass, field

from agents.models import Agent
from agents.principals import Principal


@dataclass(frozen=True)
class Call:
    agent: Agent
    principal: Principal
    version: str  # "1.0" or "0.3"
    base_url: str
    extensions: frozenset[str] = field(default_factory=frozenset)
    # From the Last-Event-ID header: a re-attaching stream client's last seen event.
    last_event_id: int | None = None
