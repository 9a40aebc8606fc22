"""The MCP Server Card of the hub's MCP door (`/mcp`, `protocol.mcp_door`), and its entry in
the AI Catalog.

The card follows the Server Card draft (SEP-2127, carried on in the MCP project's
`experimental-ext-server-card` extension): identity (`name` in reverse-DNS form with one
slash, `version`, `title`, `description`, `websiteUrl`) and one Streamable HTTP remote with
the protocol revisions the SDK serves and the optional credential header. It lists no tools:
the draft leaves them to `tools/list`, and here they depend on who asks. It is served at the
extension's recommended place, the endpoint's URL followed by `/server-card`, and at the
SEP's `/.well-known/mcp/server-card`; the catalog's entry points at the first, with the
draft's media type `application/mcp-server-card+json`."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from agents.principals import DEFAULT_KEY_HEADER
from agents.views import public_base_url

MEDIA_TYPE = "application/mcp-server-card+json"
SCHEMA = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
# The version the MCP server says in its `serverInfo` (`protocol.mcp_door.SERVER`; the registry
# sits beside the protocol front and does not import it: a test holds the two equal).
SERVER_VERSION = "1.0"


def server_name(host: str) -> str:
    """The card's name: the hub's host in reverse-DNS order, then `/a2a-hub`."""
    return ".".join(reversed(host.split("."))) + "/a2a-hub"


def card_url(base: str) -> str:
    return f"{base}/mcp/server-card"


def server_card(base: str, host: str) -> dict[str, Any]:
    versions = [*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS]
    return {
        "$schema": SCHEMA,
        "name": server_name(host),
        "version": SERVER_VERSION,
        "title": settings.HUB_NAME,
        "description": "The A2A agents this hub hosts, each an MCP tool: a call sends the "
        "message to the agent and answers with its task.",
        "websiteUrl": f"{base}/",
        "remotes": [
            {
                "type": "streamable-http",
                "url": f"{base}/mcp",
                "supportedProtocolVersions": versions,
                "headers": [
                    {
                        "name": DEFAULT_KEY_HEADER,
                        "description": "An API key of this hub, for agents that need one "
                        "(or send it, or an OAuth2 token of the hub, as a bearer token).",
                        "isRequired": False,
                        "isSecret": True,
                    }
                ],
            }
        ],
    }


def catalog_entry(base: str, host: str) -> dict[str, Any]:
    return {"identifier": f"urn:air:{host}:mcp", "type": MEDIA_TYPE, "url": card_url(base)}


@require_GET
def card(request: HttpRequest) -> HttpResponse:
    base = public_base_url(request)
    host = urlsplit(base).hostname or "localhost"
    response = JsonResponse(server_card(base, host), content_type=MEDIA_TYPE)
    response["Cache-Control"] = f"public, max-age={min(settings.CARD_CACHE_SECONDS, 3600)}"
    response["Access-Control-Allow-Origin"] = "*"
    response["Access-Control-Allow-Methods"] = "GET"
    response["Access-Control-Allow-Headers"] = "Content-Type"
    return response
