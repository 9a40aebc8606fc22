"""What every executor is given and must provide, in the SDK's vocabulary.

An executor's `execute` drives one turn of a task through a `TaskUpdater` (start work,
stream artifacts, ask for input, complete, fail, reject, or reply with a single Message).
`cancel` is called when a client cancels; the runner then stops the turn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from a2a.types import a2a_pb2 as pb

if TYPE_CHECKING:
    from agents.models import Agent
    from tasks.updater import TaskUpdater


@dataclass
class RequestContext:
    task_id: str
    context_id: str
    message: pb.Message
    agent: Agent
    protocol_version: str
    history: list[pb.Message] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    is_continuation: bool = False

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.agent.executor_settings or {})

    def text(self) -> str:
        """The text parts of the incoming message, joined."""
        return "\n".join(part.text for part in self.message.parts if part.HasField("text"))


class Executor:
    """Base class: subclasses implement `execute`; `cancel` may release resources."""

    # Whether a turn may answer with a single Message instead of a task. A streamed turn of
    # an executor that never does has its task stored before the executor runs, so the
    # stream opens with the task at once; otherwise at the executor's first act.
    replies_with_messages = True

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    async def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        raise NotImplementedError

    async def cancel(self, context: RequestContext, updater: TaskUpdater) -> None:
        """Called before the runner stops the turn; the task is already canceled."""
