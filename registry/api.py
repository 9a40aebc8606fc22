"""The registration API (Django REST framework): `POST /registry/agents` registers,
`GET /registry/agents` searches; `/registry/agents/<agentId>` reads, replaces (PUT) and
deregisters (DELETE); `POST /registry/agents/<agentId>/heartbeat` renews."""

from __future__ import annotations

import codecs
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from a2ahub import nesting, numerals
from agents import card_trust, cards
from agents.scopes import REGISTRY
from agents.views import public_base_url
from registry import actions, errors, openapi, search
from registry.actions import Caller, iso
from registry.auth import AUTHENTICATION, caller_of
from registry.errors import ApiError
from registry.models import Registration
from registry.shapes import read_submission


def read_json(request: Request) -> Any:
    """The body as JSON, refused with 413 past REGISTRY_MAX_BODY_BYTES before it is parsed."""
    limit = settings.REGISTRY_MAX_BODY_BYTES
    too_large = ApiError(413, f"The request body is over {limit} bytes.", "body")
    declared = request.headers.get("Content-Length", "")
    if numerals.is_over(declared, limit):
        raise too_large
    media = (request.content_type or "").split(";")[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        raise ApiError(415, "Send JSON (application/json).", "Content-Type")
    try:
        body = request._request.body  # the raw bytes: DRF's parsers would read past the limit
    except RequestDataTooBig:
        raise too_large from None
    if len(body) > limit:
        raise too_large
    try:
        document = nesting.loads(body.removeprefix(codecs.BOM_UTF8).decode())
    except nesting.TooDeep as exc:
        raise ApiError(400, str(exc), "body") from None
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "The body is not valid JSON.", "body") from None
    errors.refuse_uncarriable(document)
    return document


def entry(registration: Registration, base: str, full: bool = False) -> dict[str, Any]:
    agent = registration.agent
    document: dict[str, Any] = {
        "agentId": agent.slug,
        "registrationId": registration.registration_id,
        "status": "expired" if registration.is_expired() else "registered",
        "name": agent.name,
        "description": agent.description,
        "version": agent.version,
        "expiresAt": iso(registration.expires_at),
        "discoveryUrl": cards.card_url(base, agent),
        "url": cards.jsonrpc_url(base, agent),
        "protocols": registration.protocols,
        "tags": registration.tags,
        "category": registration.category,
        "identifier": registration.identifier,
        "skills": [{"id": s.skill_id, "name": s.name, "tags": s.tags} for s in agent.skills.all()],
        "cardSignature": signature_of(agent),
    }
    if full:
        document |= {
            "ttl": registration.ttl_seconds,
            "cardUrl": registration.card_url,
            "health": registration.health,
            "lastError": registration.last_error,
        }
    return document


def signature_of(agent: Any) -> dict[str, Any]:
    """What the hub found when the card came in (`agents.card_trust`)."""
    checked = iso(agent.card_checked_at) if agent.card_checked_at else None
    return card_trust.recorded(agent).as_document() | {"checkedAt": checked}


def receipt(registration: Registration, base: str) -> dict[str, Any]:
    """Seed 003's answer to a registration (and to a heartbeat or an update), with what the
    hub found of the card's signature."""
    return {
        "status": "registered",
        "agentId": registration.agent.slug,
        "registrationId": registration.registration_id,
        "expiresAt": iso(registration.expires_at),
        "discoveryUrl": cards.card_url(base, registration.agent),
        "ttl": registration.ttl_seconds,
        "cardSignature": signature_of(registration.agent),
    }


class RegistryView(APIView):
    schema_scope = REGISTRY  # what the schema says a key or token must hold
    authentication_classes = AUTHENTICATION
    permission_classes = [AllowAny]  # each method says who may call it
    renderer_classes = [JSONRenderer]

    def get_exception_handler(self) -> Any:
        return errors.handle

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        errors.refuse_uncarriable(kwargs | request.query_params.dict(), "path")

    def base(self) -> str:
        request: HttpRequest = self.request._request
        return public_base_url(request)

    def caller(self) -> Caller:
        caller = caller_of(self.request)
        if caller is None:
            raise ApiError(401, "Registering needs credentials: a hub API key or an OAuth2 "
                                "access token of the hub, as a bearer token.")  # fmt: skip
        if not caller.holds(REGISTRY):
            raise errors.insufficient_scope(REGISTRY, "Registering")
        return caller

    def registration(self, agent_id: str) -> Registration:
        found = Registration.objects.select_related("agent").filter(agent__slug=agent_id).first()
        if found is None:
            raise ApiError(404, f"No agent {agent_id!r} is registered here.", "agentId")
        return found


class AgentsView(RegistryView):
    @openapi.search
    def get(self, request: Request) -> Response:
        rows, cursor = search.page(request.query_params)
        base = self.base()
        return Response({"agents": [entry(r, base) for r in rows], "nextCursor": cursor})

    @openapi.register
    def post(self, request: Request) -> Response:
        caller = self.caller()
        body = read_json(request)
        params = request.query_params
        ttl = params.get("ttl") or (body.get("ttl") if isinstance(body, dict) else None)
        # A card to fetch may name its agent id and identifier in the body too.
        by_url = body if isinstance(body, dict) and "cardUrl" in body else {}
        agent_id = params.get("agentId") or str(by_url.get("agentId", ""))
        identifier = actions.identifier_of(params.get("identifier") or by_url.get("identifier"))
        if by_url:
            body = {"cardUrl": by_url["cardUrl"]}
        registration, created = actions.register(
            read_submission(body), caller, ttl, agent_id, identifier
        )
        response = Response(receipt(registration, self.base()), status=201 if created else 200)
        response["Location"] = f"{self.base()}/registry/agents/{registration.agent.slug}"
        return response


class AgentView(RegistryView):
    @openapi.read
    def get(self, request: Request, agent_id: str) -> Response:
        registration = self.registration(agent_id)
        caller = caller_of(request)
        manager = (
            caller is not None
            and caller.holds(REGISTRY)
            and actions.may_manage(registration, caller)
        )
        if registration.is_expired() and not manager:
            raise ApiError(410, f"The registration of agent {agent_id!r} expired at "
                                f"{iso(registration.expires_at)}.", "agentId")  # fmt: skip
        return Response(entry(registration, self.base(), full=manager))

    @openapi.replace
    def put(self, request: Request, agent_id: str) -> Response:
        registration = self.registration(agent_id)
        caller = self.caller()
        actions.check_manager(registration, caller)
        body = read_json(request)
        ttl = request.query_params.get("ttl")
        actions.update(registration, read_submission(body), caller, ttl)
        return Response(receipt(registration, self.base()))

    @openapi.deregister
    def delete(self, request: Request, agent_id: str) -> Response:
        registration = self.registration(agent_id)
        actions.deregister(registration, self.caller())
        return Response(status=204)


class HeartbeatView(RegistryView):
    @openapi.heartbeat
    def post(self, request: Request, agent_id: str) -> Response:
        registration = self.registration(agent_id)
        caller = self.caller()
        actions.renew(registration, caller, request.query_params.get("ttl"))
        return Response(receipt(registration, self.base()) | {"health": registration.health})
