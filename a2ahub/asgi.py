"""ASGI entry point: Django for HTTP (static files included, so one process is a whole hub).

The A2A JSON-RPC endpoints skip the site's middleware: they use no sessions, cookies, CSRF
or messages, and under ASGI each sync middleware costs a thread hop on the hottest path.
"""

from __future__ import annotations

import os
import re
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "a2ahub.settings")

django_application = get_asgi_application()

from django.conf import settings  # noqa: E402  (needs the app registry loaded above)
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core.handlers.asgi import ASGIHandler  # noqa: E402
from django.core.handlers.exception import convert_exception_to_response  # noqa: E402

A2A_ENDPOINT = re.compile(r"^/agents/[^/]+/jsonrpc/?$")


class BareASGIHandler(ASGIHandler):
    """Django's ASGI handler with no middleware at all."""

    def load_middleware(self, is_async: bool = False) -> None:
        self._view_middleware: list[Any] = []
        self._template_response_middleware: list[Any] = []
        self._exception_middleware: list[Any] = []
        self._middleware_chain = convert_exception_to_response(
            self._get_response_async  # type: ignore[attr-defined]
        )


a2a_application = BareASGIHandler()
site_application = (
    ASGIStaticFilesHandler(django_application) if settings.SERVE_STATIC else django_application
)


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "http" and A2A_ENDPOINT.match(scope.get("path", "")):
        await a2a_application(scope, receive, send)
    else:
        await site_application(scope, receive, send)
