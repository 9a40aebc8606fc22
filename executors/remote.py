"""The `a2a-remote` executor kind: the hub fronts an A2A agent that runs somewhere else.

An agent's `executor_settings` are `{"card_url": "https://agent.example/.well-known/agent-card.json",
"timeout": 300}`, or, for an agent that registered itself with its card (`registry`), `{"card":
{...the card as 1.0 JSON...}}`: the hub then uses the stored card instead of fetching one.
Each turn resolves the remote's card, lets the official a2a-sdk client pick the transport
and protocol version the card offers (1.0, or the 0.3 compat transport), forwards the
caller's message with streaming on, and relays what the remote sends (status messages, artifact
chunks, input-required, the final state) through the TaskUpdater; the hub keeps its own task.

Every request goes through `a2ahub.outbound.async_client` (the connect-time SSRF check) and only
after `check_url` has passed for its URL, so neither the card URL nor the interface URL a card
names can point the hub at a private address (OUTBOUND_ALLOWED_HOSTS opens hosts for development).

Which remote task a hub task talks to: each agent message the hub relays carries `remoteTaskId`
and `remoteContextId` in its metadata, stored in the hub task's history. A follow-up turn (the
remote asked for input) sends to the ids of the latest such message, so any web process or
worker can run it. While a turn runs, the executor also holds the ids in memory; `cancel` uses
them to cancel the remote task (a task waiting for input has no running turn, so canceling it
on the hub leaves the remote task as it is).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.types import a2a_pb2 as pb
from django.core.exceptions import ValidationError

from a2ahub import hops, outbound
from a2ahub.errors import A2AError, InvalidAgentResponseError
from agents.card_trust import CardTrust
from agents.validators import validate_callable_url
from executors import remote_cards
from tasks.executor import Executor, RequestContext
from tasks.models import TaskState
from tasks.updater import TaskUpdater
from tasks.wire import to_json

logger = logging.getLogger(__name__)

REMOTE_TASK_KEY = "remoteTaskId"
REMOTE_CONTEXT_KEY = "remoteContextId"
DEFAULT_TIMEOUT = 300.0
MIN_TIMEOUT, MAX_TIMEOUT = 1.0, 3600.0
CANCEL_TIMEOUT = 4.0
WAITING = {pb.TASK_STATE_SUBMITTED, pb.TASK_STATE_WORKING}
NEEDS = {
    pb.TASK_STATE_INPUT_REQUIRED: "The remote agent needs more input.",
    pb.TASK_STATE_AUTH_REQUIRED: "The remote agent needs authorization.",
}


@dataclass(frozen=True)
class RemoteTask:
    task_id: str = ""
    context_id: str = ""


def card_url(settings: dict[str, Any]) -> str:
    url = str(settings.get("card_url") or "")
    if not url:
        raise InvalidAgentResponseError("This agent's settings name no card_url.")
    return url


def stored_card(settings: dict[str, Any]) -> dict[str, Any] | None:
    card = settings.get("card")
    return card if isinstance(card, dict) and card else None


def interface_url(card: dict[str, Any]) -> str:
    """Where a stored 1.0 card says the agent answers (its first interface)."""
    for interface in card.get("supportedInterfaces") or []:
        if isinstance(interface, dict) and interface.get("url"):
            return str(interface["url"])
    raise InvalidAgentResponseError("The agent's stored card names no interface URL.")


@asynccontextmanager
async def connect_agent(
    context: RequestContext, timeout: float, streaming: bool = True
) -> AsyncIterator[tuple[Client, pb.AgentCard]]:
    """`connect` to the agent an agent's settings name (its stored card, or its card URL),
    one hop further than the turn's task came (`a2ahub.hops`)."""
    settings = context.settings
    card = stored_card(settings)
    url = interface_url(card) if card else card_url(settings)
    link = Link(headers=hops.next_headers(context.metadata))
    async with connect(url, timeout, streaming, card, link) as pair:
        yield pair


def turn_timeout(settings: dict[str, Any]) -> float:
    try:
        seconds = float(settings.get("timeout", DEFAULT_TIMEOUT))
    except (TypeError, ValueError):
        seconds = DEFAULT_TIMEOUT
    return min(max(seconds, MIN_TIMEOUT), MAX_TIMEOUT)


