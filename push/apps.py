"""App configuration for `push`."""

from __future__ import annotations

from django.apps import AppConfig


class PushConfig(AppConfig):
    name = "push"
    default_auto_field = "django.db.models.BigAutoField"
