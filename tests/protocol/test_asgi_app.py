"""The JSON-RPC endpoints as a server runs them, message by message: the hub's ASGI app reads
the body itself, answers without Django's handler, and (on PostgreSQL) writes a new task from
the event loop. (The other protocol tests call the same app through tests/door_client.py.)
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
import pytest
from asgiref.sync import sync_to_async
from asgiref.testing import ApplicationCommunicator
from django.db import connection
from pytest_django.fixtures import Settings

from a2ahub import asyncdb
from a2ahub.asgi import application
from executors.echo import EchoExecutor
from push.models import Delivery
from tasks import events
from tasks.executor import Executor, RequestContext
from tasks.models import Task, TaskEvent
from tasks.updater import TaskUpdater
from tests.factories.agents import make_agent
from tests.factories.envelopes import envelope
from tests.factories.errors import hub_error
from tests.factories.versions import V03, V1
from tests.helpers import postgresql_only

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def scope(slug: str, version: str | None, method: str = "POST", **headers: str) -> dict[str, Any]:
    raw = {"content-type": "application/json", **headers}
    if version == V1:
        raw["a2a-version"] = V1
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": f"/agents/{slug}/jsonrpc/", "raw_path": b"", "query_string": b"",
        "root_path": "", "headers": [(k.encode(), v.encode()) for k, v in raw.items()],
        "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8000),
    }  # fmt: skip


@pytest.fixture
async def app() -> AsyncIterator[None]:
    yield
    # Each test has its own event loop; its database pool goes with it.
    await asyncdb.close()


async def in_db(function: Any, *args: Any, **kwargs: Any) -> Any:
    """Run ORM code from the test's loop, then give its connection back: the thread it runs
    on outlives the test, and a connection left checked out there would outlive the test
    database."""

    def run() -> Any:
        try:
            return function(*args, **kwargs)
        finally:
            connection.close()

    return await sync_to_async(run)()


async def call(request_scope: dict[str, Any], chunks: list[bytes]) -> Answer:
    communicator = ApplicationCommunicator(application, request_scope)
    for index, chunk in enumerate(chunks):
        more = index < len(chunks) - 1
        await communicator.send_input({"type": "http.request", "body": chunk, "more_body": more})
    start = await communicator.receive_output(10)
    body = b""
    while True:
        message = await communicator.receive_output(10)
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    await communicator.wait(5)
    headers = {k.decode().lower(): v.decode() for k, v in start["headers"]}
    return Answer(start["status"], headers, body)


def send_body(version: str, text: str = "hello", **fields: Any) -> bytes:
    return json.dumps(envelope(version, "send", text=text, **fields)).encode()


@pytest.mark.parametrize("version", [V1, V03])
async def test_a_send_through_the_app_stores_the_task_with_every_event(
    app: None, version: str
) -> None:
    await in_db(make_agent, "chunky", executor_settings={"chunks": 3})

    answer = await call(scope("chunky", version), [send_body(version, "abc")])

    assert answer.status == 200
    result = answer.json()["result"]
    task = result["task"] if version == V1 else result
    stored = await in_db(Task.objects.get, id=task["id"])
    assert stored.state == "completed"
    # The answer's artifact is the stored one: three chunks appended into one.
    assert [p["text"] for p in task["artifacts"][0]["parts"]] == ["abc", "abc", "abc"]
    kinds = await in_db(
        lambda: list(
            TaskEvent.objects.filter(task=stored)
            .order_by("sequence")
            .values_list("kind", "sequence")
        )
    )
    assert kinds == [("task", 1), ("status", 2), ("artifact", 3), ("artifact", 4),
                     ("artifact", 5), ("status", 6)]  # fmt: skip
    got = await call(
        scope("chunky", V1), [json.dumps(envelope(V1, "get", {"id": task["id"]})).encode()]
    )
    assert got.json()["result"]["artifacts"][0]["parts"] == [{"text": "abc"}] * 3


@pytest.mark.parametrize("version", [V1, V03])
async def test_a_body_over_the_limit_is_refused_while_it_arrives(
    app: None, settings: Any, version: str
) -> None:
    settings.A2A_MAX_REQUEST_BYTES = 1000
    await in_db(make_agent, "echo")
    communicator = ApplicationCommunicator(application, scope("echo", version))
    await communicator.send_input({"type": "http.request", "body": b"x" * 600, "more_body": True})
    await communicator.send_input({"type": "http.request", "body": b"x" * 600, "more_body": True})

    # Refused without waiting for the rest of the body (which never comes).
    start = await communicator.receive_output(5)
    body = await communicator.receive_output(5)
    assert start["status"] == 413
    error = json.loads(body["body"])["error"]
    assert error["code"] == -32600
    assert "1000 bytes" in error["message"]
    assert error == hub_error(
        version, -32600, "The request body is over 1000 bytes.", "INVALID_REQUEST"
    )
    assert ("data" in error) is (version == V1)
    await communicator.wait(5)
    assert not await in_db(Task.objects.exists)


async def test_the_app_answers_the_door_errors_itself(app: None) -> None:
    await in_db(make_agent, "echo")

    got = await call(scope("echo", V03, method="GET"), [b""])
    assert (got.status, got.headers["allow"]) == (405, "POST")

    text = await call(scope("echo", V03, **{"content-type": "text/plain"}), [send_body(V03)])
    assert text.status == 415

    missing = await call(scope("nobody", V03), [send_body(V03)])
    assert missing.status == 404


async def test_a_client_that_leaves_a_stream_frees_its_subscription(app: None) -> None:
    await in_db(
        make_agent, "essay", executor_kind="writer", executor_settings={"delay": 5}, streaming=True
    )
    body = json.dumps(envelope(V1, "send", text="streams") | {"method": "SendStreamingMessage"})
    communicator = ApplicationCommunicator(application, scope("essay", V1))
    await communicator.send_input({"type": "http.request", "body": body.encode()})
    start = await communicator.receive_output(10)
    assert start["status"] == 200
    first = await communicator.receive_output(10)
    # (A chunk holds the frames that were ready together: the task, perhaps its first status.)
    task_id = frames_of(first["body"])[0][1]["task"]["id"]
    assert events.listened(task_id)

    await communicator.send_input({"type": "http.disconnect"})
    await communicator.wait(5)

    for _ in range(50):
        if not events.listened(task_id):
            break
        await asyncio.sleep(0.05)
    assert not events.listened(task_id)
    # Leaving a stream does not stop the work; the task is still there to cancel.
    cancel = json.dumps(envelope(V1, "cancel", {"id": task_id})).encode()
    canceled = (await call(scope("essay", V1), [cancel])).json()["result"]
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"


def frames_of(body: bytes) -> list[tuple[int | None, dict[str, Any]]]:
    found = []
    for block in body.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in lines:
            sequence = int(lines["id"]) if "id" in lines else None
            found.append((sequence, json.loads(lines["data"])["result"]))
    return found


async def test_a_stream_written_chunk_by_chunk_is_stored_as_it_was_sent(app: None) -> None:
    await in_db(
        make_agent, "essay", executor_kind="writer", executor_settings={"delay": 0.01},
        streaming=True,
    )  # fmt: skip
    body = envelope(V1, "send", text="streams") | {"method": "SendStreamingMessage"}

    answer = await call(scope("essay", V1), [json.dumps(body).encode()])

    frames = frames_of(answer.body)
    assert [sequence for sequence, _ in frames] == list(range(1, len(frames) + 1))
    assert frames[-1][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    sent = "".join(
        part["text"]
        for _, event in frames
        if "artifactUpdate" in event
        for part in event["artifactUpdate"]["artifact"]["parts"]
    )
    task_id = frames[0][1]["task"]["id"]
    stored = await in_db(
        lambda: list(TaskEvent.objects.filter(task_id=task_id).order_by("sequence"))
    )
    assert [(e.sequence, e.payload) for e in stored] == frames
    got = await call(
        scope("essay", V1), [json.dumps(envelope(V1, "get", {"id": task_id})).encode()]
    )
    task = got.json()["result"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "".join(p["text"] for p in task["artifacts"][0]["parts"]) == sent


class BusyExecutor(Executor):
    """Starts, then computes for a while without giving the event loop back, then answers."""

    async def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        await updater.start_work()
        time.sleep(0.3)  # CPU-bound work, as far as the event loop can tell
        await updater.add_artifact("done", name="result", last_chunk=True)
        await updater.complete()


@pytest.fixture
def busy_kind(settings: Settings) -> str:
    busy = {"class": f"{__name__}.BusyExecutor", "label": "Busy"}
    settings.EXECUTOR_KINDS = settings.EXECUTOR_KINDS | {"busy": busy}
    return "busy"


async def test_a_stream_shows_the_task_when_the_agent_starts_not_when_it_ends(
    app: None, busy_kind: str
) -> None:
    await in_db(make_agent, "busy", executor_kind=busy_kind, streaming=True)
    body = envelope(V1, "send", text="go") | {"method": "SendStreamingMessage"}

    answer = await call(scope("busy", V1), [json.dumps(body).encode()])

    frames = frames_of(answer.body)
    working = frames[1][1]["statusUpdate"]["status"]
    completed = frames[-1][1]["statusUpdate"]["status"]
    assert (working["state"], completed["state"]) == ("TASK_STATE_WORKING", "TASK_STATE_COMPLETED")
    # Stored when the agent started: the working state is stamped before its work, the end
    # after it (a turn written in one go would stamp both alike).
    started = datetime.fromisoformat(working["timestamp"].replace("Z", "+00:00"))
    ended = datetime.fromisoformat(completed["timestamp"].replace("Z", "+00:00"))
    assert (ended - started).total_seconds() >= 0.3


class GatedExecutor(Executor):
    """Does nothing until the test opens its gate, then works and completes."""

    replies_with_messages = False
    gate: asyncio.Event
    waiting: asyncio.Event

    async def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        GatedExecutor.waiting.set()
        await GatedExecutor.gate.wait()
        await updater.start_work()
        await updater.add_artifact("done", name="result", last_chunk=True)
        await updater.complete()


class GatedReplier(GatedExecutor):
    """The same, but may answer with a single Message, as far as the hub knows."""

    replies_with_messages = True


class GatedEcho(EchoExecutor):
    """The echo agent, once the test opens the gate."""

    async def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        GatedExecutor.waiting.set()
        await GatedExecutor.gate.wait()
        await super().execute(context, updater)


@pytest.fixture
def gated(settings: Settings) -> None:
    GatedExecutor.gate, GatedExecutor.waiting = asyncio.Event(), asyncio.Event()
    settings.EXECUTOR_KINDS = settings.EXECUTOR_KINDS | {
        kind: {"class": f"{__name__}.{name}", "label": kind}
        for kind, name in (
            ("gated", "GatedExecutor"),
            ("gated-replier", "GatedReplier"),
            ("gated-echo", "GatedEcho"),
        )
    }


async def open_body_stream(slug: str) -> ApplicationCommunicator:
    body = envelope(V1, "send", text="go") | {"method": "SendStreamingMessage"}
    communicator = ApplicationCommunicator(application, scope(slug, V1))
    await communicator.send_input({"type": "http.request", "body": json.dumps(body).encode()})
    return communicator


async def rest_of(communicator: ApplicationCommunicator) -> list[tuple[int | None, Any]]:
    frames = []
    while (message := await communicator.receive_output(10)).get("more_body"):
        frames += frames_of(message["body"])
    await communicator.wait(5)
    return frames


async def test_a_stream_opens_with_the_stored_task_before_the_agent_does_anything(
    app: None, gated: None
) -> None:
    await in_db(make_agent, "gated", executor_kind="gated", streaming=True)
    communicator = await open_body_stream("gated")
    assert (await communicator.receive_output(10))["status"] == 200

    first = frames_of((await communicator.receive_output(10))["body"])
    await GatedExecutor.waiting.wait()
    task_id = first[0][1]["task"]["id"]
    stored = await in_db(lambda: list(TaskEvent.objects.filter(task_id=task_id)))
    GatedExecutor.gate.set()
    rest = await rest_of(communicator)

    assert [(n, e["task"]["status"]["state"]) for n, e in first] == [(1, "TASK_STATE_SUBMITTED")]
    assert [e.sequence for e in stored] == [1]  # the agent had not acted yet
    assert [n for n, _ in rest] == [2, 3, 4]
    assert rest[-1][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_a_stream_of_an_agent_that_may_answer_with_a_message_waits_for_its_first_act(
    app: None, gated: None
) -> None:
    await in_db(make_agent, "replier", executor_kind="gated-replier", streaming=True)
    communicator = await open_body_stream("replier")
    assert (await communicator.receive_output(10))["status"] == 200
    await GatedExecutor.waiting.wait()

    stored_before = await in_db(lambda: Task.objects.filter(agent__slug="replier").count())
    GatedExecutor.gate.set()
    frames = await rest_of(communicator)

    assert stored_before == 0  # no task until the agent chose to make one
    assert [n for n, _ in frames] == [1, 2, 3, 4]
    assert "task" in frames[0][1]


async def writes_of_a_fast_turn(
    kind: str = "echo", after_first_write: Callable[[], None] = lambda: None
) -> list[list[tuple[int | None, Any]]]:
    """The frames of a five-chunk echo's streamed turn, grouped by the write that sent them."""
    await in_db(
        make_agent, "chunky", executor_kind=kind, executor_settings={"chunks": 5}, streaming=True
    )
    communicator = await open_body_stream("chunky")
    assert (await communicator.receive_output(10))["status"] == 200

    writes = []
    while (message := await communicator.receive_output(10)).get("more_body"):
        writes.append(frames_of(message["body"]))
        if len(writes) == 1:
            after_first_write()
    await communicator.wait(5)
    return writes


