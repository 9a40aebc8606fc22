"""Retention of deliveries: delivered and abandoned ones (with their attempts) are deleted
once `PUSH_DELIVERY_RETENTION_DAYS` have passed since they were last due, in short batches.
Pending deliveries are never pruned here; a task's deliveries also go with the task when
`tasks.retention` prunes it (their foreign keys cascade), so push needs no turn before it."""

from __future__ import annotations

from django.conf import settings
from django.db.models import QuerySet

from push.models import Delivery, DeliveryState
from tasks.retention import (
    MAX_BATCHES,
    count_capped,
    cutoff,
    pending_text,
    prune_in_batches,
)

FINISHED_STATES = (DeliveryState.DELIVERED, DeliveryState.ABANDONED)


def prunable_deliveries(state: str, days: int) -> QuerySet[Delivery]:
    """Deliveries in `state` last due more than `days` days ago, oldest first: one range of
    the index `delivery_due` (state, next_attempt_at), which also gives the order."""
    return Delivery.objects.filter(state=state, next_attempt_at__lt=cutoff(days)).order_by(
        "next_attempt_at"
    )


def prune_deliveries(batch_size: int | None = None, max_batches: int = MAX_BATCHES) -> list[int]:
    """One run of delivery retention, both states sharing the run's batches; nothing when off."""
    days = settings.PUSH_DELIVERY_RETENTION_DAYS
    if not days:
        return []
    size = batch_size or settings.RETENTION_BATCH_SIZE
    done: list[int] = []
    for state in FINISHED_STATES:
        done += prune_in_batches(prunable_deliveries(state, days), size, max_batches - len(done))
    return done


def deliveries_pending_text() -> str:
    days = settings.PUSH_DELIVERY_RETENTION_DAYS
    if not days:
        return "Finished deliveries are kept forever (PUSH_DELIVERY_RETENTION_DAYS is 0)."
    count = sum(count_capped(prunable_deliveries(state, days)) for state in FINISHED_STATES)
    what = ("delivered or abandoned delivery", "delivered or abandoned deliveries")
    return pending_text(count, what, days)
