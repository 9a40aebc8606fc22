"""Tasks as the console sees them: finished some time ago after some turn time, stuck, or
working; and webhook queues that back up or fail."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from agents.models import Agent
from push.models import Delivery, DeliveryState, PushNotificationConfig
from tasks.changes import StatusChange
from tasks.models import Task, TaskState
from tests.factories.tasks import ended, open_task
from tests.factories.versions import V1


def finished_task(
    agent: Agent,
    state: TaskState = TaskState.COMPLETED,
    took: float = 0.2,
    minutes_ago: float = 0.0,
    context_id: str = "ctx-1",
) -> Task:
    """A task that reached `state` `minutes_ago` minutes ago, `took` seconds after it was
    made (test setup: the times are set afterwards)."""
    task = open_task(agent, ended(state), context_id=context_id)
    finished_at = timezone.now() - timedelta(minutes=minutes_ago)
    Task.objects.filter(id=task.id).update(
        updated_at=finished_at, created_at=finished_at - timedelta(seconds=took)
    )
    task.refresh_from_db()
    return task


def stuck_task(agent: Agent, minutes: float) -> Task:
    """A working task whose status last moved `minutes` minutes ago."""
    task = open_task(agent, [StatusChange(TaskState.WORKING)])
    Task.objects.filter(id=task.id).update(
        status_timestamp=timezone.now() - timedelta(minutes=minutes)
    )
    task.refresh_from_db()
    return task


def waiting_deliveries(task: Task, url: str, pending: int, retrying: int) -> PushNotificationConfig:
    """A webhook of `task` with `pending` deliveries waiting, `retrying` of them after a
    failed attempt."""
    config = PushNotificationConfig.objects.create(
        task=task, config_id=f"hook-{pending}-{retrying}", url=url, protocol_version=V1,
        last_error="HTTP 503 from the receiver",
    )  # fmt: skip
    event = task.events.order_by("-sequence").first()
    assert event is not None
    now = timezone.now()
    for n in range(pending):
        Delivery.objects.create(
            config=config, event=event, sequence=event.sequence, state=DeliveryState.PENDING,
            attempts=1 if n < retrying else 0, next_attempt_at=now + timedelta(seconds=n),
        )  # fmt: skip
    return config
