"""Views that publish agents: each agent's card and the hub's own card (the AI Catalog is the
registry's: `registry.catalog`)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.cache import patch_vary_headers
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from agents import cards
from agents.lookup import find_agent, why_absent
from agents.models import Agent


def public_base_url(request: HttpRequest) -> str:
    return settings.PUBLIC_BASE_URL or request.build_absolute_uri("/").rstrip("/")


def requested_version(request: HttpRequest) -> str:
    raw = request.headers.get("A2A-Version") or request.GET.get("A2A-Version") or ""
    return ".".join(raw.strip().split(".")[:2])


def json_not_found(message: str) -> JsonResponse:
    return JsonResponse(
        {"error": {"code": 404, "status": "NOT_FOUND", "message": message}}, status=404
    )


def serve_card(request: HttpRequest, agent: Agent, variant: str = "") -> HttpResponse:
    if not variant:
        variant = cards.V1_0 if requested_version(request) == "1.0" else cards.UNION
    card, tag = cards.served_card(agent, public_base_url(request))
    tag = f'"{variant}-{tag[1:]}'
    asked = _if_none_match(request)
    if tag in asked or "*" in asked:  # "*": any current representation (RFC 9110 13.1.2)
        response = HttpResponse(status=304)
    else:
        document = cards.card_document(card, variant)
        response = JsonResponse(document, json_dumps_params={"ensure_ascii": False})
    response["ETag"] = tag
    response["Cache-Control"] = f"public, max-age={settings.CARD_CACHE_SECONDS}"
    # Cards are public documents meant to be read by clients on any origin.
    response["Access-Control-Allow-Origin"] = "*"
    patch_vary_headers(response, ["A2A-Version"])
    return response


def _if_none_match(request: HttpRequest) -> set[str]:
    header = request.headers.get("If-None-Match", "")
    return {t.strip().removeprefix("W/") for t in header.split(",") if t.strip()}


@csrf_exempt  # a POST is a 405, not the CSRF check's HTML 403
@require_GET
def agent_card(request: HttpRequest, slug: str) -> HttpResponse:
    agent = find_agent(slug)
    if agent is None:
        return json_not_found(why_absent(slug) or f"No agent named {slug!r} is served here.")
    return serve_card(request, agent)


@csrf_exempt  # a POST is a 405, not the CSRF check's HTML 403
@require_GET
def pinned_v1_card(request: HttpRequest, slug: str) -> HttpResponse:
    """The pure 1.0 card whatever the request says, for tools that validate the strict 1.0
    schema but send no A2A-Version header when they fetch a card."""
    agent = find_agent(slug)
    if agent is None:
        return json_not_found(f"No agent named {slug!r} is served here.")
    return serve_card(request, agent, cards.V1_0)


@csrf_exempt  # a POST is a 405, not the CSRF check's HTML 403
@require_GET
def hub_card(request: HttpRequest) -> HttpResponse:
    agent = find_agent(settings.HUB_DEFAULT_AGENT)
    if agent is None:
        return json_not_found("This hub has no default agent.")
    return serve_card(request, agent)
