"""App configuration for `push`: it takes part in the task writer's work through its hooks,
prunes its finished deliveries as a periodic job, and counts its queues for `/metrics`."""

from __future__ import annotations

from django.apps import AppConfig


class PushConfig(AppConfig):
    name = "push"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from a2ahub import metrics, schedule
        from push import gauges, jobs, outbox
        from tasks.retention import PRUNE_EVERY_SECONDS

        outbox.register()
        # Deletes delivered and abandoned deliveries past PUSH_DELIVERY_RETENTION_DAYS.
        schedule.register(jobs.prune_finished_deliveries, lambda: PRUNE_EVERY_SECONDS)
        metrics.register("push", gauges.deliveries)
