"""Background work has one home: the periodic jobs table, sent by Celery beat when the hub is
distributed and run by each process's own scheduler when it is embedded."""

from __future__ import annotations

import logging
import threading
import uuid
from datetime import timedelta

import pytest
from a2a.types import a2a_pb2 as pb
from asgiref.sync import async_to_sync
from django.utils import timezone
from pytest_django.fixtures import Settings

from a2ahub import schedule
from a2ahub.celery import app as celery_app
from agents.models import Agent
from tasks import writer
from tasks.changes import NewTask, StatusChange
from tasks.models import Task, TaskState

pytestmark = pytest.mark.django_db

RECOVERY = "tasks.recover_stale_tasks"
PUSH_SWEEP = "push.sweep_due_deliveries"


def working_task_last_heard(agent: Agent, seconds_ago: float) -> uuid.UUID:
    message = pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER)
    message.parts.add(text="hi")
    spec = NewTask(agent_id=agent.pk, owner="apikey:periodic", context_id="ctx",
                   message=message, protocol_version="1.0", execution_mode="inline")  # fmt: skip
    async_to_sync(writer.open)(spec, [StatusChange(TaskState.WORKING)])
    heard = timezone.now() - timedelta(seconds=seconds_ago)
    Task.objects.filter(id=spec.id).update(heartbeat_at=heard, runner="a-process-that-died")
    return spec.id


@pytest.fixture(autouse=True)
def schedule_never_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no job run yet; the process's own record comes back after it."""
    for periodic in schedule.PERIODIC.values():
        monkeypatch.setattr(periodic, "last_run", 0.0)


@pytest.fixture
def agent() -> Agent:
    return Agent.objects.create(slug="periodic", name="Periodic", description="-",
                                executor_kind="echo")  # fmt: skip


def test_beat_sends_recovery_and_the_push_sweep_at_the_heartbeat_interval(
    settings: Settings,
) -> None:
    settings.TASK_HEARTBEAT_SECONDS = 7.0

    table = schedule.beat_schedule()

    every_7s = {"schedule": 7.0, "options": {"expires": 7.0}}
    assert table[RECOVERY] == {"task": RECOVERY} | every_7s
    assert table[PUSH_SWEEP] == {"task": PUSH_SWEEP} | every_7s
    # Each name is a job the workers know.
    assert {RECOVERY, PUSH_SWEEP} <= set(celery_app.tasks)


def test_the_embedded_scheduler_fails_a_task_whose_runner_died(
    settings: Settings, agent: Agent
) -> None:
    settings.TASK_STALE_SECONDS = 60.0
    dead = working_task_last_heard(agent, seconds_ago=120)
    alive = working_task_last_heard(agent, seconds_ago=5)

    ran = schedule.run_due(now=1_000_000.0)

    assert set(ran) >= {RECOVERY, PUSH_SWEEP}
    assert Task.objects.get(id=dead).state == TaskState.FAILED
    assert Task.objects.get(id=alive).state == TaskState.WORKING


def test_a_job_runs_again_only_once_its_interval_has_passed(
    settings: Settings, agent: Agent
) -> None:
    settings.TASK_HEARTBEAT_SECONDS = 10.0
    settings.TASK_STALE_SECONDS = 60.0
    schedule.run_due(now=1_000_000.0)
    dead = working_task_last_heard(agent, seconds_ago=120)

    too_soon = schedule.run_due(now=1_000_005.0)
    assert RECOVERY not in too_soon
    assert Task.objects.get(id=dead).state == TaskState.WORKING

    assert RECOVERY in schedule.run_due(now=1_000_010.0)
    assert Task.objects.get(id=dead).state == TaskState.FAILED


def test_a_run_in_beat_that_hangs_is_not_started_again_and_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Beat ticks every half second while a run waits on a database that is away: the job is
    not started twice, and the log says so once, not every tick."""
    release = threading.Event()
    runs: list[int] = []

    class Hanging:
        name = "tests.hanging_job"

        def __call__(self) -> int:
            runs.append(1)
            release.wait(10)
            return 0

    schedule.register(Hanging(), lambda: 1.0, in_beat=True)
    try:
        with caplog.at_level(logging.INFO, logger="a2ahub.schedule"):
            for _ in range(5):
                schedule.run_in_beat(Hanging.name)
            release.set()
            schedule.PERIODIC[Hanging.name].thread.join(5)  # type: ignore[union-attr]
            schedule.run_in_beat(Hanging.name)  # a new run once the last one ended
            schedule.PERIODIC[Hanging.name].thread.join(5)  # type: ignore[union-attr]
    finally:
        del schedule.PERIODIC[Hanging.name]
    skipped = [r for r in caplog.records if "still runs from its last tick" in r.getMessage()]
    assert len(runs) == 2
    assert len(skipped) == 1
