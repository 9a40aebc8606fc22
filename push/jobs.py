"""Celery jobs for push delivery, and the delivery engine's place in a worker process.

Deliveries are sent by the engine each worker process runs (`push.engine`), woken after the
commit of a change that made deliveries. The periodic sweep is its safety net: it wakes the
engines when a due queue is held by no one (a wake-up lost while Redis was away, a lease that
ran out with the process that held it).
"""

from __future__ import annotations

from celery import shared_task
from celery.signals import worker_ready, worker_shutdown
from django.db.models import Q
from django.utils import timezone

from push import engine, retention
from push.models import Delivery, DeliveryState

SWEEP_LIMIT = 500


@shared_task(name="push.sweep_due_deliveries", ignore_result=True)
def sweep_due_deliveries() -> int:
    """Wake the engines if due queues wait with no one holding them; how many (up to
    SWEEP_LIMIT)."""
    now = timezone.now()
    due = list(
        Delivery.objects.filter(state=DeliveryState.PENDING, next_attempt_at__lte=now)
        .filter(config__active=True)
        .filter(Q(config__lease_until__isnull=True) | Q(config__lease_until__lt=now))
        .order_by()  # distinct configs, not distinct (config, sequence, ...) of Meta.ordering
        .values_list("config_id", flat=True)
        .distinct()[:SWEEP_LIMIT]
    )
    if due:
        engine.wake()
    return len(due)


@shared_task(name="push.prune_finished_deliveries", ignore_result=True)
def prune_finished_deliveries() -> int:
    """Delete delivered and abandoned deliveries older than PUSH_DELIVERY_RETENTION_DAYS."""
    return sum(retention.prune_deliveries())


@worker_ready.connect
def start_delivery_engine(**_: object) -> None:
    # Every worker process sends deliveries, woken over Redis.
    engine.start()


@worker_shutdown.connect
def stop_delivery_engine(**_: object) -> None:
    engine.stop()
