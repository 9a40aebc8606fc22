"""A2A Hub: the Django project (settings, URLs, ASGI and Celery entry points)."""

from __future__ import annotations

from a2ahub.celery import app as celery_app

__all__ = ["celery_app"]
