"""What became of delivery attempts, written in batches: every attempt a row, and each kind of
outcome one statement for the whole batch (delivered, abandoned, retried later, a 410 that
turns its config off, an attempt lost with a process), with the queues to release, in one
transaction. A queue's next delivery may be sent before the outcome of the previous one is
written; the batch and the release of its queue commit together, so after a crash the first
delivery not recorded as delivered is sent again (with the same webhook-id) by whoever
claims the queue next: at least once, in order.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import Case, DateTimeField, F, TextField, Value, When
from django.db.models.functions import Greatest

from push.models import Delivery, DeliveryAttempt, DeliveryState, PushNotificationConfig

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
        existing = set(
            Delivery.objects.filter(pk__in={o.delivery_id for o in outcomes}).values_list(
                "pk", flat=True
            )
        )
        logger.info("some deliveries were deleted while they were sent; recording the others")
        write([o for o in outcomes if o.delivery_id in existing], releases)


def write(outcomes: Sequence[Outcome], releases: list[int]) -> None:
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


def delivered(outcomes: Sequence[Outcome]) -> None:
    if outcomes:
        Delivery.objects.filter(pk__in=ids(outcomes)).update(
            state=DeliveryState.DELIVERED, delivered_at=max(o.started_at for o in outcomes),
            last_error="", attempts=F("attempts") + 1,
        )  # fmt: skip


def abandoned(outcomes: Sequence[Outcome]) -> None:
    """Given up on (past the retry horizon, or a test delivery that failed); the queue goes on."""
    by_error: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        by_error[outcome.error].append(outcome)
    for error, group in by_error.items():
        Delivery.objects.filter(pk__in=ids(group)).update(
            state=DeliveryState.ABANDONED, last_error=error, attempts=F("attempts") + 1
        )


def retried(outcomes: Sequence[Outcome]) -> None:
    """Each failed delivery waits for its retry, and the rest of its queue with it (a queue is
    due when its first delivery is: nothing behind it is claimed before)."""
    if not outcomes:
        return
    retry_at = Case(*(When(pk=o.delivery_id, then=Value(o.retry_at)) for o in outcomes),
                    output_field=DateTimeField())  # fmt: skip
    errors = Case(*(When(pk=o.delivery_id, then=Value(o.error)) for o in outcomes),
                  output_field=TextField())  # fmt: skip
    Delivery.objects.filter(pk__in=ids(outcomes)).update(
        next_attempt_at=retry_at, last_error=errors, attempts=F("attempts") + 1
    )
    queue_at = Case(*(When(config_id=o.config_id, then=Value(o.retry_at)) for o in outcomes),
                    output_field=DateTimeField())  # fmt: skip
    Delivery.objects.filter(
        config_id__in={o.config_id for o in outcomes}, state=DeliveryState.PENDING
    ).exclude(pk__in=ids(outcomes)).update(next_attempt_at=Greatest(F("next_attempt_at"), queue_at))
    config_errors = Case(*(When(pk=o.config_id, then=Value(o.error)) for o in outcomes),
                         output_field=TextField())  # fmt: skip
    PushNotificationConfig.objects.filter(pk__in={o.config_id for o in outcomes}).update(
        last_error=config_errors
    )


def gone(outcomes: Sequence[Outcome]) -> None:
    """A 410 turns the config off and gives up its pending deliveries."""
    if not outcomes:
        return
    configs = {o.config_id for o in outcomes}
    Delivery.objects.filter(pk__in=ids(outcomes)).update(attempts=F("attempts") + 1)
    disable(configs, GONE_REASON)


def disable(config_ids: Iterable[int], reason: str) -> None:
    config_ids = list(config_ids)
    PushNotificationConfig.objects.filter(pk__in=config_ids).update(
        active=False, disabled_reason=reason, last_error=reason
    )
    Delivery.objects.filter(config_id__in=config_ids, state=DeliveryState.PENDING).update(
        state=DeliveryState.ABANDONED, last_error=reason
    )