@postgresql_only("SQLite's writes go through a thread, whose events reach the stream as they may")
async def test_a_fast_agents_turn_reaches_the_client_in_one_write_after_its_task(
    app: None, gated: None
) -> None:
    # The agent acts once its task's frame has reached the client. Left to race the stream,
    # a loaded machine may run the whole turn before the stream's first write, and the task
    # then shares that write with the turn (the stream writes only when it has to wait).
    writes = await writes_of_a_fast_turn("gated-echo", GatedExecutor.gate.set)

    assert [[n for n, _ in frames] for frames in writes] == [[1], [2, 3, 4, 5, 6, 7, 8]]


async def test_a_fast_agents_turn_reaches_the_client_whole_and_in_order_after_its_task(
    app: None,
) -> None:
    # What holds on every database, however the frames are grouped into writes.
    writes = await writes_of_a_fast_turn()

    frames = [frame for write in writes for frame in write]
    assert writes[0][0][0] == 1  # the task opens the first write
    assert [n for n, _ in frames] == [1, 2, 3, 4, 5, 6, 7, 8]
    kinds = [next(iter(event)) for _, event in frames]
    assert kinds == ["task", "statusUpdate", *["artifactUpdate"] * 5, "statusUpdate"]
    states = [event[kind]["status"]["state"] for (_, event), kind in zip(frames, kinds, strict=True)
              if kind != "artifactUpdate"]  # fmt: skip
    assert states == ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    chunks = [p["text"] for _, e in frames if "artifactUpdate" in e
              for p in e["artifactUpdate"]["artifact"]["parts"]]  # fmt: skip
    assert chunks == ["go"] * 5


