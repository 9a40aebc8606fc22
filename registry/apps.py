"""App configuration for `registry`: it explains expired agents to the A2A doors (through
agents.lookup's hook) and sweeps expired registrations as a periodic job."""

from __future__ import annotations

from django.apps import AppConfig
from django.conf import settings


class RegistryConfig(AppConfig):
    name = "registry"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from a2ahub import schedule
        from agents import lookup
        from registry import actions, jobs

        if actions.explain_absence not in lookup.ABSENCE_EXPLAINERS:
            lookup.ABSENCE_EXPLAINERS.append(actions.explain_absence)
        schedule.register(jobs.sweep_registrations, lambda: settings.REGISTRY_SWEEP_SECONDS)
