"""App configuration for `agents`."""

from __future__ import annotations

from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agents import lookup  # noqa: F401  (connects the cache's signal receivers)
