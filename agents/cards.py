"""Agent Cards built from `Agent` rows, in the two shapes the hub serves, and their validation.

The card is built once as the 1.0 protobuf message; the official SDK derives the 0.3 fields
from it. The union document (1.0 fields plus the 0.3 top-level ones) is what clients of either
version read by default; the pure 1.0 document is for requests that say `A2A-Version: 1.0`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

import pydantic
from a2a.compat.v0_3 import conversions
from a2a.compat.v0_3 import types as v03
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import InvalidParamsError
from a2a.utils.proto_utils import validate_proto_required_fields
from django.conf import settings
from django.core.exceptions import ValidationError
from google.protobuf.json_format import MessageToDict, ParseDict, ParseError

from agents import card_signing
from agents import scopes as scope_rules
from agents.models import Agent, Skill

UNION = "union"
V1_0 = "1.0"

# Where a problem found by the SDK's judges is shown on the agent's form.
_CARD_FIELD_TO_MODEL_FIELD = {
    "name": "name",
    "description": "description",
    "version": "version",
    "provider": "provider_url",
    "iconUrl": "icon_url",
    "documentationUrl": "documentation_url",
    "capabilities": "extensions",
    "securitySchemes": "security_schemes",
    "security": "security_requirements",
    "securityRequirements": "security_requirements",
    "defaultInputModes": "default_input_modes",
    "defaultOutputModes": "default_output_modes",
    "default_input_modes": "default_input_modes",
    "default_output_modes": "default_output_modes",
    "security_schemes": "security_schemes",
    "security_requirements": "security_requirements",
    "skills": "skills",
}


def agent_base_url(base_url: str, agent: Agent) -> str:
    return f"{base_url}/agents/{agent.slug}/"


def jsonrpc_url(base_url: str, agent: Agent) -> str:
    return f"{agent_base_url(base_url, agent)}jsonrpc/"


def rest_url(base_url: str, agent: Agent) -> str:
    return f"{agent_base_url(base_url, agent)}rest/"


def grpc_address(base_url: str) -> str:
    """Where the gRPC binding answers, as `host:port` (no scheme: gRPC clients take the
    target as it is): GRPC_PUBLIC_ADDRESS, or the host of the hub's URL with GRPC_PORT."""
    if settings.GRPC_PUBLIC_ADDRESS:
        return str(settings.GRPC_PUBLIC_ADDRESS)
    host = urlsplit(base_url).hostname or "127.0.0.1"
    return f"[{host}]:{settings.GRPC_PORT}" if ":" in host else f"{host}:{settings.GRPC_PORT}"


def card_url(base_url: str, agent: Agent) -> str:
    return f"{agent_base_url(base_url, agent)}.well-known/agent-card.json"


def build_card(
    agent: Agent,
    base_url: str,
    skills: Iterable[Skill] | None = None,
    extended: bool = False,
    reaches: Callable[[Skill], bool] | None = None,
) -> pb.AgentCard:
    """The agent's card as the 1.0 message; `skills` lets forms preview unsaved skills, and
    `reaches` leaves out of an extended card the skills the caller's token does not reach."""
    card = pb.AgentCard(name=agent.name, description=agent.description, version=agent.version)
    add_interfaces(card, agent, base_url)
    if agent.provider_organization or agent.provider_url:
        card.provider.organization = agent.provider_organization
        card.provider.url = agent.provider_url
    if agent.icon_url:
        card.icon_url = agent.icon_url
    if agent.documentation_url:
        card.documentation_url = agent.documentation_url
    card.capabilities.CopyFrom(build_capabilities(agent))
    for name, scheme in (agent.security_schemes or {}).items():
        card.security_schemes[name].CopyFrom(security_scheme(name, scheme))
    card.security_requirements.extend(security_requirements(agent.security_requirements))
    if agent.oauth2:
        for name, scheme in oauth2_schemes(agent, base_url).items():
            card.security_schemes[name].CopyFrom(scheme)
            for scope in (scope_rules.INVOKE, scope_rules.agent_scope(agent.slug)):
                requirement = card.security_requirements.add()
                requirement.schemes[name].list.append(scope)
    card.default_input_modes.extend(agent.default_input_modes or [])
    card.default_output_modes.extend(agent.default_output_modes or [])
    chosen = agent.skills.all() if skills is None else skills
    card.skills.extend(
        build_skill(s)
        for s in chosen
        if (extended or not s.extended_only) and (reaches is None or reaches(s))
    )
    return card


