"""The official a2a-sdk client, through every door (both protocol versions, the three bindings,
the agent's own URLs and the shared ones routed by `tenant`), against the distributed hub: the
same scenarios give the same outcomes on each.

Every test sends through web process A and reads or cancels through web process B (over gRPC,
both go to the hub's gRPC process, whose address the cards of either list): tasks live in
PostgreSQL, their events cross between processes through Redis, and worker-mode turns run on a
Celery worker.
"""

from __future__ import annotations

import asyncio

import pytest
from a2a.types import CancelTaskRequest, ListTasksRequest, Task, TaskState
from a2a.utils.errors import TaskNotCancelableError

from tests.factories.messages import user_message
from tests.integration.clients import (
    DOORS,
    GRPC,
    TERMINAL,
    Door,
    a2a_client,
    get,
    read_task,
    send,
    texts,
    wait_for_state,
)
from tests.integration.stack import Hub

pytestmark = pytest.mark.integration
# The gRPC service too: the same scenarios through the hub's gRPC process.
EVERY_DOOR = [*DOORS, GRPC]
every_door = pytest.mark.parametrize("door", EVERY_DOOR, ids=str)


@every_door
def test_a_blocking_send_to_echo_returns_the_echoed_artifact(hub: Hub, door: Door) -> None:
    async def scenario() -> None:
        async with a2a_client(hub.web_a, "echo", *door) as client:
            task = await send(client, user_message(f"hello over {door}"))
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert [texts(a.parts) for a in task.artifacts] == [[f"hello over {door}"]]

    asyncio.run(scenario())


@every_door
def test_a_task_sent_through_one_web_process_is_read_through_the_other(
    hub: Hub, door: Door
) -> None:
    async def scenario() -> None:
        async with a2a_client(hub.web_a, "echo", *door) as sender:
            sent = await send(sender, user_message("read me elsewhere"))
        async with a2a_client(hub.web_b, "echo", *door) as reader:
            task = await get(reader, sent.id)
        assert task.id == sent.id and task.context_id == sent.context_id
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert [texts(a.parts) for a in task.artifacts] == [["read me elsewhere"]]
        assert texts(task.history[0].parts) == ["read me elsewhere"]

    asyncio.run(scenario())


# ListTasks is 1.0 only: 0.3 has no such method.
@pytest.mark.parametrize("door", [d for d in EVERY_DOOR if d.version == "1.0"], ids=str)
def test_tasks_sent_through_one_web_process_are_listed_newest_first_by_the_other(
    hub: Hub, door: Door
) -> None:
    async def scenario() -> None:
        async with a2a_client(hub.web_a, "echo", *door) as sender:
            first = await send(sender, user_message("first"))
            second = await send(sender, user_message("second", context_id=first.context_id))
        async with a2a_client(hub.web_b, "echo", *door) as lister:
            listed = await lister.list_tasks(ListTasksRequest(context_id=first.context_id))
        assert [t.id for t in listed.tasks] == [second.id, first.id]
        assert all(t.status.state == TaskState.TASK_STATE_COMPLETED for t in listed.tasks)

    asyncio.run(scenario())


@every_door
def test_a_running_slow_task_is_canceled_through_the_other_web_process(
    hub: Hub, door: Door
) -> None:
    async def start() -> Task:
        async with a2a_client(hub.web_a, "slow", *door) as sender:
            started = await send(sender, user_message("30"), immediately=True)
            assert started.status.state not in TERMINAL
            return await wait_for_state(sender, started.id, {TaskState.TASK_STATE_WORKING}, 15)

    async def cancel(task_id: str) -> Task:
        async with a2a_client(hub.web_b, "slow", *door) as canceler:
            return await canceler.cancel_task(CancelTaskRequest(id=task_id))

    started = asyncio.run(start())
    worker = hub.process_running(started.id)
    assert worker is not None and worker.name.startswith("worker")
    canceled = asyncio.run(cancel(started.id))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    # The cancel reached the worker through Redis: it stopped the turn, not just the row.
    hub.wait_for_log(worker, f"task {started.id} stopped", timeout=10)
    task = asyncio.run(read_task(hub.web_a, "slow", door.version, started.id))
    assert task.status.state == TaskState.TASK_STATE_CANCELED
    assert not task.artifacts


@every_door
def test_canceling_a_finished_task_is_refused(hub: Hub, door: Door) -> None:
    async def scenario() -> None:
        async with a2a_client(hub.web_a, "echo", *door) as sender:
            done = await send(sender, user_message("done already"))
        async with a2a_client(hub.web_b, "echo", *door) as canceler:
            with pytest.raises(TaskNotCancelableError):
                await canceler.cancel_task(CancelTaskRequest(id=done.id))

    asyncio.run(scenario())


@every_door
def test_the_interviewer_asks_a_question_and_completes_the_answer_sent_elsewhere(
    hub: Hub, door: Door
) -> None:
    async def scenario() -> None:
        async with a2a_client(hub.web_a, "interview", *door) as first_turn:
            asked = await send(first_turn, user_message("Hi!"))
        assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert "name" in " ".join(texts(asked.status.message.parts))
        answer = user_message("Ada", task_id=asked.id, context_id=asked.context_id)
        async with a2a_client(hub.web_b, "interview", *door) as second_turn:
            done = await send(second_turn, answer)
        assert done.id == asked.id
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        assert [texts(a.parts) for a in done.artifacts] == [["Nice to meet you, Ada!"]]

    asyncio.run(scenario())


@every_door
def test_a_blocking_send_to_a_worker_agent_returns_the_task_a_celery_worker_completed(
    hub: Hub, door: Door
) -> None:
    async def scenario() -> Task:
        async with a2a_client(hub.web_a, "slow", *door) as client:
            return await send(client, user_message("1"))

    task = asyncio.run(scenario())
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert [texts(a.parts) for a in task.artifacts] == [["Worked for 1 seconds."]]
    runner = hub.process_running(task.id)
    assert runner is not None and runner.name.startswith("worker"), hub.runner_of(task.id)
