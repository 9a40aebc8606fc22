"""App configuration for `tasks`."""

from __future__ import annotations

from django.apps import AppConfig


class TasksConfig(AppConfig):
    name = "tasks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings

        from a2ahub import metrics, schedule
        from tasks import checks, gauges, jobs, retention

        # The raw SQL of the hot paths must still fit the models, or start-up fails.
        checks.register()

        # Fails open tasks whose runner died, and queues again turns lost with a worker; run by
        # beat itself, since the workers' threads may all be held by long turns.
        schedule.register(
            jobs.recover_stale_tasks, lambda: settings.TASK_HEARTBEAT_SECONDS, in_beat=True
        )
        # Deletes finished tasks past TASK_RETENTION_DAYS (nothing while it is 0).
        schedule.register(jobs.prune_finished_tasks, lambda: retention.PRUNE_EVERY_SECONDS)
        metrics.register("tasks", gauges.open_tasks)
