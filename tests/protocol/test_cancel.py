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
from tests.factories.envelopes import NON_BLOCKING, UNKNOWN_TASK, envelope
from tests.factories.errors import hub_error, invalid_params, task_not_found, validation_failed
from tests.factories.versions import V03, V1, VERSIONS
from tests.helpers import eventually
from tests.protocol.answers import error_info, error_of, event_log, state_of
from tests.protocol.callers import AsyncCaller, Caller

pytestmark = pytest.mark.django_db


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
    message = f"Task {task['id']} is completed and cannot be canceled."
    assert error == hub_error(version, -32002, message, "TASK_NOT_CANCELABLE")
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
    assert error == task_not_found(version, UNKNOWN_TASK)


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
    if version == V1:  # the SDK's validator
        assert error == validation_failed("id", "Field is required.")
    else:
        assert error == invalid_params(V03, "id", "Field required")


# -- cancelling running work ----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_workers")
@pytest.mark.parametrize("version", VERSIONS)
def test_it_stops_the_work_of_a_canceled_worker_task(
    caller: Caller, slow_agent: Callable[..., Agent], version: str
) -> None:
    slow_agent()
    task = caller.send("slow", version, "5", configuration=NON_BLOCKING[version])
    task_id = task["id"]
    # Working, then progress.
    assert eventually(lambda: len(event_log(task_id)) >= 3, timeout=2.0, interval=0.02)

    canceled = caller.result("slow", version, "cancel", {"id": task_id})

    assert state_of(canceled) == "canceled"
    assert eventually(lambda: task_id not in runner.RUNNING, timeout=2.0, interval=0.02)
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
