"""Which delivery queues a process works: a config's queue is held under a lease
(`PushNotificationConfig.lease_until`), so one process at a time sends its deliveries, one after
another. A delivery engine claims many due queues at once, with their first deliveries,
renews its leases together and releases them together.

A queue is due when its first pending delivery is (a retry waits for its time, and everything
after it waits too). On PostgreSQL the claim is one statement (`UPDATE ... FROM (SELECT ... FOR
UPDATE SKIP LOCKED) RETURNING`, joined to the configs' tasks and first deliveries), so engines
in several processes never wait on each other, and a wake-up is one round trip from the first
webhook; elsewhere (SQLite, embedded: one process) a read and a conditional update in one
transaction, then the configs and deliveries in two queries.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, OuterRef, Q, Subquery, TextField, Window
from django.db.models.functions import Cast, RowNumber
from django.utils import timezone

from push.models import Delivery, DeliveryState, PushNotificationConfig
from tasks.columns import column, table
from tasks.models import Task, TaskEvent

# Deliveries of one queue loaded per claim: a long queue is released after them and claimed
# again, so queues with a backlog take turns with the others.
WINDOW = 50
# Due deliveries looked at per queue wanted: several of them may belong to one queue.
SCAN_FACTOR = 4


@dataclass(frozen=True)
class Target:
    """A config as its deliveries need it."""

    id: int
    url: str
    token: str
    auth_scheme: str
    auth_credentials: str
    protocol_version: str
    task_id: str
    client_id: str
    config_id: str = ""  # the id the client named the config by
    traceparent: str = ""  # of the call that made the task: its deliveries join that trace


@dataclass
class Item:
    """A pending delivery as its queue holds it; `payload` is the event's JSON text."""

    id: uuid.UUID
    config_id: int
    sequence: int
    attempts: int
    next_attempt_at: datetime
    created_at: datetime
    test: bool
    payload: str


@dataclass
class Claimed:
    """A queue just claimed: its config, its first deliveries, and whether the lease it took
    over had run out (a process died holding it, maybe with a delivery in flight)."""

    target: Target
    items: list[Item]
    lapsed: bool


def lease_end(now: datetime) -> datetime:
    return now + timedelta(seconds=settings.PUSH_LEASE_SECONDS)


def claim(limit: int) -> list[Claimed]:
    """Claim up to `limit` due queues no one holds; their configs and first deliveries."""
    now = timezone.now()
    if connection.vendor == "postgresql":
        return claim_on_postgresql(now, limit)
    return load(claim_portably(now, limit))


def config_col(name: str) -> str:
    return column(PushNotificationConfig, name)


def delivery_col(name: str) -> str:
    return column(Delivery, name)


def pending_rows_sql(alias: str) -> str:
    """The columns of `Item` for deliveries `alias` joined to their event `e`: the event as
    the text the database keeps (a 1.0 body with no decoding and encoding)."""
    return (
        ", ".join(f"{alias}.{delivery_col(n)}" for n in ITEM_FIELDS[:-1])
        + f", e.{column(TaskEvent, 'payload')}::text"
    )


