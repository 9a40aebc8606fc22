"""What became of delivery attempts, written in batches: every attempt a row, and each kind of
outcome one statement for the whole batch (delivered, abandoned, retried later, a 410 that
turns its config off, an attempt lost with a process), with the queues to release, in one
transaction. On PostgreSQL a batch of successes (and lost attempts), nearly every batch, is
one statement instead: the transaction's five round trips, and the ORM building a model
instance per attempt, were over a quarter of an engine's CPU (bench/push.py --send-ratio).

A queue's next delivery may be sent before the outcome of the previous one is written; the
batch and the release of its queue commit together, so after a crash the first delivery not
recorded as delivered is sent again (with the same webhook-id) by whoever claims the queue
next: at least once, in order.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Case, DateTimeField, F, Field, TextField, Value, When
from django.db.models.functions import Greatest

from push.models import Delivery, DeliveryAttempt, DeliveryState, PushNotificationConfig
from tasks.columns import column, table

logger = logging.getLogger(__name__)

DELIVERED, RETRY, ABANDONED, GONE, LOST = "delivered", "retry", "abandoned", "gone", "lost"
LOST_ERROR = (
    "no outcome was recorded: the process sending it stopped (its lease on the queue ran out), "
    "so it is sent again"
)
GONE_REASON = "the receiver answered 410 Gone"


@dataclass
class Outcome:
    """One attempt of one delivery, and what to do about it."""

    delivery_id: uuid.UUID
    config_id: int
    kind: str
    started_at: datetime
    duration_ms: int = 0
    status: int | None = None
    error: str = ""
    excerpt: str = ""
    retry_at: datetime | None = None


def record(outcomes: Sequence[Outcome], releases: Iterable[int]) -> None:
    """Write a batch and release its queues, all or nothing. A delivery deleted meanwhile (its
    config or task was) loses its attempt rows, not the rest of the batch."""
    releases = list(releases)
    try:
        write(outcomes, releases)
    except IntegrityError:
        existing = set(Delivery.objects.filter(pk__in=ids(outcomes)).values_list("pk", flat=True))
        logger.info("some deliveries were deleted while they were sent; recording the others")
        write([o for o in outcomes if o.delivery_id in existing], releases)


def write(outcomes: Sequence[Outcome], releases: list[int]) -> None:
    if connection.vendor == "postgresql" and all(o.kind in (DELIVERED, LOST) for o in outcomes):
        write_successes(outcomes, releases)
        return
    by_kind: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        by_kind[outcome.kind].append(outcome)
    with transaction.atomic():
        DeliveryAttempt.objects.bulk_create([attempt_row(o) for o in outcomes])
        lost(by_kind[LOST])
        delivered(by_kind[DELIVERED])
        abandoned(by_kind[ABANDONED])
        retried(by_kind[RETRY])
        gone(by_kind[GONE])
        if releases:
            PushNotificationConfig.objects.filter(pk__in=releases).update(lease_until=None)


def write_successes(outcomes: Sequence[Outcome], releases: list[int]) -> None:
    """`write` of deliveries delivered (or attempts lost) in one statement (PostgreSQL)."""
    tries: dict[uuid.UUID, int] = defaultdict(int)  # a lost attempt and its resend: two
    delivered_at: dict[uuid.UUID, datetime] = {}
    for o in outcomes:
        tries[o.delivery_id] += 1
        if o.kind == DELIVERED:
            delivered_at[o.delivery_id] = max(
                o.started_at, delivered_at.get(o.delivery_id, o.started_at)
            )
    params: list[Any] = [
        [o.delivery_id for o in outcomes], [o.started_at for o in outcomes],
        [o.duration_ms for o in outcomes], [o.status for o in outcomes],
        [o.error for o in outcomes], [o.excerpt for o in outcomes],
        DeliveryState.DELIVERED.value, list(tries), list(tries.values()),
        [delivered_at.get(i) for i in tries], releases,
    ]  # fmt: skip
    # Inside a transaction (a test's), in a savepoint: a refused batch leaves it usable.
    savepoint = transaction.atomic() if connection.in_atomic_block else contextlib.nullcontext()
    with savepoint, connection.cursor() as cursor:
        cursor.execute(successes_sql(), params)


@cache
def successes_sql() -> str:
    attempt, delivery, config = DeliveryAttempt, Delivery, PushNotificationConfig
    inserted = ("delivery", "started_at", "duration_ms", "status_code", "error",
                "response_excerpt")  # fmt: skip
    d = {n: column(delivery, n) for n in ("id", "state", "attempts", "delivered_at", "last_error")}
    return f"""
    WITH attempts AS (
        INSERT INTO {table(attempt)} ({", ".join(column(attempt, n) for n in inserted)})
        SELECT * FROM unnest(%s::uuid[], %s::timestamptz[], %s::integer[], %s::integer[],
                             %s::text[], %s::text[])
    ), sent AS (
        UPDATE {table(delivery)} d
           SET {d["attempts"]} = d.{d["attempts"]} + v.tries,
               {d["state"]} = CASE WHEN v.at IS NULL THEN d.{d["state"]} ELSE %s END,
               {d["delivered_at"]} = COALESCE(v.at, d.{d["delivered_at"]}),
               {d["last_error"]} = CASE WHEN v.at IS NULL THEN d.{d["last_error"]} ELSE '' END
          FROM unnest(%s::uuid[], %s::integer[], %s::timestamptz[]) AS v(id, tries, at)
         WHERE d.{d["id"]} = v.id
    )
    UPDATE {table(config)} SET {column(config, "lease_until")} = NULL
     WHERE {column(config, "id")} = ANY(%s::bigint[])
    """


def attempt_row(outcome: Outcome) -> DeliveryAttempt:
    return DeliveryAttempt(
        delivery_id=outcome.delivery_id, started_at=outcome.started_at,
        duration_ms=outcome.duration_ms, status_code=outcome.status, error=outcome.error,
        response_excerpt=outcome.excerpt,
    )  # fmt: skip


def ids(outcomes: Sequence[Outcome]) -> list[uuid.UUID]:
    return [o.delivery_id for o in outcomes]


def lost(outcomes: Sequence[Outcome]) -> None:
    if outcomes:
        Delivery.objects.filter(pk__in=ids(outcomes)).update(attempts=F("attempts") + 1)


def per_row(key: str, values: Iterable[tuple[Any, Any]], output_field: Field) -> Case:
    """One value for each row, by the row's `key` (one UPDATE sets a different one in each)."""
    whens = (When(**{key: row}, then=Value(value)) for row, value in values)
    return Case(*whens, output_field=output_field)


