"""Recovery of tasks whose runner died, and only of those.

The worker running a slow task is killed with SIGKILL, so it cannot clean up; its task's
heartbeat stops, and a surviving process's maintenance thread fails the task once the heartbeat
is older than TASK_STALE_SECONDS. A replacement worker keeps the session's hub whole. Tasks
that merely wait in the queue for a free worker have no runner yet and must not be failed.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest
from a2a.types import Task, TaskState

from tests.factories.messages import user_message
from tests.factories.versions import VERSIONS
from tests.integration.clients import TERMINAL, a2a_client, read_task, send, texts, wait_for_state
from tests.integration.stack import STALE_SECONDS, THREADS_PER_WORKER, Hub, Process

pytestmark = pytest.mark.integration

# Stale after TASK_STALE_SECONDS, found within a heartbeat or two, with room for a busy machine.
RECOVERY_TIMEOUT = float(STALE_SECONDS) + 12


def worker_running(hub: Hub, task_id: str, timeout: float = 15) -> Process:
    """The worker process that claimed the task (it writes its `host:pid` when it does)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        process = hub.process_running(task_id)
        if process is not None:
            assert process.name.startswith("worker"), f"{process.name} runs a worker-mode task"
            return process
        time.sleep(0.1)
    raise AssertionError(f"no worker claimed task {task_id} within {timeout}s")


def kill(hub: Hub, worker: Process) -> None:
    os.kill(worker.pid, signal.SIGKILL)
    worker.popen.wait(timeout=10)
    hub.replace_worker(worker)


async def start_slow_task(hub: Hub) -> Task:
    async with a2a_client(hub.web_a, "slow", "1.0") as client:
        task = await send(client, user_message("30"), immediately=True)
        return await wait_for_state(client, task.id, {TaskState.TASK_STATE_WORKING}, 15)


async def wait_for_recovery(hub: Hub, task_id: str) -> Task:
    async with a2a_client(hub.web_b, "slow", "1.0") as client:
        ended = {TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_COMPLETED}
        return await wait_for_state(client, task_id, ended, RECOVERY_TIMEOUT, interval=0.25)


def test_a_task_whose_worker_is_killed_mid_turn_ends_failed_and_says_why(hub: Hub) -> None:
    started = asyncio.run(start_slow_task(hub))
    kill(hub, worker_running(hub, started.id))

    ended = asyncio.run(wait_for_recovery(hub, started.id))

    assert ended.status.state == TaskState.TASK_STATE_FAILED
    assert not ended.artifacts
    for version in VERSIONS:
        task = asyncio.run(read_task(hub.web_a, "slow", version, started.id))
        assert task.status.state == TaskState.TASK_STATE_FAILED
        reason = " ".join(texts(task.status.message.parts))
        assert "stopped" in reason and "recovery" in reason, reason


def test_tasks_waiting_in_the_queue_for_a_busy_worker_are_not_failed_by_recovery(
    hub: Hub,
) -> None:
    # Twice as many tasks as worker threads: half of them wait in the queue for longer than
    # TASK_STALE_SECONDS, yet nothing died.
    count = 2 * THREADS_PER_WORKER * len(hub.workers)
    seconds = float(STALE_SECONDS) + 1

    async def scenario() -> list[Task]:
        async with a2a_client(hub.web_a, "slow", "1.0") as client:
            message = f"{seconds:g}"
            started = [
                await send(client, user_message(message), immediately=True) for _ in range(count)
            ]
            ended = set(TERMINAL)
            return [await wait_for_state(client, t.id, ended, 4 * seconds + 15) for t in started]

    states = [TaskState.Name(t.status.state) for t in asyncio.run(scenario())]
    assert states == ["TASK_STATE_COMPLETED"] * count