@cache
def claim_sql() -> str:
    """The claim, the configs claimed and the first WINDOW pending deliveries of each, in one
    statement: a config with none comes back once, its delivery columns NULL."""
    config, delivery, event = table(PushNotificationConfig), table(Delivery), table(TaskEvent)
    lease = config_col("lease_until")
    free = f"c.{config_col('active')} AND (c.{lease} IS NULL OR c.{lease} < %(now)s)"
    target = ("url", "token", "auth_scheme", "auth_credentials", "protocol_version", "task",
              "config_id")  # fmt: skip
    return f"""
    WITH due AS (
        SELECT d.{delivery_col("config")} AS config FROM {delivery} d
          JOIN {config} c ON c.{config_col("id")} = d.{delivery_col("config")}
         WHERE d.{delivery_col("state")} = %(pending)s
           AND d.{delivery_col("next_attempt_at")} <= %(now)s AND {free}
         ORDER BY d.{delivery_col("next_attempt_at")}
         LIMIT %(scan)s
    ), free AS (
        SELECT c.{config_col("id")} AS id, c.{lease} AS held_until FROM {config} c
         WHERE c.{config_col("id")} IN (SELECT config FROM due) AND {free}
           AND (SELECT h.{delivery_col("next_attempt_at")} FROM {delivery} h
                 WHERE h.{delivery_col("config")} = c.{config_col("id")}
                   AND h.{delivery_col("state")} = %(pending)s
                 ORDER BY h.{delivery_col("sequence")}, h.{delivery_col("created_at")}
                 LIMIT 1) <= %(now)s
         LIMIT %(limit)s
           FOR UPDATE OF c SKIP LOCKED
    ), claimed AS (
        UPDATE {config} c SET {lease} = %(until)s FROM free
         WHERE c.{config_col("id")} = free.id
        RETURNING c.{config_col("id")} AS id, free.held_until IS NOT NULL AS lapsed,
                  {", ".join(f"c.{config_col(n)}" for n in target)}
    )
    SELECT k.*, t.{column(Task, "client_id")}, t.{column(Task, "traceparent")}, w.*
      FROM claimed k
      JOIN {table(Task)} t ON t.{column(Task, "id")} = k.{config_col("task")}
      LEFT JOIN LATERAL (
        SELECT {pending_rows_sql("p")} FROM {delivery} p
          JOIN {event} e ON e.{column(TaskEvent, "id")} = p.{delivery_col("event")}
         WHERE p.{delivery_col("config")} = k.id AND p.{delivery_col("state")} = %(pending)s
         ORDER BY p.{delivery_col("sequence")}, p.{delivery_col("created_at")} LIMIT %(window)s
      ) w ON true
    """


def claim_on_postgresql(now: datetime, limit: int) -> list[Claimed]:
    params: dict[str, Any] = {"now": now, "until": lease_end(now), "scan": limit * SCAN_FACTOR,
                              "limit": limit, "window": WINDOW,
                              "pending": DeliveryState.PENDING}  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(claim_sql(), params)
        rows = cursor.fetchall()
    queues: dict[int, Claimed] = {}
    for pk, lapsed, url, token, scheme, secret, version, task_id, *rest in rows:
        name, client_id, trace, *item = rest
        queue = queues.get(pk)
        if queue is None:
            target = Target(pk, url, token, scheme, secret, version, str(task_id), client_id, name,
                            trace)  # fmt: skip
            queue = queues[pk] = Claimed(target, [], bool(lapsed))
        if item[0] is not None:
            queue.items.append(Item(*item))
    for queue in queues.values():  # the lateral join's order is not the result's
        queue.items.sort(key=lambda i: (i.sequence, i.created_at))
    return list(queues.values())


def claim_portably(now: datetime, limit: int) -> dict[int, bool]:
    free = Q(lease_until__isnull=True) | Q(lease_until__lt=now)
    head = (
        Delivery.objects.filter(config_id=OuterRef("pk"), state=DeliveryState.PENDING)
        .order_by("sequence", "created_at")
        .values("next_attempt_at")[:1]
    )
    with transaction.atomic():
        due = (
            Delivery.objects.filter(state=DeliveryState.PENDING, next_attempt_at__lte=now)
            .filter(config__active=True)
            .order_by("next_attempt_at")
            .values_list("config_id", flat=True)[: limit * SCAN_FACTOR]
        )
        rows = list(
            PushNotificationConfig.objects.filter(pk__in=set(due), active=True)
            .filter(free)
            .annotate(head_at=Subquery(head))
            .filter(head_at__lte=now)
            .values_list("pk", "lease_until")[:limit]
        )
        leases = {pk: held is not None for pk, held in rows}
        PushNotificationConfig.objects.filter(pk__in=leases).update(lease_until=lease_end(now))
    return leases