@dataclass(frozen=True)
class Link:
    """How a call is made: the headers every request carries (the hop count), and the paths
    of the hub itself it may reach (none but for the orchestrator, which calls hosted agents)."""

    headers: dict[str, str] = field(default_factory=dict)
    hub_paths: tuple[str, ...] = ()

    async def check_request(self, request: httpx.Request) -> None:
        """httpx's request hook: nothing is sent until the URL passes the SSRF check."""
        await asyncio.to_thread(outbound.check_url, str(request.url), False, self.hub_paths)


@asynccontextmanager
async def connect(
    url: str,
    timeout: float,
    streaming: bool = True,
    known: dict[str, Any] | None = None,
    link: Link | None = None,
) -> AsyncIterator[tuple[Client, pb.AgentCard]]:
    """An SDK client for the agent whose card is at `url` (or is `known`, the agent's own
    URL being `url`), on a guarded HTTP client; the SDK picks the transport and protocol
    version from the card."""
    link = link or Link()
    try:
        async with outbound.async_client(
            url, timeout=timeout, headers=link.headers, hub_paths=link.hub_paths
        ) as guarded:
            guarded.event_hooks["request"] = [link.check_request]
            if known is not None:
                card = parse_agent_card(copy.deepcopy(known))
            else:
                card = await A2ACardResolver(guarded, url, agent_card_path="").get_agent_card()
            config = ClientConfig(streaming=streaming, httpx_client=guarded)
            yield ClientFactory(config).create(card), card
    except outbound.UnsafeURL as exc:
        raise InvalidAgentResponseError(f"The remote agent's address is refused: {exc}") from exc


def remote_task_of(context: RequestContext) -> RemoteTask:
    """The remote ids the latest relayed agent message of this task names (none: a new task)."""
    for message in reversed(context.history):
        if message.role == pb.ROLE_AGENT and REMOTE_TASK_KEY in message.metadata:
            ids = to_json(message.metadata)
            return RemoteTask(str(ids[REMOTE_TASK_KEY]), str(ids.get(REMOTE_CONTEXT_KEY, "")))
    return RemoteTask()


def outgoing(context: RequestContext, remote: RemoteTask) -> pb.SendMessageRequest:
    """The caller's message, addressed to the remote task (or to none, on the first turn)."""
    message = pb.Message()
    message.CopyFrom(context.message)
    message.task_id = remote.task_id
    message.context_id = remote.context_id
    del message.reference_task_ids[:]  # hub task ids mean nothing to the remote
    return pb.SendMessageRequest(message=message)


def validate_remote_settings(settings: dict[str, Any]) -> None:
    """The card URL, or each URL a stored card names, must pass the outbound guard when the
    agent is saved (not only when it is called): no private address, not the hub itself."""
    card = stored_card(settings)
    if card:
        for where, url in card_urls(card):
            validate_callable_url(url, f"executor_settings.{where}: the hub may not call this URL")
        return
    given = settings.get("card_url")
    if not isinstance(given, str) or not given:
        raise ValidationError(
            'Name the remote agent\'s card: {"card_url": "https://.../agent-card.json"}.'
        )
    validate_callable_url(given, "executor_settings.card_url: the hub may not call this URL")


def card_urls(card: dict[str, Any]) -> list[tuple[str, str]]:
    """Each URL of a stored card the hub may call, with the field that holds it."""
    found = [("card.url", card["url"])] if isinstance(card.get("url"), str) else []
    for key in ("supportedInterfaces", "additionalInterfaces"):
        interfaces = card.get(key)
        for index, interface in enumerate(interfaces if isinstance(interfaces, list) else []):
            if isinstance(interface, dict) and isinstance(interface.get("url"), str):
                found.append((f"card.{key}[{index}].url", interface["url"]))
    return found


def check_remote_card(settings: dict[str, Any]) -> CardTrust | None:
    """The signature of the card at the settings' card URL, read when the agent is saved (a
    stored card was checked by the registry that stored it)."""
    url = settings.get("card_url")
    if stored_card(settings) or not isinstance(url, str) or not url:
        return None
    return remote_cards.fetch_trusted(url)[1]


