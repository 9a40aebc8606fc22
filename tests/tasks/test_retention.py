"""Retention of tasks: finished tasks older than TASK_RETENTION_DAYS go, with every row that
hangs from them, in bounded batches; open and recent ones stay; the admin says what will go."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from pytest_django.fixtures import Settings

from a2ahub import schedule
from a2ahub.celery import app as celery_app
from agents.models import Agent
from push.models import Delivery, DeliveryAttempt, PushNotificationConfig
from tasks import jobs, retention
from tasks.changes import StatusChange
from tasks.models import Artifact, Message, Task, TaskEvent, TaskState
from tests.factories.agents import make_agent
from tests.factories.push import stored_delivery
from tests.factories.tasks import ended, last_updated, open_task, report_artifact

pytestmark = pytest.mark.django_db

PRUNE = "tasks.prune_finished_tasks"
CHANGELIST = "admin:tasks_task_changelist"
UUID = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}")


@pytest.fixture
def agent() -> Agent:
    return make_agent("kept")


@pytest.fixture
def thirty_days(settings: Settings) -> Settings:
    settings.TASK_RETENTION_DAYS = 30
    settings.RETENTION_BATCH_SIZE = 200
    return settings


def old_finished(agent: Agent, count: int, days_ago: float = 31) -> list[Task]:
    return [last_updated(open_task(agent, ended()), days_ago + n) for n in range(count)]


def rows_of(task: Task) -> dict[str, int]:
    """How many rows of each kind hang from the task, in its app and in push."""
    return {
        "messages": Message.objects.filter(task=task).count(),
        "artifacts": Artifact.objects.filter(task=task).count(),
        "events": TaskEvent.objects.filter(task=task).count(),
        "configs": PushNotificationConfig.objects.filter(task=task).count(),
        "deliveries": Delivery.objects.filter(config__task=task).count(),
        "attempts": DeliveryAttempt.objects.filter(delivery__config__task=task).count(),
    }


def task_deletes(queries: CaptureQueriesContext) -> list[str]:
    return [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith('DELETE FROM "tasks_task"')
    ]


# Pruning.


def test_an_old_finished_task_goes_with_its_messages_artifacts_events_and_deliveries(
    thirty_days: Settings, agent: Agent
) -> None:
    old = open_task(agent, [StatusChange(TaskState.WORKING), report_artifact(),
                            StatusChange(TaskState.COMPLETED)])  # fmt: skip
    stored_delivery(old, days_ago=31)
    last_updated(old, 31)
    recent = last_updated(open_task(agent, [report_artifact(), *ended()]), 29)
    stored_delivery(recent, days_ago=29)
    kept_rows = rows_of(recent)

    assert jobs.prune_finished_tasks() == 1

    assert not Task.objects.filter(id=old.id).exists()
    assert rows_of(old) == dict.fromkeys(kept_rows, 0)
    assert Task.objects.filter(id=recent.id).exists()
    assert rows_of(recent) == kept_rows
    assert kept_rows == {"messages": 1, "artifacts": 1, "events": 4, "configs": 1,
                         "deliveries": 1, "attempts": 1}  # fmt: skip


def test_every_finished_state_is_pruned_and_no_open_one(
    thirty_days: Settings, agent: Agent
) -> None:
    finished = [
        last_updated(open_task(agent, ended(state)), 31)
        for state in (TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED,
                      TaskState.REJECTED)
    ]  # fmt: skip
    waiting = [StatusChange(TaskState.WORKING), StatusChange(TaskState.INPUT_REQUIRED)]
    open_ones = [
        last_updated(open_task(agent, changes), 400)
        for changes in ([], [StatusChange(TaskState.WORKING)], waiting,
                        [StatusChange(TaskState.AUTH_REQUIRED)])
    ]  # fmt: skip

    assert retention.prune_tasks() == [4]

    assert not Task.objects.filter(id__in=[t.id for t in finished]).exists()
    assert set(Task.objects.values_list("state", flat=True)) == {
        TaskState.SUBMITTED, TaskState.WORKING, TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED
    }  # fmt: skip
    assert Task.objects.count() == len(open_ones)


def test_a_run_deletes_in_batches_of_the_batch_size_until_none_is_left(
    thirty_days: Settings, agent: Agent
) -> None:
    thirty_days.RETENTION_BATCH_SIZE = 2
    old_finished(agent, 5)

    with CaptureQueriesContext(connection) as queries:
        assert retention.prune_tasks() == [2, 2, 1]

    assert Task.objects.count() == 0
    # One DELETE a batch, each naming its own tasks' ids.
    assert [len(UUID.findall(sql)) for sql in task_deletes(queries)] == [2, 2, 1]


def test_a_run_stops_at_its_cap_and_the_next_run_takes_the_rest_oldest_first(
    thirty_days: Settings, agent: Agent
) -> None:
    thirty_days.RETENTION_BATCH_SIZE = 2
    tasks = old_finished(agent, 5)  # tasks[0] is the most recently updated

    assert retention.prune_tasks(max_batches=2) == [2, 2]
    assert list(Task.objects.all()) == [tasks[0]]

    assert retention.prune_tasks(max_batches=2) == [1]
    assert retention.prune_tasks(max_batches=2) == []
    assert Task.objects.count() == 0


def test_with_retention_off_every_task_is_kept(settings: Settings, agent: Agent) -> None:
    settings.TASK_RETENTION_DAYS = 0
    old_finished(agent, 3, days_ago=10_000)

    assert jobs.prune_finished_tasks() == 0
    assert Task.objects.count() == 3


def test_pruning_is_a_periodic_job_sent_every_minute(settings: Settings) -> None:
    table = schedule.beat_schedule()

    assert table[PRUNE] == {"task": PRUNE, "schedule": 60.0, "options": {"expires": 60.0}}
    assert PRUNE in celery_app.tasks


# What the admin shows.


def changelist_subtitle(client: Client) -> str:
    response = client.get(reverse(CHANGELIST))
    assert response.status_code == 200
    return str(response.context["subtitle"])


def test_the_task_list_says_how_many_finished_tasks_the_next_run_prunes(
    thirty_days: Settings, operator_client: Client, agent: Agent
) -> None:
    old_finished(agent, 2)
    last_updated(open_task(agent, ended()), 29)
    last_updated(open_task(agent), 400)

    response = operator_client.get(reverse(CHANGELIST))

    line = "2 finished tasks older than 30 days will be pruned at the next run."
    assert f"<h2>{line}</h2>" in response.content.decode()


def test_the_task_list_speaks_of_one_task_in_the_singular(
    thirty_days: Settings, operator_client: Client, agent: Agent
) -> None:
    thirty_days.TASK_RETENTION_DAYS = 1
    old_finished(agent, 1, days_ago=2)

    assert changelist_subtitle(operator_client) == (
        "1 finished task older than 1 day will be pruned at the next run."
    )


def test_the_task_list_counts_no_further_than_its_limit(
    thirty_days: Settings,
    operator_client: Client,
    agent: Agent,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(retention, "COUNT_LIMIT", 3)
    monkeypatch.setattr(retention, "MAX_BATCHES", 2)
    thirty_days.RETENTION_BATCH_SIZE = 1
    old_finished(agent, 5)

    with CaptureQueriesContext(connection) as queries:
        subtitle = changelist_subtitle(operator_client)

    assert (
        subtitle == "More than 3 finished tasks older than 30 days will be pruned, up to 2 a run."
    )
    (count,) = [q["sql"] for q in queries.captured_queries if "updated_at" in q["sql"]
                and "COUNT(" in q["sql"]]  # fmt: skip
    assert "LIMIT 4" in count


def test_the_task_list_says_when_tasks_are_kept_forever(
    settings: Settings, operator_client: Client, agent: Agent
) -> None:
    settings.TASK_RETENTION_DAYS = 0
    old_finished(agent, 1, days_ago=10_000)

    assert changelist_subtitle(operator_client) == (
        "Finished tasks are kept forever (TASK_RETENTION_DAYS is 0)."
    )