def load(leases: dict[int, bool]) -> list[Claimed]:
    """The configs of the queues claimed (elsewhere than on PostgreSQL) and the first WINDOW
    pending deliveries of each, in two queries whatever their number."""
    if not leases:
        return []
    rows = PushNotificationConfig.objects.filter(pk__in=leases).values_list(
        "pk",
        "url",
        "token",
        "auth_scheme",
        "auth_credentials",
        "protocol_version",
        "task_id",
        "task__client_id",
        "config_id",
        "task__traceparent",
    )
    targets = {
        pk: Target(pk, url, token, scheme, credentials, version, str(task_id), *rest)
        for pk, url, token, scheme, credentials, version, task_id, *rest in rows
    }
    items: dict[int, list[Item]] = {pk: [] for pk in targets}
    for row in first_deliveries(list(targets)):
        items[row[1]].append(Item(*row))
    return [Claimed(targets[pk], items[pk], leases[pk]) for pk in targets]


# Item's fields in order; `body` is the event's payload as text.
ITEM_FIELDS = ("id", "config_id", "sequence", "attempts", "next_attempt_at", "created_at", "test",
               "body")  # fmt: skip


def first_deliveries(config_ids: list[int]) -> list[tuple]:
    rank = Window(
        RowNumber(), partition_by=[F("config_id")], order_by=[F("sequence"), F("created_at")]
    )
    return list(
        Delivery.objects.filter(config_id__in=config_ids, state=DeliveryState.PENDING)
        # The event as the text the database keeps: a 1.0 body with no decoding and encoding.
        .annotate(rank=rank, body=Cast("event__payload", output_field=TextField()))
        .filter(rank__lte=WINDOW)
        .order_by("config_id", "sequence", "created_at")
        .values_list(*ITEM_FIELDS)
    )


def more(config_id: int, handled: list[uuid.UUID]) -> list[Item]:
    """The deliveries of a queue still held that came after its window was loaded (events
    committed while it was sent): those pending, but for the ones already sent."""
    limit = max(WINDOW - len(handled), 0)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(more_sql(), {"config": config_id, "pending": DeliveryState.PENDING,
                                        "handled": handled, "limit": limit})  # fmt: skip
            return [Item(*row) for row in cursor.fetchall()]
    body = Cast("event__payload", output_field=TextField())
    rows = (
        Delivery.objects.filter(config_id=config_id, state=DeliveryState.PENDING)
        .filter(config__active=True)
        .exclude(pk__in=handled)
        .order_by("sequence", "created_at")
        .annotate(body=body)
        .values_list(*ITEM_FIELDS)[:limit]
    )
    return [Item(*row) for row in rows]


@cache
def more_sql() -> str:
    """`more` as one statement of fixed text (the ORM took longer to compile it than
    PostgreSQL to answer it)."""
    return f"""
    SELECT {pending_rows_sql("p")} FROM {table(Delivery)} p
      JOIN {table(PushNotificationConfig)} c ON c.{config_col("id")} = p.{delivery_col("config")}
      JOIN {table(TaskEvent)} e ON e.{column(TaskEvent, "id")} = p.{delivery_col("event")}
     WHERE p.{delivery_col("config")} = %(config)s AND p.{delivery_col("state")} = %(pending)s
       AND c.{config_col("active")}
       AND NOT (p.{delivery_col("id")} = ANY(%(handled)s))
     ORDER BY p.{delivery_col("sequence")}, p.{delivery_col("created_at")} LIMIT %(limit)s
    """


def renew(config_ids: list[int]) -> None:
    """Hold these queues for another PUSH_LEASE_SECONDS; one released meanwhile (its batch
    written just before) stays released."""
    PushNotificationConfig.objects.filter(pk__in=config_ids, lease_until__isnull=False).update(
        lease_until=lease_end(timezone.now())
    )