# 1.0's OAuthFlows holds one flow, so the hub's server is named twice: for machines (client
# credentials) and for people (authorization code with PKCE).
OAUTH2_SCHEME = "oauth2"
OAUTH2_CODE_SCHEME = "oauth2AuthorizationCode"


def oauth2_schemes(agent: Agent, base_url: str) -> dict[str, pb.SecurityScheme]:
    """The hub's authorization server, as an agent that requires OAuth2 names it, with the
    RFC 8414 metadata where clients find the rest."""
    scopes = {
        scope_rules.INVOKE: "Call the agents you may call",
        scope_rules.agent_scope(agent.slug): f"Call {agent.name}",
    }
    token_url = f"{base_url}/o/token/"
    machines = pb.OAuthFlows(
        client_credentials=pb.ClientCredentialsOAuthFlow(token_url=token_url, scopes=scopes)
    )
    # PKCE is required by the server (and said in its metadata), not with `pkceRequired`:
    # 0.3 has no such field, so a card read as 0.3 would no longer match its signature.
    people = pb.OAuthFlows(
        authorization_code=pb.AuthorizationCodeOAuthFlow(
            authorization_url=f"{base_url}/o/authorize/", token_url=token_url,
            refresh_url=token_url, scopes=scopes,
        )
    )  # fmt: skip
    metadata = f"{base_url}/.well-known/oauth-authorization-server"
    return {
        name: pb.SecurityScheme(
            oauth2_security_scheme=pb.OAuth2SecurityScheme(
                description=f"OAuth2 bearer token from this hub ({who})",
                flows=flows,
                oauth2_metadata_url=metadata,
            )
        )
        for name, flows, who in (
            (OAUTH2_SCHEME, machines, "machines: client credentials"),
            (OAUTH2_CODE_SCHEME, people, "people: authorization code with PKCE"),
        )
    }


def add_interfaces(card: pb.AgentCard, agent: Agent, base_url: str) -> None:
    """The agent's own doors, each binding in both versions, the first the one 0.3 clients
    take (`url`); then the shared 1.0 doors with `tenant`, which the official client copies
    into its requests (v1.0.1 8.3.2), so either way reaches this agent; gRPC, one service for
    every agent, is only such a shared door."""
    for binding, url in (("JSONRPC", jsonrpc_url(base_url, agent)),
                         ("HTTP+JSON", rest_url(base_url, agent))):  # fmt: skip
        for version in ("1.0", "0.3"):
            card.supported_interfaces.add(
                url=url, protocol_binding=binding, protocol_version=version
            )
    for binding, path in (("JSONRPC", "jsonrpc"), ("HTTP+JSON", "rest")):
        card.supported_interfaces.add(
            url=f"{base_url}/a2a/{path}/",
            protocol_binding=binding,
            protocol_version="1.0",
            tenant=agent.slug,
        )
    if settings.GRPC_PORT:
        card.supported_interfaces.add(
            url=grpc_address(base_url), protocol_binding="GRPC", protocol_version="1.0",
            tenant=agent.slug,
        )  # fmt: skip
        if agent.slug == settings.HUB_DEFAULT_AGENT:
            # 0.3 requests cannot name an agent: the 0.3 service serves the default one.
            card.supported_interfaces.add(
                url=grpc_address(base_url), protocol_binding="GRPC", protocol_version="0.3"
            )


def build_capabilities(agent: Agent) -> pb.AgentCapabilities:
    capabilities = pb.AgentCapabilities(
        streaming=agent.streaming, push_notifications=agent.push_notifications
    )
    if agent.extended_card:
        capabilities.extended_agent_card = True
    for ext in agent.declared_extensions():
        extension = capabilities.extensions.add(
            uri=str(ext.get("uri", "")),
            description=str(ext.get("description", "")),
            required=bool(ext.get("required", False)),
        )
        if ext.get("params"):
            extension.params.update(ext["params"])
    return capabilities


SCHEME_TYPES = ("apiKey", "http", "oauth2", "openIdConnect", "mutualTLS")


def security_scheme(name: str, raw: Any) -> pb.SecurityScheme:
    """Convert one OpenAPI-style scheme; problems are reported under the scheme's name."""
    kind = raw.get("type") if isinstance(raw, dict) else None
    if kind not in SCHEME_TYPES:
        raise ValidationError(
            {"security_schemes": f"{name}: type {kind!r} is not one of {', '.join(SCHEME_TYPES)}."}
        )
    try:
        parsed = v03.SecurityScheme.model_validate(raw)
    except pydantic.ValidationError as exc:
        problems = [f"{name}: {problem}" for problem in describe_pydantic(exc)]
        raise ValidationError({"security_schemes": problems}) from exc
    return conversions.to_core_security_scheme(parsed)


