"""App configuration for `registry`: it explains expired agents to the A2A doors (through
agents.lookup's hook), sweeps expired registrations and checks the health of live ones as
periodic jobs."""

from __future__ import annotations

from django.apps import AppConfig
from django.conf import settings


class RegistryConfig(AppConfig):
    name = "registry"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from a2ahub import schedule
        from agents import lookup
        from registry import actions, jobs, schema_auth  # noqa: F401  (its schemas' credentials)

        if actions.explain_absence not in lookup.ABSENCE_EXPLAINERS:
            lookup.ABSENCE_EXPLAINERS.append(actions.explain_absence)
        schedule.register(jobs.sweep_registrations, lambda: settings.REGISTRY_SWEEP_SECONDS)
        # Runs as often as the sweep; each registration is read at most every
        # REGISTRY_HEALTH_SECONDS, and not at all when that is 0.
        schedule.register(jobs.check_registrations, lambda: settings.REGISTRY_SWEEP_SECONDS)
