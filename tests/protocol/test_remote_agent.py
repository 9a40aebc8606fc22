"""The `a2a-remote` executor kind: the hub fronts a real a2a-sdk server, in both versions.

The remote is the official SDK's Starlette app on uvicorn (a thread, 127.0.0.1, a free port),
with 0.3 compat on. Its agents: `echo` (a status message, then the text back in one artifact
of three chunks), `interview` (asks a name, then greets), `slow` (works until canceled) and
`legacy`, an echo whose card offers only a 0.3 interface, and `plain`, an echo that does not
stream (it answers with the whole task). The echo's artifact carries metadata of its own,
which the hub keeps. Loopback is refused by the SSRF
guard, so the tests open 127.0.0.1 with OUTBOUND_ALLOWED_HOSTS, as a developer would.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvicorn
from a2a.server.agent_execution import AgentExecutor
from a2a.server.agent_execution import RequestContext as RemoteContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.server.tasks import TaskUpdater as RemoteUpdater
from a2a.types import a2a_pb2 as pb
from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from starlette.applications import Starlette

from agents.forms import validate_executor_settings
from agents.models import Agent
from executors.remote import REMOTE_CONTEXT_KEY, REMOTE_TASK_KEY
from tests.factories.agents import secured_agent
from tests.factories.envelopes import NON_BLOCKING, envelope, request_headers, url
from tests.factories.versions import METHODS, V03, V1
from tests.protocol.answers import artifact_texts, state_of, texts
from tests.protocol.callers import AsyncCaller, Caller

pytestmark = pytest.mark.django_db
both_versions = pytest.mark.parametrize("version", [V03, V1])

QUESTION = "What is your name?"
ECHO_METADATA = {"source": "remote echo", "words": 3}
WAIT = 10.0


# -- the remote: a real a2a-sdk 1.3 server -----------------------------------------------------


@dataclass
class Seen:
    """What the remote saw: the task of each interview turn, canceled tasks, protocol versions."""

    turns: list[str] = field(default_factory=list)
    canceled: list[str] = field(default_factory=list)
    versions: list[tuple[str, str]] = field(default_factory=list)


async def open_task(context: RemoteContext, queue: EventQueue) -> RemoteUpdater:
    assert context.task_id and context.context_id and context.message
    if context.current_task is None:
        await queue.enqueue_event(
            pb.Task(
                id=context.task_id, context_id=context.context_id,
                status=pb.TaskStatus(state=pb.TASK_STATE_SUBMITTED), history=[context.message],
            )
        )  # fmt: skip
    return RemoteUpdater(queue, context.task_id, context.context_id)


def said(updater: RemoteUpdater, text: str) -> pb.Message:
    return updater.new_agent_message([pb.Part(text=text)])


class ChunkedEcho(AgentExecutor):
    async def execute(self, context: RemoteContext, event_queue: EventQueue) -> None:
        updater = await open_task(context, event_queue)
        await updater.start_work(said(updater, "echoing"))
        words = context.get_user_input().split(" ")
        chunks = [word + " " for word in words[:-1]] + words[-1:]
        for i, chunk in enumerate(chunks):
            await updater.add_artifact(
                [pb.Part(text=chunk)], artifact_id="echo", name="echo", append=i > 0,
                last_chunk=i == len(chunks) - 1, metadata=ECHO_METADATA,
            )  # fmt: skip
        await updater.complete()

    async def cancel(self, context: RemoteContext, event_queue: EventQueue) -> None:
        raise AssertionError("nothing cancels an echo")


class Interview(AgentExecutor):
    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    async def execute(self, context: RemoteContext, event_queue: EventQueue) -> None:
        updater = await open_task(context, event_queue)
        self.seen.turns.append(str(context.task_id))
        if context.current_task is None:
            await updater.requires_input(said(updater, QUESTION))
            return
        await updater.add_artifact([pb.Part(text=f"Hello, {context.get_user_input()}!")])
        await updater.complete()

    async def cancel(self, context: RemoteContext, event_queue: EventQueue) -> None:
        raise AssertionError("nothing cancels an interview")


class Slow(AgentExecutor):
    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    async def execute(self, context: RemoteContext, event_queue: EventQueue) -> None:
        updater = await open_task(context, event_queue)
        await updater.start_work(said(updater, "working"))
        await asyncio.sleep(WAIT)
        await updater.complete()

    async def cancel(self, context: RemoteContext, event_queue: EventQueue) -> None:
        self.seen.canceled.append(str(context.task_id))
        await RemoteUpdater(event_queue, str(context.task_id), str(context.context_id)).cancel()


def remote_card(base: str, name: str, version: str = "1.0", streams: bool = True) -> pb.AgentCard:
    interface = pb.AgentInterface(
        url=f"{base}/{name}/", protocol_binding="JSONRPC", protocol_version=version
    )
    return pb.AgentCard(
        name=name, description=f"The remote {name} agent.", version="1.0.0",
        supported_interfaces=[interface], capabilities=pb.AgentCapabilities(streaming=streams),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=[pb.AgentSkill(id=name, name=name, description=name, tags=["test"])],
    )  # fmt: skip


def remote_app(base: str, seen: Seen) -> Any:
    store = InMemoryTaskStore()
    agents: list[tuple[str, AgentExecutor, str]] = [
        ("echo", ChunkedEcho(), "1.0"),
        ("interview", Interview(seen), "1.0"),
        ("slow", Slow(seen), "1.0"),
        ("legacy", ChunkedEcho(), "0.3"),
        ("plain", ChunkedEcho(), "1.0"),
    ]
    routes = []
    for name, executor, version in agents:
        card = remote_card(base, name, version, streams=name != "plain")
        handler = DefaultRequestHandler(agent_executor=executor, task_store=store, agent_card=card)
        routes.extend(create_agent_card_routes(card, card_url=f"/{name}/agent-card.json"))
        routes.extend(create_jsonrpc_routes(handler, rpc_url=f"/{name}/", enable_v0_3_compat=True))
    app = Starlette(routes=routes)

    async def recording(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            version = dict(scope["headers"]).get(b"a2a-version", b"").decode()
            seen.versions.append((scope["path"], version))
        await app(scope, receive, send)

    return recording


@dataclass
class Remote:
    base: str
    seen: Seen

    def card_url(self, name: str) -> str:
        return f"{self.base}/{name}/agent-card.json"


@pytest.fixture(scope="module")
def remote() -> Iterator[Remote]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{listener.getsockname()[1]}"
    seen = Seen()
    config = uvicorn.Config(remote_app(base, seen), log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT
    while not server.started:
        assert time.monotonic() < deadline, "the remote server did not start"
        time.sleep(0.02)
    yield Remote(base, seen)
    server.should_exit = True
    thread.join(WAIT)
    listener.close()


@pytest.fixture
def allow_loopback(settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]


def fronting(remote: Remote, name: str, **fields: Any) -> Agent:
    """A hub agent (key required) in front of the remote agent `name`."""
    settings = {"card_url": remote.card_url(name)}
    return secured_agent(f"remote-{name}", "a2a-remote", executor_settings=settings, **fields)


# -- reading the hub's SSE answer ------------------------------------------------------------


async def stream(caller: AsyncCaller, slug: str, version: str, text: str) -> list[dict[str, Any]]:
    """The results of a streamed send, read on the test's loop (the sync client cannot)."""
    body = envelope(version, "send", text=text) | {"method": METHODS[version]["stream"]}
    response = await caller.client.post(
        url(slug), data=json.dumps(body), content_type="application/json",
        headers=request_headers(version, caller.key, {}),
    )  # fmt: skip
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/event-stream")
    lines = b"".join([chunk async for chunk in response.streaming_content]).decode().splitlines()
    return [json.loads(line[5:])["result"] for line in lines if line.startswith("data:")]


