"""Deliveries: one row per event and active config, written with the event itself."""

from __future__ import annotations

from collections.abc import Sequence

from django.utils import timezone

from push.models import Delivery, PushNotificationConfig
from tasks.models import Task, TaskEvent


def create_deliveries(task: Task, events: Sequence[TaskEvent]) -> int:
    configs = list(PushNotificationConfig.objects.filter(task=task, active=True).only("id"))
    if not configs or not events:
        return 0
    now = timezone.now()
    rows = [
        Delivery(config=config, event=event, sequence=event.sequence, next_attempt_at=now)
        for config in configs
        for event in events
    ]
    Delivery.objects.bulk_create(rows)
    return len(rows)
