"""ASGI entry point: Django for HTTP (static files included, so one process is a whole hub)."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "a2ahub.settings")

django_application = get_asgi_application()

from django.conf import settings  # noqa: E402  (needs the app registry loaded above)
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

application = (
    ASGIStaticFilesHandler(django_application) if settings.SERVE_STATIC else django_application
)
