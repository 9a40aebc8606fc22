"""ASGI entry point: Channels' protocol router, HTTP and WebSocket.

HTTP is Django (static files included, so one process is a whole hub), except the A2A
doors (JSON-RPC and HTTP+JSON, per agent and shared: `protocol.routes`), the MCP door
(`/mcp`: `protocol.mcp_door`, the `mcp` SDK's own ASGI transport) and the operator's probes
(`a2ahub.probes`), which skip Django's handler and the site's middleware (`protocol.asgi`):
they use no sessions, CSRF or messages, and under ASGI each of those costs thread hops on the
hottest path; a probe also comes addressed to a pod's address, which no ALLOWED_HOSTS lists.
WebSocket routes (the console's live pages, mounted through `a2ahub.routing`) sit behind the
session's user, the allowed hosts and the hub's own origin (scheme, host and port:
`a2ahub.socket_origin`). A process serving this application says it is alive
(`a2ahub.processes`), as a web process (the bulk process, `protocol.bulk`, as `bulk`).
"""

from __future__ import annotations

import os
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "a2ahub.settings")
django.setup(set_prefix=False)  # as django.core.asgi.get_asgi_application does

from a2ahub.page_handler import PageHandler  # noqa: E402

django_application = PageHandler()

# Below: modules that need the app registry loaded above.
from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.urls import get_resolver  # noqa: E402

from a2ahub import body_limit, interpreter, probes, processes  # noqa: E402
from a2ahub.routing import routes  # noqa: E402
from a2ahub.socket_origin import SameOriginValidator  # noqa: E402
from console import routing as console_routing  # noqa: E402
from protocol import asgi as doors  # noqa: E402
from protocol import bulk, mcp_door  # noqa: E402
from protocol.routes import route_at  # noqa: E402
from registry import body_limit as registry_body_limit  # noqa: E402

processes.start("bulk" if settings.BULK_PROCESS else "web")

if os.environ.get("A2AHUB_GRPC_IN_WEB") == "1":  # set by runhub for an embedded hub
    from protocol import grpc_server

    grpc_server.serve_beside_web()

site_application = body_limit.guarded(
    ASGIStaticFilesHandler(django_application) if settings.SERVE_STATIC else django_application
)
# The body limits of the A2A doors and of the registry, answered in their own shapes (the
# web server asks for them before it reads a body).
body_limit.FINDERS += [
    doors.body_limit_at,
    mcp_door.body_limit_at,
    registry_body_limit.body_limit_at,
]
# The MCP door reads its own body (the SDK's transport): guarded as the site is, so a body over
# the limit gets the door's JSON-RPC refusal under any server.
mcp_application = body_limit.guarded(mcp_door.serve)


async def http_application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    path = scope.get("path", "")
    route = route_at(path)
    if route is not None:
        await doors.serve(scope, receive, send, route)
    elif mcp_door.is_mcp(path):
        await mcp_application(scope, receive, send)
    elif path in probes.PATHS:
        await probes.serve(scope, receive, send)
    else:
        await site_application(scope, receive, send)


application = ProtocolTypeRouter(
    {
        "http": http_application,
        "websocket": AllowedHostsOriginValidator(
            SameOriginValidator(
                AuthMiddlewareStack(URLRouter(routes(console_routing.websocket_urlpatterns)))
            )
        ),
    }
)

# The site's URLconf imports every app's views, the model client's types among them: some
# 240 ms of imports that the first page or card request made on the event loop, holding every
# other request of the process for as long. Made here, before the process serves; so is the
# client of the bulk process.
get_resolver().url_patterns  # noqa: B018
bulk.prepare()

if settings.LOOP_HOLD_LOG_MS:
    interpreter.watch_loop_holds(settings.LOOP_HOLD_LOG_MS)
interpreter.settle()
