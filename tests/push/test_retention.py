"""Retention of deliveries: delivered and abandoned ones last due more than
PUSH_DELIVERY_RETENTION_DAYS ago go with their attempts, in bounded batches; pending and recent
ones stay, and so do their tasks and configs; the delivery admin says what will go."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from pytest_django.fixtures import Settings

from a2ahub import schedule
from a2ahub.celery import app as celery_app
from push import jobs, retention
from push.models import Delivery, DeliveryAttempt, DeliveryState, PushNotificationConfig
from tasks.models import Task
from tests.factories.agents import make_agent
from tests.factories.push import stored_delivery
from tests.factories.tasks import ended, open_task

pytestmark = pytest.mark.django_db

PRUNE = "push.prune_finished_deliveries"
CHANGELIST = "admin:push_delivery_changelist"
DELIVERED, ABANDONED, PENDING = (
    DeliveryState.DELIVERED,
    DeliveryState.ABANDONED,
    DeliveryState.PENDING,
)


@pytest.fixture
def task() -> Task:
    return open_task(make_agent("pushed"), ended())


@pytest.fixture
def a_week(settings: Settings) -> Settings:
    settings.PUSH_DELIVERY_RETENTION_DAYS = 7
    settings.RETENTION_BATCH_SIZE = 200
    return settings


def deliveries(task: Task, state: str, count: int, days_ago: float = 8) -> list[Delivery]:
    return [stored_delivery(task, state, days_ago + n) for n in range(count)]


def test_old_delivered_and_abandoned_deliveries_go_with_their_attempts(
    a_week: Settings, task: Task
) -> None:
    gone = [*deliveries(task, DELIVERED, 2), *deliveries(task, ABANDONED, 1)]
    recent = [*deliveries(task, DELIVERED, 1, days_ago=6), *deliveries(task, ABANDONED, 1, 6)]
    retrying = deliveries(task, PENDING, 1, days_ago=30)

    assert jobs.prune_finished_deliveries() == 3

    kept = recent + retrying
    assert set(Delivery.objects.all()) == set(kept)
    assert set(DeliveryAttempt.objects.values_list("delivery", flat=True)) == {d.pk for d in kept}
    assert not DeliveryAttempt.objects.filter(delivery__in=[d.pk for d in gone]).exists()
    # The task, its events and its config are not push's retention's to delete.
    assert Task.objects.filter(id=task.id).exists()
    assert task.events.count() == 3
    assert PushNotificationConfig.objects.filter(task=task).count() == 1


def test_a_run_deletes_in_batches_and_stops_at_its_cap(a_week: Settings, task: Task) -> None:
    a_week.RETENTION_BATCH_SIZE = 2
    deliveries(task, DELIVERED, 3)
    abandoned = deliveries(task, ABANDONED, 2)

    assert retention.prune_deliveries(max_batches=2) == [2, 1]
    assert set(Delivery.objects.all()) == set(abandoned)

    assert retention.prune_deliveries(max_batches=2) == [2]
    assert not Delivery.objects.exists()


def test_a_run_without_a_cap_in_sight_prunes_both_states_in_batches(
    a_week: Settings, task: Task
) -> None:
    a_week.RETENTION_BATCH_SIZE = 2
    deliveries(task, DELIVERED, 3)
    deliveries(task, ABANDONED, 2)

    assert retention.prune_deliveries() == [2, 1, 2]
    assert not Delivery.objects.exists()


def test_with_retention_off_every_delivery_is_kept(settings: Settings, task: Task) -> None:
    settings.PUSH_DELIVERY_RETENTION_DAYS = 0
    deliveries(task, DELIVERED, 2, days_ago=10_000)

    assert jobs.prune_finished_deliveries() == 0
    assert Delivery.objects.count() == 2


def test_pruning_is_a_periodic_job_sent_every_minute() -> None:
    table = schedule.beat_schedule()

    assert table[PRUNE] == {"task": PRUNE, "schedule": 60.0, "options": {"expires": 60.0}}
    assert PRUNE in celery_app.tasks


# What the admin shows.


def changelist_page(client: Client) -> str:
    response = client.get(reverse(CHANGELIST))
    assert response.status_code == 200
    return response.content.decode()


def test_the_delivery_list_says_how_many_deliveries_the_next_run_prunes(
    a_week: Settings, operator_client: Client, task: Task
) -> None:
    deliveries(task, DELIVERED, 2)
    deliveries(task, ABANDONED, 1)
    deliveries(task, DELIVERED, 1, days_ago=6)
    deliveries(task, PENDING, 1, days_ago=30)

    line = "3 delivered or abandoned deliveries older than 7 days will be pruned at the next run."
    assert f"<h2>{line}</h2>" in changelist_page(operator_client)


def test_the_delivery_list_says_when_deliveries_are_kept_forever(
    settings: Settings, operator_client: Client, task: Task
) -> None:
    settings.PUSH_DELIVERY_RETENTION_DAYS = 0
    deliveries(task, DELIVERED, 1, days_ago=10_000)

    line = "Finished deliveries are kept forever (PUSH_DELIVERY_RETENTION_DAYS is 0)."
    assert f"<h2>{line}</h2>" in changelist_page(operator_client)
