"""Worker processes run turns on event loops with Django's check against the ORM on a loop on.

No worker sets DJANGO_ALLOW_ASYNC_UNSAFE: a turn's writes go through sync_to_async to its job
thread's database thread (`tasks.runner.run_job`). Were any of them made on the loop, Django
would refuse it (SynchronousOnlyOperation) and the task would fail.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from a2a.types import Task, TaskState

from tests.factories.messages import user_message
from tests.integration.clients import a2a_client, send, texts, wait_for_state
from tests.integration.stack import Hub

pytestmark = pytest.mark.integration

FLAG = b"DJANGO_ALLOW_ASYNC_UNSAFE="


def environment_of(pid: int) -> list[bytes]:
    return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")


async def slow_turn(hub: Hub, seconds: str) -> Task:
    async with a2a_client(hub.web_a, "slow", "1.0") as client:
        task = await send(client, user_message(seconds), immediately=True)
        ended: set[int] = {TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED}
        return await wait_for_state(client, task.id, ended, 30)


def test_a_worker_turn_that_writes_as_it_goes_completes_without_the_unsafe_async_flag(
    hub: Hub,
) -> None:
    assert all(not any(v.startswith(FLAG) for v in environment_of(w.pid)) for w in hub.workers)

    task = asyncio.run(slow_turn(hub, "1.5"))

    assert task.status.state == TaskState.TASK_STATE_COMPLETED, texts(task.status.message.parts)
    assert task.artifacts, "the turn's writes did not all land"
    runner = hub.runner_of(task.id)
    assert any(runner.endswith(f":{w.pid}") for w in hub.workers), runner
    for worker in hub.workers:
        assert "SynchronousOnlyOperation" not in worker.log.read_text(errors="replace")