def security_requirements(raw: Any) -> list[pb.SecurityRequirement]:
    if not isinstance(raw, list):
        raise TypeError("security requirements must be a list")
    return [conversions.to_core_security_requirement(req) for req in raw]


def build_skill(skill: Skill) -> pb.AgentSkill:
    return pb.AgentSkill(
        id=skill.skill_id,
        name=skill.name,
        description=skill.description,
        tags=skill.tags,
        examples=skill.examples,
        input_modes=skill.input_modes,
        output_modes=skill.output_modes,
        security_requirements=security_requirements(skill.security_requirements),
    )


def served_card(
    agent: Agent,
    base_url: str,
    extended: bool = False,
    reaches: Callable[[Skill], bool] | None = None,
) -> tuple[pb.AgentCard, str]:
    """The card as clients get it: signed unless the agent opted out; and its ETag, which
    names what was signed and with which key but not the signature (ECDSA's differ each time
    and between processes)."""
    card = build_card(agent, base_url, extended=extended, reaches=reaches)
    unsigned = hashlib.sha256(card.SerializeToString(deterministic=True)).hexdigest()
    kid = card_signing.sign(agent, card, base_url)
    return card, '"' + hashlib.sha256(f"{unsigned}:{kid}".encode()).hexdigest()[:32] + '"'


def card_document(card: pb.AgentCard, variant: str) -> dict[str, Any]:
    if variant == V1_0:
        return MessageToDict(card)
    return agent_card_to_dict(card)


def card_text(agent: Agent, base_url: str) -> str:
    """The union card as the admin and the developer pages show it."""
    try:
        document = card_document(build_card(agent, base_url), UNION)
        return json.dumps(document, indent=2, ensure_ascii=False)
    except Exception as exc:  # a stored card that no longer builds must still be shown
        return f"This card does not build: {exc}"


def validate_agent_card(agent: Agent, skills: Iterable[Skill] | None = None) -> None:
    """Raise ValidationError (keyed by model field) unless both versions accept the card.

    The judges are the official SDK's 0.3 pydantic model and its 1.0 protobuf message with
    its required fields; unknown fields in the pure 1.0 card are refused.
    """
    try:
        card = build_card(agent, "https://hub.invalid", skills=skills, extended=True)
    except (TypeError, ValueError, AttributeError) as exc:
        raise ValidationError({field_for_build_error(exc): str(exc)}) from exc
    check_v1(card)
    check_v03(card_document(card, UNION))


def field_for_build_error(exc: Exception) -> str:
    text = str(exc).lower()
    if "security requirement" in text or "list" in text:
        return "security_requirements"
    if "struct" in text or "params" in text or "extension" in text:
        return "extensions"
    return "security_requirements"


def check_v1(card: pb.AgentCard) -> None:
    try:
        validate_proto_required_fields(card)
        ParseDict(card_document(card, V1_0), pb.AgentCard())
    except InvalidParamsError as exc:
        details = (exc.data or {}).get("errors", [])
        errors: dict[str, list[str]] = {}
        for item in details:
            root = item["field"].split(".")[0].split("[")[0]
            field = _CARD_FIELD_TO_MODEL_FIELD.get(root, "__all__")
            errors.setdefault(field, []).append(f"A2A 1.0: {item['field']}: {item['message']}")
        raise ValidationError(errors) from exc
    except ParseError as exc:
        raise ValidationError(f"A2A 1.0 card does not parse: {exc}") from exc


def check_v03(document: dict[str, Any]) -> None:
    try:
        v03.AgentCard.model_validate(document)
    except pydantic.ValidationError as exc:
        errors: dict[str, list[str]] = {}
        for item in exc.errors():
            root = str(item["loc"][0]) if item["loc"] else ""
            field = _CARD_FIELD_TO_MODEL_FIELD.get(root, "__all__")
            where = ".".join(str(p) for p in item["loc"])
            errors.setdefault(field, []).append(f"A2A 0.3: {where}: {item['msg']}")
        raise ValidationError(errors) from exc


def describe_pydantic(exc: pydantic.ValidationError) -> list[str]:
    # A union's errors name the member model first; the field path after it is what helps.
    return [
        f"{'.'.join(str(p) for p in item['loc'][1:]) or 'value'}: {item['msg']}"
        for item in exc.errors()
    ]
