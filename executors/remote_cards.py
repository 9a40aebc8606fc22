"""Agents made from a remote Agent Card: fetch it, let the official SDK judge it (1.0 or 0.3),
map it to an `a2a-remote` Agent and its Skills, and re-sync that agent from the card later.

Only what describes the agent is copied. Security schemes are not: callers authenticate to the
hub, under the hub agent's own settings. Push notifications are the hub's own feature and stay
as they are; extensions and the remote's extended card are not copied either.
"""

from __future__ import annotations

import codecs
import contextlib
import copy
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
import pydantic
from a2a.client.card_resolver import parse_agent_card
from a2a.compat.v0_3 import conversions
from a2a.compat.v0_3 import types as v03
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import InvalidParamsError
from a2a.utils.proto_utils import validate_proto_required_fields
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from google.protobuf.json_format import ParseError

from a2ahub import nesting, outbound
from agents import card_trust
from agents.cards import validate_agent_card
from agents.models import Agent, Skill, default_modes

REMOTE_KIND = "a2a-remote"
FETCH_TIMEOUT = 10.0
MAX_CARD_BYTES = 512 * 1024
# The Agent fields a card sets; a re-sync rewrites exactly these (and the skills).
CARD_FIELDS = [
    "name", "description", "version", "provider_organization", "provider_url",
    "icon_url", "documentation_url", "streaming", "default_input_modes", "default_output_modes",
]  # fmt: skip


class CardRejected(Exception):
    """The card could not be fetched, is not a card, or does not make a valid hub agent."""


@dataclass(frozen=True)
class RemoteCard:
    card: pb.AgentCard
    version: str  # the protocol version whose SDK model accepted the document


# -- fetching and judging --------------------------------------------------------------------


def fetch_card(url: str) -> RemoteCard:
    """The card at `url`, through the hub's guarded HTTP seam; raises CardRejected."""
    return read_card(fetch_document(url))


def fetch_document(url: str) -> Any:
    try:
        response = outbound.get(
            url, headers={"Accept": "application/json"}, timeout=FETCH_TIMEOUT,
            max_bytes=MAX_CARD_BYTES,
        )  # fmt: skip
    except outbound.UnsafeURL as exc:
        raise CardRejected(f"The hub may not fetch this URL: {exc}.") from exc
    except outbound.ResponseTooLarge as exc:
        raise CardRejected(f"The card is too large: {exc}.") from exc
    except httpx.HTTPError as exc:
        raise CardRejected(f"The card could not be fetched: {exc or type(exc).__name__}.") from exc
    if not response.is_success:
        # Redirects are never followed (the guard would have to judge each hop).
        where = response.headers.get("Location")
        moved = f" (redirected to {where}; enter that URL)" if where else ""
        raise CardRejected(f"The card URL answered HTTP {response.status_code}{moved}.")
    try:
        return nesting.loads(response.content.removeprefix(codecs.BOM_UTF8), "The card")
    except nesting.TooDeep as exc:
        raise CardRejected(f"{exc}") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise CardRejected(f"The card URL did not answer with JSON: {exc}.") from exc


def read_card(document: Any) -> RemoteCard:
    """The document as a 1.0 card, else as a 0.3 card; the SDK's models are the judges."""
    if not isinstance(document, dict):
        raise CardRejected("The document is not an Agent Card: it is not a JSON object.")
    try:
        # The SDK's readers (and the copy made for them) recurse over the document.
        nesting.check(document, "The card")
    except nesting.TooDeep as exc:
        raise CardRejected(str(exc)) from None
    try:
        return RemoteCard(read_v1(document), "1.0")
    except CardRejected as v1_problem:
        try:
            return RemoteCard(read_v03(document), "0.3")
        except CardRejected as v03_problem:
            raise CardRejected(
                f"The document is not an A2A 1.0 or 0.3 Agent Card. "
                f"As 1.0: {v1_problem} As 0.3: {v03_problem}"
            ) from v03_problem


def read_v1(document: dict[str, Any]) -> pb.AgentCard:
    try:
        # The SDK's reader rewrites legacy fields in place, so it gets a copy.
        card = parse_agent_card(copy.deepcopy(document))
        validate_proto_required_fields(card)
    except ParseError as exc:
        raise CardRejected(f"{exc}.") from exc
    except InvalidParamsError as exc:
        errors = (exc.data or {}).get("errors", [])
        missing = ", ".join(f"{e['field']} ({e['message']})" for e in errors[:5])
        raise CardRejected(f"{missing or exc.message}.") from exc
    return card


def read_v03(document: dict[str, Any]) -> pb.AgentCard:
    try:
        legacy = v03.AgentCard.model_validate(document)
    except pydantic.ValidationError as exc:
        raise CardRejected("; ".join(describe_loc(exc)[:5]) + ".") from exc
    return conversions.to_core_agent_card(legacy)


def describe_loc(exc: pydantic.ValidationError) -> list[str]:
    return [
        f"{'.'.join(str(p) for p in item['loc']) or 'document'}: {item['msg']}"
        for item in exc.errors()
    ]


# -- mapping to the hub's rows --------------------------------------------------------------