def artifact_updates(results: list[dict[str, Any]], version: str) -> list[dict[str, Any]]:
    if version == V1:
        return [r["artifactUpdate"] for r in results if "artifactUpdate" in r]
    return [r for r in results if r.get("kind") == "artifact-update"]


# -- the tests -------------------------------------------------------------------------------


@both_versions
@pytest.mark.usefixtures("allow_loopback")
def test_a_send_is_answered_by_the_remote_agent(
    caller: Caller, remote: Remote, version: str
) -> None:
    fronting(remote, "echo")

    task = caller.send("remote-echo", version, text="one two three")

    assert state_of(task) == "completed"
    assert "".join(artifact_texts(task)) == "one two three"
    relayed = [m for m in task["history"] if texts(m) == ["echoing"]]
    assert len(relayed) == 1 and relayed[0]["metadata"][REMOTE_TASK_KEY]
    assert relayed[0]["metadata"][REMOTE_TASK_KEY] != task["id"]  # the hub keeps its own task


@both_versions
@pytest.mark.usefixtures("allow_loopback")
def test_the_artifacts_of_a_remote_that_does_not_stream_keep_their_metadata(
    caller: Caller, remote: Remote, version: str
) -> None:
    fronting(remote, "plain")

    task = caller.send("remote-plain", version, text="one two three")

    assert state_of(task) == "completed"
    assert "".join(artifact_texts(task)) == "one two three"
    assert [a.get("metadata") for a in task["artifacts"]] == [ECHO_METADATA]


