"""App configuration for `agents`."""

from __future__ import annotations

from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from importlib import import_module

        from django.conf import settings

        from agents import lookup  # noqa: F401  (connects the cache's signal receivers)

        # Modules whose @skill functions the `python` executor kind can run.
        for module in settings.A2A_SKILL_MODULES:
            import_module(module)