def delivered(outcomes: Sequence[Outcome]) -> None:
    if outcomes:
        at = per_row("pk", ((o.delivery_id, o.started_at) for o in outcomes), DateTimeField())
        Delivery.objects.filter(pk__in=ids(outcomes)).update(
            state=DeliveryState.DELIVERED, delivered_at=at, last_error="",
            attempts=F("attempts") + 1,
        )  # fmt: skip


def abandoned(outcomes: Sequence[Outcome]) -> None:
    """Given up on (past the retry horizon, or a test delivery that failed); the queue goes on."""
    if outcomes:
        errors = per_row("pk", ((o.delivery_id, o.error) for o in outcomes), TextField())
        Delivery.objects.filter(pk__in=ids(outcomes)).update(
            state=DeliveryState.ABANDONED, last_error=errors, attempts=F("attempts") + 1
        )


def retried(outcomes: Sequence[Outcome]) -> None:
    """Each failed delivery waits for its retry, and the rest of its queue with it (a queue is
    due when its first delivery is: nothing behind it is claimed before)."""
    if not outcomes:
        return
    retry_at = per_row("pk", ((o.delivery_id, o.retry_at) for o in outcomes), DateTimeField())
    errors = per_row("pk", ((o.delivery_id, o.error) for o in outcomes), TextField())
    Delivery.objects.filter(pk__in=ids(outcomes)).update(
        next_attempt_at=retry_at, last_error=errors, attempts=F("attempts") + 1
    )
    queue_at = per_row("config_id", ((o.config_id, o.retry_at) for o in outcomes), DateTimeField())
    Delivery.objects.filter(
        config_id__in={o.config_id for o in outcomes}, state=DeliveryState.PENDING
    ).exclude(pk__in=ids(outcomes)).update(next_attempt_at=Greatest(F("next_attempt_at"), queue_at))
    config_errors = per_row("pk", ((o.config_id, o.error) for o in outcomes), TextField())
    PushNotificationConfig.objects.filter(pk__in={o.config_id for o in outcomes}).update(
        last_error=config_errors
    )


def gone(outcomes: Sequence[Outcome]) -> None:
    """A 410 turns the config off and gives up its pending deliveries."""
    if not outcomes:
        return
    Delivery.objects.filter(pk__in=ids(outcomes)).update(attempts=F("attempts") + 1)
    disable({o.config_id for o in outcomes}, GONE_REASON)


def disable(config_ids: Iterable[int], reason: str) -> None:
    config_ids = list(config_ids)
    PushNotificationConfig.objects.filter(pk__in=config_ids).update(
        active=False, disabled_reason=reason, last_error=reason
    )
    Delivery.objects.filter(config_id__in=config_ids, state=DeliveryState.PENDING).update(
        state=DeliveryState.ABANDONED, last_error=reason
    )
