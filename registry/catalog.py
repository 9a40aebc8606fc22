"""The AI Catalog at /.well-known/ai-catalog.json (the Agent-Card ai-catalog draft,
`specification/ai-catalog.md`): every public agent, hosted or registered, as an entry
pointing at its card, then the hub's MCP door as an entry pointing at its MCP Server Card
(`registry.mcp_card`), and the catalog signed with the hub's key (`catalog_signing`).
Registered agents whose registration expired are left out at once, before the sweep.

An entry names what its card does not: its identifier, media type, URL, tags and when it
changed. The card's name, description and version are the card's to say (the draft: an entry
SHOULD NOT restate them, since the two could drift apart)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from agents import card_trust, cards
from agents.models import Agent
from agents.views import public_base_url
from registry import mcp_card
from registry.actions import iso
from registry.catalog_signing import signed

MEDIA_TYPE = "application/ai-catalog+json"
CARD_MEDIA_TYPE = "application/a2a-agent-card+json"
SPEC_VERSION = "1.0"


def listed() -> Any:
    live = Q(registration__isnull=True) | Q(registration__expires_at__gt=timezone.now())
    return (
        Agent.objects.filter(public=True, enabled=True)
        .filter(live)
        .select_related("registration")
        .prefetch_related("skills")
        .order_by("slug")
    )


def urn(host: str, slug: str) -> str:
    """A hosted agent's identifier: the hub publishes it, so `urn:air` with the hub's host."""
    return f"urn:air:{host}:a2a:{slug}"


def registered_urn(host: str, slug: str) -> str:
    """A registered agent's identifier when its publisher gave none: the hub is not its
    publisher, so not `urn:air` (the draft's Catalog Projection) but a name of the hub's own."""
    return f"urn:a2a-hub:{host}:agent:{slug}"


def identifier(agent: Agent, host: str) -> str:
    registration = getattr(agent, "registration", None)
    if registration is None:
        return urn(host, agent.slug)
    return registration.identifier or registered_urn(host, agent.slug)


def catalog_entry(agent: Agent, base: str, host: str) -> dict[str, Any]:
    tags = list(dict.fromkeys(t for s in agent.skills.all() if not s.extended_only for t in s.tags))
    entry: dict[str, Any] = {
        "identifier": identifier(agent, host),
        "type": CARD_MEDIA_TYPE,
        "url": cards.card_url(base, agent),
        "tags": tags or None,
        "updatedAt": iso(agent.updated_at) if isinstance(agent.updated_at, datetime) else None,
    }
    # The draft's publisher names a verifiable identifier: the provider's URL, when it has one.
    if agent.provider_organization and agent.provider_url:
        entry["publisher"] = {
            "identifier": agent.provider_url,
            "displayName": agent.provider_organization,
        }
    # A card that came into the hub (registered, imported, a remote agent's) says what its
    # signature check found; the hub's own cards are signed by the hub's key.
    if agent.card_signature:
        trust = card_trust.recorded(agent).as_document()
        entry["cardSignature"] = {k: v for k, v in trust.items() if v}
    return {k: v for k, v in entry.items() if v is not None}


def host_info(base: str, host: str) -> dict[str, Any]:
    return {
        "displayName": settings.HUB_NAME,
        "identifier": host,
        "documentationUrl": f"{base}/",
    }


@require_GET
def ai_catalog(request: HttpRequest) -> HttpResponse:
    base = public_base_url(request)
    host = urlsplit(base).hostname or "localhost"
    document = {
        "specVersion": SPEC_VERSION,
        "host": host_info(base, host),
        "entries": [
            *(catalog_entry(agent, base, host) for agent in listed()),
            mcp_card.catalog_entry(base, host),
        ],
    }
    response = JsonResponse(
        signed(document, base), content_type=MEDIA_TYPE, json_dumps_params={"ensure_ascii": False}
    )
    response["Cache-Control"] = f"public, max-age={min(settings.CARD_CACHE_SECONDS, 60)}"
    response["Access-Control-Allow-Origin"] = "*"
    return response
