"""The `orchestrator` demo: an agent that hands the caller's message to other hosted agents.

Its `executor_settings` are `{"agents": ["echo", "toolbox"]}`. Each turn sends the message to
every listed agent at once, as an ordinary A2A client of the hub's public endpoints (its own
origin: `PUBLIC_BASE_URL`, or http://HOST:PORT), so the sub-tasks are hub tasks like any other.
It completes with their artifacts, and its final message names the sub-tasks in
`referenceTaskIds`; if one of them does not complete, it fails, naming them all the same.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field

from a2a.types import a2a_pb2 as pb
from django.conf import settings

from a2ahub import hops, outbound
from a2ahub.errors import A2AError
from executors.remote import Link, connect
from tasks.executor import Executor, RequestContext
from tasks.updater import TaskUpdater

SUB_TASK_TIMEOUT = 60.0
ANY_ADDRESS = {"", "0.0.0.0", "::"}


@dataclass
class Answer:
    """What one agent made of the message: its task, or a direct reply, or why it failed."""

    slug: str
    task: pb.Task | None = None
    parts: list[pb.Part] = field(default_factory=list)
    error: str = ""

    @property
    def completed(self) -> bool:
        return not self.error and (
            self.task is None or self.task.status.state == pb.TASK_STATE_COMPLETED
        )

    def summary(self) -> str:
        if self.error:
            return f"{self.slug}: {self.error}"
        if self.task is None:
            return f"{self.slug}: replied"
        state = pb.TaskState.Name(self.task.status.state).removeprefix("TASK_STATE_").lower()
        return f"{self.slug}: {state} (task {self.task.id})"


def own_base_url() -> str:
    """The hub's public origin; HOST:PORT is its own too (it listens there), so it is let
    through the SSRF guard like PUBLIC_BASE_URL."""
    if settings.PUBLIC_BASE_URL:
        return str(settings.PUBLIC_BASE_URL)
    host = "127.0.0.1" if settings.HOST in ANY_ADDRESS else settings.HOST
    host = f"[{host}]" if ":" in host else host
    origin = f"http://{host}:{settings.PORT}"
    outbound.register_own_origin(origin)
    return origin


def agent_slugs(context: RequestContext) -> list[str]:
    agents = context.settings.get("agents")
    return [str(slug) for slug in agents] if isinstance(agents, list) else []


def sub_message(context: RequestContext) -> pb.SendMessageRequest:
    message = pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER)
    message.parts.extend(context.message.parts)
    return pb.SendMessageRequest(message=message)


async def ask(base: str, slug: str, context: RequestContext) -> Answer:
    if slug == context.agent.slug:
        # Asking itself would start a turn that asks itself again, once per listing: the hop
        # limit would end it, but only after 2**8 calls for an orchestrator listed twice.
        return Answer(slug, error="an orchestrator does not ask itself")
    card_url = f"{base}/agents/{slug}/.well-known/agent-card.json"
    # The hub's own doors, one hop further: an orchestrator that lists itself ends at the limit.
    link = Link(headers=hops.next_headers(context.metadata), hub_paths=("/",))
    try:
        async with connect(card_url, SUB_TASK_TIMEOUT, False, link=link) as (client, _card):
            async for event in client.send_message(sub_message(context)):
                if event.HasField("task"):
                    return Answer(slug, task=event.task)
                return Answer(slug, parts=list(event.message.parts))
    except A2AError as exc:
        return Answer(slug, error=exc.message)
    return Answer(slug, error="no answer")


def final_message(answers: list[Answer]) -> pb.Message:
    message = pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_AGENT)
    message.parts.add(text="; ".join(answer.summary() for answer in answers))
    message.reference_task_ids.extend(a.task.id for a in answers if a.task is not None)
    return message


class OrchestratorExecutor(Executor):
    replies_with_messages = False

    async def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        slugs = agent_slugs(context)
        if not slugs:
            await updater.reject('This orchestrator names no agents: {"agents": ["echo"]}.')
            return
        await updater.start_work(f"Asking {', '.join(slugs)}.")
        base = own_base_url()
        answers = await asyncio.gather(*(ask(base, slug, context) for slug in slugs))
        for answer in answers:
            await self.collect(answer, updater)
        if all(answer.completed for answer in answers):
            await updater.complete(final_message(answers))
        else:
            await updater.fail(final_message(answers))

    async def collect(self, answer: Answer, updater: TaskUpdater) -> None:
        """The answer's artifacts (or its direct reply) become artifacts of this task."""
        if answer.task is None:
            if answer.parts:
                await updater.add_artifact(answer.parts, name=answer.slug, last_chunk=True)
            return
        metadata = {"agent": answer.slug, "taskId": answer.task.id}
        for artifact in answer.task.artifacts:
            name = f"{answer.slug}: {artifact.name}" if artifact.name else answer.slug
            await updater.add_artifact(
                list(artifact.parts), name=name, last_chunk=True, metadata=metadata
            )
