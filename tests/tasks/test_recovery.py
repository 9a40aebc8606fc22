"""Recovery in seconds when the process list says a runner is gone, after TASK_STALE_SECONDS
when it cannot: running turns of a dead process are failed three beats after their last one,
a live process's turns are not, and a queued turn nobody took is queued again."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta

import pytest
from a2a.types import a2a_pb2 as pb
from asgiref.sync import async_to_sync
from django.utils import timezone
from pytest_django.fixtures import Settings

from a2ahub import processes
from agents.models import Agent
from tasks import recovery, writer
from tasks.changes import NewTask, StatusChange
from tasks.models import Task, TaskState
from tasks.runner import RUNNER_ID

pytestmark = pytest.mark.django_db

BEAT = 2.0  # so three missed beats are 6 s
GONE = "host-of-a-dead-process:4242"


@pytest.fixture(autouse=True)
def timings(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.TASK_HEARTBEAT_SECONDS = BEAT
    settings.TASK_STALE_SECONDS = 60.0
    # The process list in memory, as embedded: no process is listed until a test says so (in
    # Redis, other tests' processes would be).
    settings.REDIS_URL = ""
    monkeypatch.setattr(processes, "_local", {})


@pytest.fixture
def agent() -> Agent:
    return Agent.objects.create(slug="recovered", name="Recovered", description="-",
                                executor_kind="echo")  # fmt: skip


def task_last_heard(agent: Agent, runner: str, seconds_ago: float) -> uuid.UUID:
    message = pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER)
    message.parts.add(text="hi")
    spec = NewTask(agent_id=agent.pk, owner="apikey:recovery", context_id="ctx",
                   message=message, protocol_version="1.0", execution_mode="worker")  # fmt: skip
    async_to_sync(writer.open)(spec, [StatusChange(TaskState.WORKING)])
    heard = timezone.now() - timedelta(seconds=seconds_ago)
    Task.objects.filter(id=spec.id).update(heartbeat_at=heard, runner=runner)
    return spec.id


def this_process_is_listed(started_ago: float = 3600) -> None:
    processes.record("worker", time.time() - started_ago)


def state(task_id: uuid.UUID) -> TaskState:
    return TaskState(Task.objects.get(id=task_id).state)


def test_a_turn_whose_process_is_gone_is_failed_three_beats_after_its_last_one(
    agent: Agent,
) -> None:
    this_process_is_listed()
    dead = task_last_heard(agent, GONE, seconds_ago=3 * BEAT + 1)
    not_yet = task_last_heard(agent, GONE, seconds_ago=3 * BEAT - 1)

    assert recovery.fail_stale(recovery.stale_cutoff()) == 1

    assert state(dead) == TaskState.FAILED
    assert state(not_yet) == TaskState.WORKING


def test_a_live_processs_silent_turn_is_failed_only_after_task_stale_seconds(
    agent: Agent,
) -> None:
    this_process_is_listed()
    # Its process lives (a database outage kept it from beating, say): it may yet finish.
    quiet = task_last_heard(agent, RUNNER_ID, seconds_ago=30)
    # Nobody has beaten its heart for a minute although its process lives: its run ended
    # without the final write.
    orphan = task_last_heard(agent, RUNNER_ID, seconds_ago=61)

    recovery.fail_stale(recovery.stale_cutoff())

    assert state(quiet) == TaskState.WORKING
    assert state(orphan) == TaskState.FAILED


def test_a_turn_of_a_process_whose_pid_a_newer_process_has_is_failed_in_seconds(
    agent: Agent,
) -> None:
    # A container restarted in place: the new process has the dead one's host and pid.
    this_process_is_listed(started_ago=2)
    of_the_dead_one = task_last_heard(agent, RUNNER_ID, seconds_ago=3 * BEAT + 1)

    assert recovery.fail_stale(recovery.stale_cutoff()) == 1
    assert state(of_the_dead_one) == TaskState.FAILED


def test_with_no_process_listed_recovery_waits_for_task_stale_seconds(agent: Agent) -> None:
    # As when Redis came back empty and no process has beaten into it yet.
    maybe_alive = task_last_heard(agent, GONE, seconds_ago=30)

    assert recovery.fail_stale(recovery.stale_cutoff()) == 0
    assert state(maybe_alive) == TaskState.WORKING


def test_a_queued_turn_nobody_took_is_queued_again_three_beats_after_it_was_queued(
    agent: Agent,
) -> None:
    this_process_is_listed()
    lost = task_last_heard(agent, "queued:lost", seconds_ago=3 * BEAT + 1)
    just_queued = task_last_heard(agent, "queued:new", seconds_ago=1)

    assert recovery.lost_turns(recovery.stale_cutoff()) == [(str(lost), "queued:lost")]
    # Taken: its wait starts again, so the next sweep does not queue it a second time.
    assert recovery.lost_turns(recovery.stale_cutoff()) == []
    assert state(lost) == state(just_queued) == TaskState.WORKING
