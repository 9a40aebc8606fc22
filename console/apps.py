"""App configuration for the operators' console: the admin's name and home page (the
dashboard), its periodic rollup, and what each process adds to its heartbeat."""

from __future__ import annotations

from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = "Operators' console"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings
        from django.contrib import admin

        from a2ahub import processes, schedule
        from console import jobs, sends

        admin.site.site_header = settings.HUB_NAME
        admin.site.site_title = settings.HUB_NAME
        admin.site.index_title = f"{settings.HUB_NAME} dashboard"
        # One mark for "no value" across the hub (Django's own is "-").
        admin.site.empty_value_display = "—"

        # Finished tasks by minute and hour, for the dashboard's charts.
        schedule.register(jobs.roll_up_finished_tasks, lambda: settings.CONSOLE_ROLLUP_SECONDS)
        # Each web process adds the sends it answered to the minute's count at every beat.
        if sends.record_sends not in processes.on_beat:
            processes.on_beat.append(sends.record_sends)
