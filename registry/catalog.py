"""The AI Catalog at /.well-known/ai-catalog.json (the Agent-Card ai-catalog draft of
2026-04-30): every public agent, hosted or registered, as an entry pointing at its card.
Registered agents whose registration expired are left out at once, before the sweep."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from agents import cards
from agents.models import Agent
from agents.views import public_base_url
from registry.actions import iso

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
    """A stable name for the agent: the hub's host name and the agent's id."""
    return f"urn:a2a-hub:{host}:agent:{slug}"


def catalog_entry(agent: Agent, base: str, host: str) -> dict[str, Any]:
    tags = list(dict.fromkeys(t for s in agent.skills.all() if not s.extended_only for t in s.tags))
    entry: dict[str, Any] = {
        "identifier": urn(host, agent.slug),
        "displayName": agent.name,
        "mediaType": CARD_MEDIA_TYPE,
        "url": cards.card_url(base, agent),
        "description": agent.description,
        "tags": tags,
        "version": agent.version,
        "updatedAt": iso(agent.updated_at) if isinstance(agent.updated_at, datetime) else None,
    }
    if agent.provider_organization:
        entry["publisher"] = {"displayName": agent.provider_organization}
        if agent.provider_url:
            entry["publisher"]["url"] = agent.provider_url
    return {k: v for k, v in entry.items() if v is not None}


@require_GET
def ai_catalog(request: HttpRequest) -> HttpResponse:
    base = public_base_url(request)
    host = urlsplit(base).hostname or "localhost"
    document = {
        "specVersion": SPEC_VERSION,
        "host": {
            "displayName": settings.HUB_NAME,
            "identifier": f"urn:a2a-hub:{host}",
            "url": f"{base}/",
        },
        "entries": [catalog_entry(agent, base, host) for agent in listed()],
    }
    response = JsonResponse(
        document, content_type=MEDIA_TYPE, json_dumps_params={"ensure_ascii": False}
    )
    response["Cache-Control"] = f"public, max-age={min(settings.CARD_CACHE_SECONDS, 60)}"
    response["Access-Control-Allow-Origin"] = "*"
    return response
