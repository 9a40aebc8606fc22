"""Turns meet a database that refuses their writes (issue #30).

A refusal for a moment is retried, and nothing is written twice; a turn the outage outlasts
ends failed, saying the database was unavailable: its blocking send answers with the task,
its stream ends with that failure at once, and the failure is stored once the database is
back. A stream also ends when someone else ends its task (recovery) while its turn runs.

The outage is Django's `execute_wrapper` on the connection the turn writes through: every
UPDATE of a task is refused as a database that is going away refuses it (or runs, and its
answer is lost), and every other statement goes through.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb
from asgiref.sync import async_to_sync, sync_to_async
from django.db import OperationalError, connection

from agents.models import Agent
from agents.principals import Principal
from protocol.calls import Call
from protocol.handlers.streams import StreamItem, send_streaming_message
from protocol.handlers.tasks import send_message
from tasks import events, runner, updater, writer
from tasks.changes import NewTask
from tasks.models import Task, TaskEvent, TaskState
from tasks.updater import OUTAGE_REASON, TaskUpdater
from tests.factories.agents import make_agent
from tests.factories.messages import user_message
from tests.factories.versions import V1

pytestmark = pytest.mark.django_db(transaction=True)

OWNER = "apikey:retries"


class Outage:
    """Refuses each UPDATE of a task while `away`; runs the next `lost` of them but loses
    their answers (the connection dropped after the commit)."""

    def __init__(self) -> None:
        self.away = False
        self.lost = 0
        self.refused = 0

    def __call__(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        if 'UPDATE "tasks_task"' not in sql:
            return execute(sql, params, many, context)
        if self.away:
            self.refused += 1
            raise OperationalError("the database system is shutting down")
        result = execute(sql, params, many, context)
        if self.lost:
            self.lost -= 1
            raise OperationalError("server closed the connection unexpectedly")
        return result


@pytest.fixture
def outage(monkeypatch: pytest.MonkeyPatch) -> Iterator[Outage]:
    # Short pauses: the test is about what a retry does, not how long it waits.
    monkeypatch.setattr(updater, "RETRY_PAUSES", (0.01, 0.01, 0.01))
    monkeypatch.setattr(updater, "FAILURE_WRITE_EVERY", 0.05)
    fault = Outage()
    with connection.execute_wrapper(fault):
        yield fault


@pytest.fixture
def slow(db: None) -> Agent:
    """An inline agent that reports progress every 50 ms for as many seconds as it is sent."""
    return make_agent(
        "slow-inline", executor_kind="slow", execution_mode="inline",
        executor_settings={"step": 0.05},
    )  # fmt: skip


def call_of(agent: Agent) -> Call:
    return Call(agent=agent, principal=Principal(OWNER, OWNER), version=V1,
                base_url_of=lambda: "http://testserver")  # fmt: skip


def events_of(task_id: Any) -> list[tuple[int, str]]:
    return list(
        TaskEvent.objects.filter(task_id=task_id)
        .order_by("sequence")
        .values_list("sequence", "kind")
    )


def stored(task_id: Any) -> Task:
    return Task.objects.get(id=task_id)


async def until(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await sync_to_async(check)():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


def new_updater(agent: Agent) -> TaskUpdater:
    spec = NewTask(agent_id=agent.pk, owner=OWNER, context_id="ctx", message=user_message("hi"),
                   protocol_version=V1, execution_mode="inline")  # fmt: skip
    return TaskUpdater(spec, stored=False, state=TaskState.SUBMITTED, runner="test")


def test_a_write_refused_for_a_moment_is_retried_and_the_turn_goes_on(
    outage: Outage, slow: Agent
) -> None:
    async def turn() -> TaskUpdater:
        task = new_updater(slow)
        await task.start_work("starting")
        await task.flush()
        outage.away = True
        await task.update_status("half way")
        flushing = asyncio.ensure_future(task.flush())
        await asyncio.sleep(0.015)  # one refusal, then the database is back
        outage.away = False
        await flushing
        await task.complete("done")
        await task.flush()
        return task

    task = async_to_sync(turn)()

    assert outage.refused >= 1
    assert task.settled.result().state == TaskState.COMPLETED
    assert stored(task.task_id).state == TaskState.COMPLETED
    assert events_of(task.task_id) == [(1, "task"), (2, "status"), (3, "status"), (4, "status")]


def test_a_retried_write_whose_answer_was_lost_is_written_once_and_heard(
    outage: Outage, slow: Agent
) -> None:
    """The first attempt was stored but its answer lost: the retry, made only on the task's
    last event as the updater knew it, finds it stored and tells its listeners."""

    async def turn() -> tuple[TaskUpdater, list[Any]]:
        task = new_updater(slow)
        await task.start_work("starting")
        await task.flush()
        subscription = await events.subscribe(task.task_id, over_redis=False)
        outage.lost = 1
        await task.complete("done")
        await task.flush()
        heard = []
        while subscription.ready:
            heard.append(await subscription.get())
        events.unsubscribe(subscription)
        return task, heard

    task, heard = async_to_sync(turn)()

    assert task.settled.result().state == TaskState.COMPLETED
    assert events_of(task.task_id) == [(1, "task"), (2, "status"), (3, "status")]
    assert [event[0] for event in heard] == [3]


def test_a_blocking_send_whose_turn_the_outage_ended_answers_with_the_failed_task(
    outage: Outage, slow: Agent
) -> None:
    """Its answer carries the stored task (id and state, and why it failed); the failure is
    written once the database is back."""

    async def send() -> tuple[pb.Task, bool]:
        outage.away = True  # the new task is stored (an INSERT); its progress is not
        request = pb.SendMessageRequest(message=user_message("5"))
        answer = await send_message(call_of(slow), request)
        assert isinstance(answer, pb.Task)
        outage.away = False
        written = await until(lambda: stored(answer.id).state == TaskState.FAILED)
        await until(lambda: answer.id not in runner.RUNNING)
        return answer, written

    answer, written = async_to_sync(send)()

    assert answer.status.state == pb.TASK_STATE_FAILED
    assert "database was unavailable" in answer.status.message.parts[0].text
    assert answer.history[0].parts[0].text == "5"
    assert written, "the failure was never stored"
    task = stored(answer.id)
    assert task.last_error == OUTAGE_REASON
    assert task.status_message is not None
    assert task.status_message["parts"][0]["text"] == OUTAGE_REASON


def stream_to_end(
    agent: Agent,
    text: str,
    meanwhile: Callable[[str], Any],
    afterwards: Callable[[str], Any] | None = None,
) -> tuple[list[StreamItem], str]:
    """A stream's events (keep-alives and pauses left out) to its end; `meanwhile(task_id)`
    runs once its first event has come, `afterwards(task_id)` once it has ended, before the
    turn is waited for."""

    async def stream() -> tuple[list[StreamItem], str]:
        request = pb.SendMessageRequest(message=user_message(text))
        items: list[StreamItem] = []
        task_id = ""
        async with asyncio.timeout(10):  # a stream that never ends fails here
            async for item in await send_streaming_message(call_of(agent), request):
                if not item[1]:
                    continue
                items.append(item)
                if not task_id:
                    task_id = item[1]["task"]["id"]
                    await meanwhile(task_id)
        if afterwards is not None:
            await afterwards(task_id)
        await until(lambda: task_id not in runner.RUNNING)
        return items, task_id

    return async_to_sync(stream)()


def test_a_stream_whose_turn_the_outage_ended_ends_with_the_failure_at_once(
    outage: Outage, slow: Agent
) -> None:
    """It ends before the database is back, with the failure not stored yet; the failure is
    stored once the database is back."""
    states = []

    async def stop_the_database(task_id: str) -> None:
        outage.away = True

    async def start_the_database(task_id: str) -> None:
        states.append(await sync_to_async(lambda: stored(task_id).state)())
        outage.away = False

    items, task_id = stream_to_end(slow, "5", stop_the_database, start_the_database)

    sequence, last = items[-1]
    assert sequence is None  # not stored: the database is away
    status = last["statusUpdate"]["status"]
    assert status["state"] == "TASK_STATE_FAILED"
    assert "database was unavailable" in status["message"]["parts"][0]["text"]
    assert states == [TaskState.SUBMITTED]  # as stored when the stream ended
    task = stored(task_id)
    assert task.state == TaskState.FAILED
    assert task.status_message == status["message"]


def test_a_stream_ends_when_recovery_fails_its_task_while_the_turn_runs(slow: Agent) -> None:
    """Recovery (in another process, say) fails a task whose turn this process still runs:
    the turn stops, and its stream ends with recovery's failure."""

    async def recover(task_id: str) -> None:
        assert await until(lambda: stored(task_id).state == TaskState.WORKING)
        assert await writer.fail_stale(task_id, "Recovered.")

    items, task_id = stream_to_end(slow, "5", recover)

    sequence, last = items[-1]
    assert sequence == stored(task_id).last_sequence
    assert last["statusUpdate"]["status"]["state"] == "TASK_STATE_FAILED"
    assert last["statusUpdate"]["status"]["message"]["parts"][0]["text"] == "Recovered."
