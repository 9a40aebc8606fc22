"""App configuration for `agents`."""

from __future__ import annotations

from django.apps import AppConfig

PRUNE_EVERY_SECONDS = 60.0


class AgentsConfig(AppConfig):
    name = "agents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from importlib import import_module

        from django.conf import settings

        from a2ahub import processes, schedule
        from agents import audit, jobs, lookup  # noqa: F401  (lookup connects its receivers)

        # Each process writes the credential uses it counted, from its heartbeat thread.
        if audit.flush_due not in processes.on_beat:
            processes.on_beat.append(audit.flush_due)
        # The same pace as the other retention jobs: a short run every minute.
        schedule.register(jobs.prune_audit_log, lambda: PRUNE_EVERY_SECONDS)

        # Modules whose @skill functions the `python` executor kind can run.
        for module in settings.A2A_SKILL_MODULES:
            import_module(module)
