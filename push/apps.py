"""App configuration for `push`: it takes part in the task writer's work through its hooks."""

from __future__ import annotations

from django.apps import AppConfig


class PushConfig(AppConfig):
    name = "push"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from push import outbox

        outbox.register()
