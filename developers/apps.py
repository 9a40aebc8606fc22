"""The developer pages: where signed-in users register, edit and try the agents they own."""

from __future__ import annotations

from django.apps import AppConfig


class DevelopersConfig(AppConfig):
    name = "developers"
    verbose_name = "Developer pages"