@both_versions
@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("allow_loopback")
async def test_a_streamed_send_relays_the_remote_chunks_as_they_come(
    async_caller: AsyncCaller, remote: Remote, version: str
) -> None:
    await sync_to_async(fronting)(remote, "echo")

    results = await stream(async_caller, "remote-echo", version, "one two three")

    chunks = artifact_updates(results, version)
    assert [texts(c["artifact"]) for c in chunks] == [["one "], ["two "], ["three"]]
    assert [bool(c.get("append")) for c in chunks] == [False, True, True]
    assert [bool(c.get("lastChunk")) for c in chunks] == [False, False, True]
    assert state_of(await async_caller.get("remote-echo", chunks[0]["taskId"])) == "completed"


@both_versions
@pytest.mark.usefixtures("allow_loopback")
def test_a_follow_up_continues_the_same_remote_task(
    caller: Caller, remote: Remote, version: str
) -> None:
    fronting(remote, "interview")
    remote.seen.turns.clear()

    asked = caller.send("remote-interview", version, text="hi")
    assert state_of(asked) == "input-required"
    assert texts(asked["status"]["message"]) == [QUESTION]
    answered = caller.send(
        "remote-interview", version, text="Ada",
        message={"taskId": asked["id"], "contextId": asked["contextId"]},
    )  # fmt: skip

    assert state_of(answered) == "completed"
    assert answered["id"] == asked["id"]
    assert artifact_texts(answered) == ["Hello, Ada!"]
    first_turn, second_turn = remote.seen.turns
    assert first_turn == second_turn
    metadata = asked["status"]["message"]["metadata"]
    assert metadata[REMOTE_TASK_KEY] == first_turn and metadata[REMOTE_CONTEXT_KEY]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("allow_loopback")
async def test_canceling_on_the_hub_cancels_the_remote_task(
    async_caller: AsyncCaller, remote: Remote
) -> None:
    await sync_to_async(fronting)(remote, "slow", execution_mode="inline")
    task = await async_caller.send("remote-slow", V1, "go", configuration=NON_BLOCKING[V1])
    working = await async_caller.wait_for(
        "remote-slow", task["id"], lambda t: state_of(t) == "working", timeout=WAIT
    )
    remote_id = working["status"]["message"]["metadata"][REMOTE_TASK_KEY]

    canceled = await async_caller.result("remote-slow", V1, "cancel", {"id": task["id"]})

    assert state_of(canceled) == "canceled"
    deadline = time.monotonic() + WAIT
    while remote_id not in remote.seen.canceled and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert remote_id in remote.seen.canceled


@pytest.mark.usefixtures("allow_loopback")
def test_a_remote_whose_card_offers_only_0_3_is_spoken_to_in_0_3(
    caller: Caller, remote: Remote
) -> None:
    fronting(remote, "legacy")
    remote.seen.versions.clear()

    task = caller.send("remote-legacy", V1, text="old news")

    assert state_of(task) == "completed"
    assert "".join(artifact_texts(task)) == "old news"
    assert remote.seen.versions and set(remote.seen.versions) == {("/legacy/", "0.3")}


def test_a_remote_on_a_private_address_is_refused_before_any_request(
    caller: Caller, remote: Remote, settings: Any
) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = []
    fronting(remote, "echo")
    remote.seen.versions.clear()

    task = caller.send("remote-echo", V1, text="hello")

    assert state_of(task) == "failed"
    assert "loopback" in " ".join(texts(task["status"]["message"]))
    assert remote.seen.versions == []


def test_the_settings_must_name_a_card_url_the_hub_may_call(settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = []
    with pytest.raises(ValidationError, match="card_url"):
        validate_executor_settings("a2a-remote", {})
    with pytest.raises(ValidationError, match="loopback"):
        validate_executor_settings("a2a-remote", {"card_url": "http://127.0.0.1/card.json"})
    validate_executor_settings("a2a-remote", {"card_url": "https://agent.invalid/card.json"})
