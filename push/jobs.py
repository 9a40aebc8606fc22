"""Celery jobs for push delivery. One job works one config's queue in event order: it leases
the config with a conditional UPDATE (so two workers never deliver to it at once), sends the
due deliveries oldest first, and stops at the first failure, scheduling itself for the retry.
Jobs take ids, reload rows, and are safe to run twice: delivery is at least once."""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections
from django.db.models import Q
from django.utils import timezone

from a2ahub.worker import submit, submit_or_retry
from push import delivery as sending
from push import retention
from push.models import Delivery, DeliveryState, PushNotificationConfig

BATCH = 200


def claim(config_pk: int) -> bool:
    now = timezone.now()
    claimed = (
        PushNotificationConfig.objects.filter(pk=config_pk)
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .update(lease_until=now + timedelta(seconds=settings.PUSH_LEASE_SECONDS))
    )
    return bool(claimed)


def renew(config_pk: int) -> None:
    PushNotificationConfig.objects.filter(pk=config_pk).update(
        lease_until=timezone.now() + timedelta(seconds=settings.PUSH_LEASE_SECONDS)
    )


def release(config_pk: int) -> None:
    PushNotificationConfig.objects.filter(pk=config_pk).update(lease_until=None)


@shared_task(name="push.deliver_config", ignore_result=True)
def deliver_config(config_pk: int) -> None:
    close_old_connections()
    if not claim(config_pk):
        return  # another worker is delivering this config's queue right now
    try:
        work_queue(config_pk)
    finally:
        release(config_pk)
        close_old_connections()


def work_queue(config_pk: int) -> None:
    for _ in range(BATCH):
        item = (
            Delivery.objects.select_related("config", "config__task", "event")
            .filter(config_id=config_pk, state=DeliveryState.PENDING)
            .order_by("sequence", "created_at")
            .first()
        )
        if item is None or not item.config.active:
            return
        wait = (item.next_attempt_at - timezone.now()).total_seconds()
        if wait > 0:
            submit(deliver_config, config_pk, countdown=wait)
            return
        renew(config_pk)  # a long queue must not outlive its lease and meet a second worker
        if not attempt(item):
            return
    submit(deliver_config, config_pk)  # more than one batch: let other queues have a turn


def attempt(item: Delivery) -> bool:
    """Send one delivery; True when the queue may go on to the next one."""
    Delivery.objects.filter(pk=item.pk).update(attempts=item.attempts + 1)
    item.attempts += 1
    result = sending.send(item)
    if result.kind == sending.DELIVERED:
        Delivery.objects.filter(pk=item.pk).update(
            state=DeliveryState.DELIVERED, delivered_at=timezone.now(), last_error=""
        )
        return True
    if result.kind == sending.GONE:
        disable(item.config, "the receiver answered 410 Gone")
        return False
    retry_at = None if item.test else sending.next_attempt(item, result)
    if retry_at is None:
        Delivery.objects.filter(pk=item.pk).update(
            state=DeliveryState.ABANDONED, last_error=result.error
        )
        return True  # later events still deserve their own tries
    Delivery.objects.filter(pk=item.pk).update(next_attempt_at=retry_at, last_error=result.error)
    PushNotificationConfig.objects.filter(pk=item.config_id).update(last_error=result.error)
    submit(deliver_config, item.config_id, countdown=(retry_at - timezone.now()).total_seconds())
    return False


def disable(config: PushNotificationConfig, reason: str) -> None:
    PushNotificationConfig.objects.filter(pk=config.pk).update(
        active=False, disabled_reason=reason, last_error=reason
    )
    config.deliveries.filter(state=DeliveryState.PENDING).update(
        state=DeliveryState.ABANDONED, last_error=reason
    )


def kick_task(task_id: str) -> None:
    """After a commit: start the queues of the task's configs that have something to send."""
    pending = Delivery.objects.filter(config__task_id=task_id, state=DeliveryState.PENDING)
    for config_pk in pending.values_list("config_id", flat=True).distinct():
        # The events are stored: a broker that is away must not fail the change's request.
        submit_or_retry(deliver_config, config_pk)


def sweep_due() -> int:
    """Restart queues whose job was lost (a worker died, a kick never ran)."""
    now = timezone.now()
    due = (
        Delivery.objects.filter(state=DeliveryState.PENDING, next_attempt_at__lte=now)
        .filter(Q(config__lease_until__isnull=True) | Q(config__lease_until__lt=now))
        .values_list("config_id", flat=True)
        .distinct()[:500]
    )
    configs = list(due)
    for config_pk in configs:
        submit(deliver_config, config_pk)
    return len(configs)


@shared_task(name="push.sweep_due_deliveries", ignore_result=True)
def sweep_due_deliveries() -> int:
    return sweep_due()


@shared_task(name="push.prune_finished_deliveries", ignore_result=True)
def prune_finished_deliveries() -> int:
    """Delete delivered and abandoned deliveries older than PUSH_DELIVERY_RETENTION_DAYS."""
    return sum(retention.prune_deliveries())
