"""A new task's push config and its deliveries, written in the task's own statement.

A send that opens a task with a webhook is, through the ORM, a transaction of a dozen round
trips (the task, the config, the messages, the events, the deliveries); from the event loop on
PostgreSQL the task's rows are one statement (`tasks.sql`), and these parts join it: the config
inserted, then a delivery of each event the statement inserted, so the task, its events and
their deliveries commit together or not at all, as in the ORM's transaction.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from a2a.types import a2a_pb2 as pb
from django.utils import timezone

from push.configs import DEFAULT_ID
from push.models import Delivery, DeliveryState, PushNotificationConfig
from tasks import sql
from tasks.columns import column, columns, table
from tasks.models import Task

NEW_CONFIG = "new_push_config"


def opening_parts(task: Task, config: pb.TaskPushNotificationConfig) -> tuple[str, list[Any]]:
    """The config (its id "default" when the client named none, as `configs.create_config`
    names a task's first) and one pending delivery per new event, due now."""
    now = timezone.now()
    row = PushNotificationConfig(
        task=task, config_id=config.id or DEFAULT_ID, url=config.url, token=config.token,
        auth_scheme=config.authentication.scheme,
        auth_credentials=config.authentication.credentials,
        protocol_version=task.protocol_version, active=True, created_at=now, updated_at=now,
    )  # fmt: skip
    return parts_sql(), [*sql.row_params([row]), DeliveryState.PENDING, now, now]


# Each column of a delivery made here, as SQL over the new config `k` and new event `e`.
DELIVERY_VALUES = {
    "id": "gen_random_uuid()",
    "config": "k.id",
    "event": "e.id",
    "sequence": "e.sequence",
    "state": "%s::text",
    "attempts": "0",
    "next_attempt_at": "%s::timestamptz",
    "delivered_at": "NULL",
    "last_error": "''",
    "test": "false",
    "created_at": "%s::timestamptz",
}


@cache
def parts_sql() -> str:
    fields = tuple(f.name for f in Delivery._meta.concrete_fields)
    # A field added to Delivery must be given a value here: fail at the first send, loudly.
    assert set(fields) == set(DELIVERY_VALUES), "push.opening does not know every Delivery field"
    config = sql.insert_sql(PushNotificationConfig, 1)
    config_id = column(PushNotificationConfig, "id")
    return (
        f"{NEW_CONFIG} AS ({config} RETURNING {config_id} AS id),"
        f" new_push_deliveries AS (INSERT INTO {table(Delivery)} ({columns(Delivery, fields)})"
        f" SELECT {', '.join(DELIVERY_VALUES[name] for name in fields)}"
        f" FROM {NEW_CONFIG} k CROSS JOIN {sql.NEW_EVENTS} e)"
    )