class RemoteAgentExecutor(Executor):
    check_settings = staticmethod(validate_remote_settings)
    check_card = staticmethod(check_remote_card)
    remote = RemoteTask()  # the remote task this turn talks to (none yet)
    streaming = True

    async def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        self.remote = remote_task_of(context)
        if context.is_continuation and not self.remote.task_id:
            raise InvalidAgentResponseError("This task has no remote task to continue.")
        async with connect_agent(context, turn_timeout(context.settings)) as (client, card):
            self.streaming = card.capabilities.streaming
            async for event in client.send_message(outgoing(context, self.remote)):
                await self.relay(event, updater)

    async def cancel(self, context: RequestContext, updater: TaskUpdater) -> None:
        if not self.remote.task_id:
            return
        async with connect_agent(context, CANCEL_TIMEOUT) as (client, _card):
            try:
                await client.cancel_task(pb.CancelTaskRequest(id=self.remote.task_id))
            except A2AError as exc:
                logger.info("remote task %s was not canceled: %s", self.remote.task_id, exc)

    # -- relaying the remote's events ------------------------------------------------------

    async def relay(self, event: pb.StreamResponse, updater: TaskUpdater) -> None:
        kind = event.WhichOneof("payload")
        if kind == "task":
            await self.relay_task(event.task, updater)
        elif kind == "message":
            await updater.reply(list(event.message.parts))
        elif kind == "status_update":
            self.learn(event.status_update.task_id, event.status_update.context_id)
            await self.relay_status(event.status_update.status, updater)
        elif kind == "artifact_update":
            await self.relay_artifact(event.artifact_update, updater)

    def learn(self, task_id: str, context_id: str) -> None:
        if task_id:
            self.remote = RemoteTask(task_id, context_id or self.remote.context_id)

    async def relay_task(self, task: pb.Task, updater: TaskUpdater) -> None:
        """A stream's first event (only its ids matter: updates follow), or the whole answer
        of a remote that does not stream."""
        self.learn(task.id, task.context_id)
        if self.streaming or task.status.state in WAITING:
            return
        for artifact in task.artifacts:
            await self.relay_artifact(
                pb.TaskArtifactUpdateEvent(artifact=artifact, last_chunk=True), updater
            )
        await self.relay_status(task.status, updater)

    async def relay_artifact(
        self, update: pb.TaskArtifactUpdateEvent, updater: TaskUpdater
    ) -> None:
        artifact = update.artifact
        metadata = to_json(artifact.metadata) if artifact.HasField("metadata") else None
        await updater.add_artifact(
            list(artifact.parts), artifact_id=artifact.artifact_id, name=artifact.name,
            description=artifact.description, append=update.append,
            last_chunk=update.last_chunk, metadata=metadata,
        )  # fmt: skip

    async def relay_status(self, status: pb.TaskStatus, updater: TaskUpdater) -> None:
        state = status.state
        message = self.tagged(status.message) if status.HasField("message") else None
        if state in WAITING:
            if updater.state == TaskState.SUBMITTED:
                await updater.start_work(message)
            elif message is not None:
                await updater.update_status(message)
        elif state in NEEDS:
            asked = message or self.tagged(pb.Message(parts=[pb.Part(text=NEEDS[state])]))
            if state == pb.TASK_STATE_INPUT_REQUIRED:
                await updater.require_input(asked)
            else:
                await updater.require_auth(asked)
        elif state == pb.TASK_STATE_COMPLETED:
            await updater.complete(message)
        elif state == pb.TASK_STATE_REJECTED:
            await updater.reject(message)
        elif state == pb.TASK_STATE_CANCELED:
            await updater.fail(message or "The remote agent canceled the task.")
        else:
            await updater.fail(message or "The remote agent failed the task.")

    def tagged(self, remote: pb.Message) -> pb.Message:
        """A copy of the remote's message for the hub's history, naming the remote task."""
        message = pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_AGENT)
        message.parts.extend(remote.parts)
        message.extensions.extend(remote.extensions)
        if remote.HasField("metadata"):
            message.metadata.update(to_json(remote.metadata))
        message.metadata.update(
            {REMOTE_TASK_KEY: self.remote.task_id, REMOTE_CONTEXT_KEY: self.remote.context_id}
        )
        return message
