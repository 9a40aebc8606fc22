"""App configuration for `operators_api`: the staff JSON API beside the admin."""

from __future__ import annotations

from django.apps import AppConfig


class OperatorsApiConfig(AppConfig):
    name = "operators_api"
    verbose_name = "Operators' API"
