"""CancelTask (1.0) and tasks/cancel (0.3): open tasks end as canceled and their work stops;
ended tasks cannot be canceled; nobody cancels another caller's task."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from asgiref.sync import sync_to_async

from agents.models import Agent
from tasks import runner
from tasks.models import TaskEvent
from tests.protocol.conftest import (
    UNKNOWN_TASK,
    V03,
    V1,
    VERSIONS,
    AsyncCaller,
    Caller,
    envelope,
    error_info,
    error_of,
    state_of,
)

pytestmark = pytest.mark.django_db

NON_BLOCKING = {V1: {"returnImmediately": True}, V03: {"blocking": False}}


def event_log(task_id: str) -> list[tuple[int, str, str]]:
    """(sequence, kind, state or "") of every stored event of the task, in order."""
    rows = TaskEvent.objects.filter(task_id=task_id).order_by("sequence")
    return [(e.sequence, e.kind, state_in(e.payload)) for e in rows]


def state_in(payload: dict) -> str:
    return str(payload.get("statusUpdate", {}).get("status", {}).get("state", ""))


@pytest.mark.parametrize("version", VERSIONS)
def test_it_cancels_a_task_waiting_for_input(
    caller: Caller, interview: Agent, version: str
) -> None:
    task = caller.send("interview", version)

    canceled = caller.result("interview", version, "cancel", {"id": task["id"]})

    assert canceled["id"] == task["id"]
    assert state_of(canceled) == "canceled"
    assert state_of(caller.get("interview", version, task["id"])) == "canceled"
    assert event_log(task["id"])[-1] == (3, "status", "TASK_STATE_CANCELED")


@pytest.mark.parametrize("version", VERSIONS)
def test_it_refuses_to_cancel_a_completed_task(caller: Caller, echo: Agent, version: str) -> None:
    task = caller.send("echo", version)

    error = caller.error("echo", version, "cancel", {"id": task["id"]})

    assert error["code"] == -32002
    if version == V1:
        assert error_info(error)["reason"] == "TASK_NOT_CANCELABLE"
    assert state_of(caller.get("echo", version, task["id"])) == "completed"


@pytest.mark.parametrize("version", VERSIONS)
def test_it_refuses_to_cancel_a_task_twice(caller: Caller, interview: Agent, version: str) -> None:
    task = caller.send("interview", version)
    caller.result("interview", version, "cancel", {"id": task["id"]})
    events = event_log(task["id"])

    error = caller.error("interview", version, "cancel", {"id": task["id"]})

    assert error["code"] == -32002
    assert event_log(task["id"]) == events


@pytest.mark.parametrize("version", VERSIONS)
def test_it_returns_task_not_found_for_an_unknown_task(
    caller: Caller, echo: Agent, version: str
) -> None:
    error = caller.error("echo", version, "cancel", {"id": UNKNOWN_TASK})

    assert error["code"] == -32001


@pytest.mark.parametrize("version", VERSIONS)
def test_it_returns_task_not_found_for_another_callers_task(
    caller: Caller, stranger: Caller, interview: Agent, version: str
) -> None:
    task = caller.send("interview", version)

    error = stranger.error("interview", version, "cancel", {"id": task["id"]})

    assert error["code"] == -32001
    assert state_of(caller.get("interview", version, task["id"])) == "input-required"


@pytest.mark.parametrize("version", VERSIONS)
def test_it_refuses_a_request_without_an_id_naming_the_field(
    caller: Caller, echo: Agent, version: str
) -> None:
    body = envelope(version, "cancel")
    del body["params"]["id"]

    error = error_of(caller.post("echo", body, version))

    assert error["code"] == -32602
    assert "id" in str(error.get("data"))


# -- cancelling running work ----------------------------------------------------------------


def wait_until(check: Callable[[], bool], timeout: float = 2.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_workers")
@pytest.mark.parametrize("version", VERSIONS)
def test_it_stops_the_work_of_a_canceled_worker_task(
    caller: Caller, slow_agent: Callable[..., Agent], version: str
) -> None:
    slow_agent()
    task = caller.send("slow", version, "5", configuration=NON_BLOCKING[version])
    task_id = task["id"]
    assert wait_until(lambda: len(event_log(task_id)) >= 3)  # working, then progress

    canceled = caller.result("slow", version, "cancel", {"id": task_id})

    assert state_of(canceled) == "canceled"
    assert wait_until(lambda: task_id not in runner.RUNNING)
    events = event_log(task_id)
    time.sleep(0.3)  # three more steps of work, had it gone on
    assert event_log(task_id) == events
    assert events[-1][1:] == ("status", "TASK_STATE_CANCELED")
    assert [e[0] for e in events] == list(range(1, len(events) + 1))
    stored = caller.get("slow", version, task_id)
    assert state_of(stored) == "canceled"
    assert stored.get("artifacts", []) == []


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_it_stops_the_work_of_a_canceled_inline_task(
    async_caller: AsyncCaller, slow_agent: Callable[..., Agent]
) -> None:
    await sync_to_async(slow_agent)("slow-inline", "inline")
    log = sync_to_async(event_log)
    task = await async_caller.send("slow-inline", V1, "5", configuration=NON_BLOCKING[V1])
    task_id = task["id"]
    while len(await log(task_id)) < 3:
        await asyncio.sleep(0.02)

    canceled = await async_caller.result("slow-inline", V1, "cancel", {"id": task_id})
    for _ in range(100):
        if task_id not in runner.RUNNING:
            break
        await asyncio.sleep(0.02)

    assert state_of(canceled) == "canceled"
    assert task_id not in runner.RUNNING
    events = await log(task_id)
    await asyncio.sleep(0.3)
    assert await log(task_id) == events
    assert events[-1][1:] == ("status", "TASK_STATE_CANCELED")
    stored = await async_caller.get("slow-inline", task_id)
    assert state_of(stored) == "canceled"
    assert stored.get("artifacts", []) == []
