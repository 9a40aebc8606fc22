"""One A2A call as every handler sees it: which agent, who is calling, in which version."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from agents.models import Agent
from agents.principals import Principal


@dataclass(frozen=True)
class Call:
    agent: Agent
    principal: Principal
    # "1.0", "0.3" or "0.1" (the pre-0.2 methods, whose callers name tasks by their own ids)
    version: str
    # The hub's public URL, worked out only for the methods that need it (reading the host
    # from a request costs more than most of a fast send).
    base_url_of: Callable[[], str]
    extensions: frozenset[str] = field(default_factory=frozenset)
    # From the Last-Event-ID header: a re-attaching stream client's last seen event.
    last_event_id: int | None = None
    binding: str = "JSONRPC"  # the door it came through (`tasks.models.Binding`), kept on tasks
    # How many hubs the request passed through (`A2A-Hub-Hops`); a task keeps it in its
    # metadata, and its turns' outbound calls carry one more.
    hops: int = 0

    @property
    def base_url(self) -> str:
        return self.base_url_of()
