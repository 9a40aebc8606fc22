"""ASGI entry point: Django for HTTP (static files included, so one process is a whole hub).

The A2A JSON-RPC endpoints skip Django's handler and the site's middleware (see
`agents/rpc_asgi.py`): they use no sessions, cookies, CSRF or messages, and under ASGI each of
those costs thread hops on the hottest path.
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

from protocol import rpc_asgi  # noqa: E402

A2A_ENDPOINT = re.compile(r"^/agents/[^/]+/jsonrpc/?$")

site_application = (
    ASGIStaticFilesHandler(django_application) if settings.SERVE_STATIC else django_application
)


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "http" and A2A_ENDPOINT.match(scope.get("path", "")):
        await rpc_asgi.serve(scope, receive, send)
    else:
        await site_application(scope, receive, send)