def card_fields(card: pb.AgentCard) -> dict[str, Any]:
    """The Agent fields the card sets (see CARD_FIELDS)."""
    return {
        "name": card.name,
        "description": card.description,
        "version": card.version,
        "provider_organization": card.provider.organization,
        "provider_url": card.provider.url,
        "icon_url": card.icon_url,
        "documentation_url": card.documentation_url,
        # The hub relays the remote's stream only if the remote streams.
        "streaming": card.capabilities.streaming,
        "default_input_modes": list(card.default_input_modes) or default_modes(),
        "default_output_modes": list(card.default_output_modes) or default_modes(),
    }


def card_skills(card: pb.AgentCard) -> list[Skill]:
    return [card_skill(skill, position) for position, skill in enumerate(card.skills)]


def card_skill(skill: pb.AgentSkill, position: int) -> Skill:
    """One skill as the card describes it; its security requirements are the remote's, so
    they are not copied."""
    return Skill(
        skill_id=skill.id, name=skill.name, description=skill.description,
        tags=list(skill.tags), examples=list(skill.examples),
        input_modes=list(skill.input_modes), output_modes=list(skill.output_modes),
        position=position,
    )  # fmt: skip


def apply_card(agent: Agent, card: pb.AgentCard, url: str) -> list[Skill]:
    """Fill `agent` (unsaved changes) from the card and return its new skills, or raise
    CardRejected naming what the hub cannot take; nothing is written."""
    for field, value in card_fields(card).items():
        setattr(agent, field, value)
    agent.executor_kind = REMOTE_KIND
    agent.executor_settings = (agent.executor_settings or {}) | {
        "card_url": url,
        "synced_at": timezone.now().isoformat(),
    }
    skills = card_skills(card)
    check(agent, skills)
    return skills


def check(agent: Agent, skills: list[Skill]) -> None:
    if not skills:
        raise CardRejected("The card lists no skills; a hub agent needs at least one.")
    for skill in skills:
        try:
            skill.full_clean(exclude=["agent"], validate_unique=False)
        except ValidationError as exc:
            where = f"skill {skill.skill_id!r}"
            raise CardRejected(
                f"The hub cannot publish this card: {where}: {describe(exc)}"
            ) from exc
    try:
        agent.full_clean(exclude=["slug"], validate_unique=False)
        validate_agent_card(agent, skills)
    except ValidationError as exc:
        raise CardRejected(f"The hub cannot publish this card: {describe(exc)}") from exc
    ids = [skill.skill_id for skill in skills]
    if len(ids) != len(set(ids)):
        raise CardRejected("The card lists two skills with the same id.")


def describe(exc: ValidationError) -> str:
    if hasattr(exc, "error_dict"):
        return " ".join(f"{field}: {' '.join(ms)}" for field, ms in exc.message_dict.items())
    return " ".join(exc.messages)


# -- importing and re-syncing ---------------------------------------------------------------


def check_signature(agent: Agent, card: pb.AgentCard, origin_url: str) -> None:
    """Note on `agent` whether the card is signed by a key the hub trusts; CardRejected when
    CARD_SIGNATURES_REQUIRED is on and it is not."""
    trust = card_trust.verify(card, origin_url)
    try:
        card_trust.require(trust)
    except card_trust.UntrustedCard as exc:
        raise CardRejected(str(exc)) from None
    card_trust.record(agent, trust)


def fetch_trusted(url: str) -> tuple[pb.AgentCard, card_trust.CardTrust]:
    """The card at `url` and what its signature says (for `a2a-remote` agents on save)."""
    try:
        card = fetch_card(url).card
    except CardRejected as exc:
        return pb.AgentCard(), card_trust.unchecked(str(exc))
    return card, card_trust.verify(card, url)


def import_agent(url: str, slug: str, owner: Any) -> Agent:
    """A new `a2a-remote` agent owned by `owner`, made from the card at `url`."""
    remote = fetch_card(url)
    agent = Agent(slug=slug, owner=owner)
    check_signature(agent, remote.card, url)
    skills = apply_card(agent, remote.card, url)
    with transaction.atomic():
        agent.save()
        save_skills(agent, skills)
    return agent


def resync_agent(agent: Agent) -> Agent:
    """Refetch the agent's card and rewrite its card fields and skills, all or nothing."""
    url = sync_state(agent)["card_url"] if is_remote(agent) else ""
    if not url:
        raise CardRejected("This agent does not front a remote card.")
    remote = fetch_card(url)
    check_signature(agent, remote.card, url)
    skills = apply_card(agent, remote.card, url)
    with transaction.atomic():
        agent.skills.all().delete()
        save_skills(agent, skills)
        # Saved last: its post_save signal drops the cached agent with its old skills.
        agent.save(update_fields=[*CARD_FIELDS, *card_trust.TRUST_FIELDS, "executor_kind",
                                  "executor_settings", "updated_at"])  # fmt: skip
    return agent


def save_skills(agent: Agent, skills: list[Skill]) -> None:
    for skill in skills:
        skill.agent = agent
    Skill.objects.bulk_create(skills)


def is_remote(agent: Agent) -> bool:
    return agent.executor_kind == REMOTE_KIND and bool(
        (agent.executor_settings or {}).get("card_url")
    )


def sync_state(agent: Agent) -> dict[str, Any]:
    """The card URL and the time of the last sync (None: never), for the agent's page."""
    settings = agent.executor_settings or {}
    synced_at: datetime | None = None
    with contextlib.suppress(KeyError, ValueError):
        synced_at = datetime.fromisoformat(str(settings["synced_at"]))
    return {"card_url": str(settings.get("card_url") or ""), "synced_at": synced_at}