@postgresql_only("the one-statement writes are PostgreSQL's")
@pytest.mark.parametrize("version", [V1, V03])
async def test_a_non_blocking_send_with_a_webhook_to_a_fast_agent_is_one_write(
    app: None, settings: Settings, loop_statements: list[str], monkeypatch: Any, version: str
) -> None:
    # The answer does not wait for the agent, but an agent that ends before it awaits anything
    # has ended by the time its task is written: one statement, its webhook's deliveries in it.
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    await in_db(make_agent, "followed", push_notifications=True)
    orm_writes = orm_statements(monkeypatch, "INSERT", "UPDATE", "DELETE")
    hook = "http://127.0.0.1:9/hook"
    configuration = (
        {"returnImmediately": True, "taskPushNotificationConfig": {"url": hook}}
        if version == V1
        else {"blocking": False, "pushNotificationConfig": {"url": hook}}
    )

    answer = await call(
        scope("followed", version), [send_body(version, configuration=configuration)]
    )

    result = answer.json()["result"]
    task = result["task"] if version == V1 else result
    stored = await in_db(Task.objects.get, id=task["id"])
    assert (stored.state, stored.push_enabled) == ("completed", True)
    assert len(loop_statements) == 1, loop_statements
    assert orm_writes == []
    sequences = await in_db(
        lambda: sorted(
            Delivery.objects.filter(config__task=stored).values_list("sequence", flat=True)
        )
    )
    assert sequences == [1, 2, 3, 4]  # the task, working, its artifact, completed


def orm_statements(monkeypatch: Any, *verbs: str) -> list[str]:
    """The statements starting with one of `verbs` that the ORM's connections run from now."""
    seen: list[str] = []
    execute = psycopg.Cursor.execute

    def counted(cursor: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        text = query if isinstance(query, str) else str(query)
        if text.lstrip().upper().startswith(verbs):
            seen.append(text)
        return execute(cursor, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", counted)
    return seen
