"""Push as a listener of the task writer: the rows a change of a task with webhooks adds (a
given config, and one delivery per new event and active config) are written with the change,
and the delivery engines are woken once it commits (`push.engine`)."""

from __future__ import annotations

from a2a.types import a2a_pb2 as pb
from django.conf import settings
from django.utils import timezone

from a2ahub import schedule
from a2ahub.outbound import origin_of
from push import engine, jobs
from push.configs import DEFAULT_ID
from push.models import Delivery, DeliveryState, PushNotificationConfig
from tasks import hooks
from tasks.hooks import OfEvent, OfSource, PerEvent, Replace, Row
from tasks.models import Task

# A config given again under its id replaces these of its fields (the rest is push's own).
REPLACED = (
    "url", "origin", "token", "auth_scheme", "auth_credentials", "protocol_version", "active",
    "disabled_reason", "updated_at",
)  # fmt: skip


def register() -> None:
    if planned_rows in hooks.planned_rows:
        return  # already registered
    hooks.planned_rows.append(planned_rows)
    # After the commit of a followed task's change: its deliveries' engines claim them.
    hooks.committed.append(engine.wake)
    # Wakes the engines for due queues no one holds (a lost wake-up, a dead process's lease).
    schedule.register(jobs.sweep_due_deliveries, lambda: settings.TASK_HEARTBEAT_SECONDS)


def planned_rows(task: Task, config: pb.TaskPushNotificationConfig | None) -> list[Row]:
    """The config given (its id "default" when the client named none, as
    `configs.create_config` names a task's first) and a pending delivery, due now, of each
    new event for each of the task's active configs."""
    now = timezone.now()
    rows: list[Row] = []
    if config is not None:
        row = PushNotificationConfig(
            task_id=task.id, config_id=config.id or DEFAULT_ID, url=config.url,
            origin=origin_of(config.url),
            token=config.token, auth_scheme=config.authentication.scheme,
            auth_credentials=config.authentication.credentials,
            protocol_version=task.protocol_version, active=True, created_at=now, updated_at=now,
        )  # fmt: skip
        rows.append(Replace(row, ("task", "config_id"), REPLACED))
    delivery = {
        "config": OfSource("id"), "event": OfEvent("id"), "sequence": OfEvent("sequence"),
        "state": DeliveryState.PENDING, "next_attempt_at": now, "created_at": now,
    }  # fmt: skip
    where = {"task": task.id, "active": True}
    rows.append(PerEvent(Delivery, delivery, PushNotificationConfig, where))
    return rows
