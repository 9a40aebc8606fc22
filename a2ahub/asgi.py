"""ASGI entry point: Channels' protocol router, HTTP and WebSocket.

HTTP is Django (static files included, so one process is a whole hub), except the A2A
JSON-RPC endpoints, which skip Django's handler and the site's middleware (see
`protocol/rpc_asgi.py`): they use no sessions, cookies, CSRF or messages, and under ASGI each
of those costs thread hops on the hottest path. WebSocket routes (`a2ahub/routing.py`) sit
behind the session's user and the allowed hosts, for the operators' live pages.
"""

from __future__ import annotations

import os
import re
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "a2ahub.settings")

django_application = get_asgi_application()

# Below: modules that need the app registry loaded above.
from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from a2ahub.routing import routes  # noqa: E402
from protocol import rpc_asgi  # noqa: E402

A2A_ENDPOINT = re.compile(r"^/agents/[^/]+/jsonrpc/?$")

site_application = (
    ASGIStaticFilesHandler(django_application) if settings.SERVE_STATIC else django_application
)


async def http_application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if A2A_ENDPOINT.match(scope.get("path", "")):
        await rpc_asgi.serve(scope, receive, send)
    else:
        await site_application(scope, receive, send)


application = ProtocolTypeRouter(
    {
        "http": http_application,
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(routes()))),
    }
)
