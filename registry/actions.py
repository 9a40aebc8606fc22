"""The only code that changes registrations: register, renew (heartbeat), update, deregister,
and the sweep that expires and purges them. Each keeps the hosted agent in step.

An expired registration's agent is disabled (so it leaves every listing and the A2A doors
stop serving it, with `explain_absence` saying why) and enabled again by the next heartbeat.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from a2ahub import outbound
from agents import card_trust
from agents.models import Agent, Skill, slug_validator
from executors.remote_cards import CARD_FIELDS, REMOTE_KIND, CardRejected, apply_card, save_skills
from registry.models import Health, Registration, index_of
from registry.shapes import BadSubmission, Submission, fetch


@dataclass(frozen=True)
class Caller:
    """Who calls the registry API: `principal` owns what it registers."""

    principal: str
    user: Any = None  # the API key's or token's user, or the signed-in user
    operator: bool = False
    # A key's or token's scopes; None for a session (its user in person, who needs none).
    scopes: frozenset[str] | None = None

    def holds(self, scope: str) -> bool:
        return self.scopes is None or scope in self.scopes


class Refused(Exception):
    """The caller may not do this (status 403), or the slug is taken (409)."""

    def __init__(self, message: str, status: int = 403, field: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.field = field


def may_manage(registration: Registration, caller: Caller) -> bool:
    """The registering principal, another credential of the same user, or an operator."""
    if caller.operator or registration.owner_principal == caller.principal:
        return True
    user_id = getattr(caller.user, "pk", None)
    return user_id is not None and registration.owner_id == user_id


def check_manager(registration: Registration, caller: Caller) -> None:
    if not may_manage(registration, caller):
        raise Refused("Only the principal that registered this agent (or an operator) may do this.")


def ttl_of(requested: Any, current: int | None = None) -> int:
    if requested in (None, ""):
        return current or settings.REGISTRY_DEFAULT_TTL_SECONDS
    try:
        ttl = int(requested)
    except (TypeError, ValueError):
        raise BadSubmission("ttl must be a whole number of seconds.", "ttl") from None
    if not 1 <= ttl <= settings.REGISTRY_MAX_TTL_SECONDS:
        raise BadSubmission(
            f"ttl must be between 1 and {settings.REGISTRY_MAX_TTL_SECONDS} seconds.", "ttl"
        )
    return ttl


def slug_for(submission: Submission, requested: str) -> tuple[str, str]:
    """The agent's slug and the field it came from."""
    if requested:
        slug, where = requested, "agentId"
    elif submission.agent_id:
        slug, where = submission.agent_id, "id"
    else:
        slug, where = slugify(submission.card.name)[:64].strip("-"), "name"
    try:
        slug_validator(slug)
    except ValidationError as exc:
        raise BadSubmission(
            f"{where} cannot be an agent id: {' '.join(exc.messages)}", where
        ) from None
    return slug, where


def check_addresses(submission: Submission) -> None:
    """The interface URLs a card names must pass the SSRF guard (unresolvable names pass:
    the guard checks again when the hub connects)."""
    for url in submission.interface_urls():
        try:
            outbound.check_url(url, allow_unresolved=True)
        except outbound.UnsafeURL as exc:
            raise BadSubmission(
                f"The hub may not call {url}: {exc}.", "supportedInterfaces.url"
            ) from None


# -- register, update, renew, deregister ---------------------------------------------------


IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s]+")
IDENTIFIER_MAX = Registration._meta.get_field("identifier").max_length or 500


def identifier_of(raw: Any) -> str:
    """The AI Catalog identifier a publisher gives (an absolute URI, `urn:air:...` say), or
    "" when none; the catalog keeps it exactly as given."""
    if raw in (None, ""):
        return ""
    if not isinstance(raw, str) or len(raw) > IDENTIFIER_MAX or not IDENTIFIER.fullmatch(raw):
        raise BadSubmission(
            f"identifier must be an absolute URI (such as urn:air:<your domain>:a2a:<name>) of "
            f"at most {IDENTIFIER_MAX} characters.",
            "identifier",
        )
    return raw


def check_identifier(identifier: str, registration: Registration | None) -> None:
    """An entry's identifier is its name in every catalog: one artifact's, never changed."""
    if not identifier:
        return
    if registration is not None and registration.identifier not in ("", identifier):
        raise Refused(f"This agent is listed as {registration.identifier!r}; its identifier "
                      "does not change.", 409, "identifier")  # fmt: skip
    taken = Registration.objects.filter(identifier=identifier)
    if registration is not None:
        taken = taken.exclude(pk=registration.pk)
    if taken.exists():
        raise Refused(f"The identifier {identifier!r} names another agent.", 409, "identifier")


def register(
    submission: Submission,
    caller: Caller,
    ttl: Any = None,
    agent_id: str = "",
    identifier: str = "",
) -> tuple[Registration, bool]:
    """A new registration (created True), or the caller's own one renewed with this card."""
    slug, where = slug_for(submission, agent_id)
    check_addresses(submission)
    seconds = ttl_of(ttl)
    existing = Registration.objects.filter(agent__slug=slug).select_related("agent").first()
    if existing is not None:
        check_manager(existing, caller)
        check_identifier(identifier, existing)
        if identifier and not existing.identifier:
            existing.identifier = identifier
        return update(existing, submission, caller, seconds), False
    check_identifier(identifier, None)
    if Agent.objects.filter(slug=slug).exists():
        raise Refused(f"The agent id {slug!r} is taken.", 409, where)
    agent = Agent(slug=slug, owner=caller.user, executor_kind=REMOTE_KIND)
    skills = fill(agent, submission)
    registration = Registration(
        owner_principal=caller.principal, owner=caller.user, ttl_seconds=seconds,
        expires_at=timezone.now() + timedelta(seconds=seconds), identifier=identifier,
    )  # fmt: skip
    describe(registration, submission)
    with transaction.atomic():
        agent.save()
        save_skills(agent, skills)
        registration.agent = agent
        registration.save()
    return registration, True


def update(
    registration: Registration, submission: Submission, caller: Caller, ttl: Any = None
) -> Registration:
    """The registered agent, rewritten from a new card, and renewed."""
    check_manager(registration, caller)
    check_addresses(submission)
    seconds = ttl_of(ttl, registration.ttl_seconds)
    agent = registration.agent
    skills = fill(agent, submission)
    describe(registration, submission)
    with transaction.atomic():
        replace_skills(agent, skills)
        renew_rows(registration, seconds)
    return registration


def renew(registration: Registration, caller: Caller, ttl: Any = None) -> Registration:
    """A heartbeat: the registration lives another TTL and its agent is served again. A card
    registered by URL is re-read when its ETag changed (a failed read is noted as health)."""
    check_manager(registration, caller)
    seconds = ttl_of(ttl, registration.ttl_seconds)
    changed = recheck_card(registration) if registration.card_url else None
    # Judged (its signature's keys fetched) before the transaction, which holds no wait.
    skills = fill(registration.agent, changed) if changed is not None else []
    with transaction.atomic():
        if changed is not None:
            describe(registration, changed)
            replace_skills(registration.agent, skills)
        renew_rows(registration, seconds)
    return registration


def deregister(registration: Registration, caller: Caller) -> None:
    """The agent leaves the hub at once, with its registration and its tasks."""
    check_manager(registration, caller)
    registration.agent.delete()


def revoke(registration: Registration) -> None:
    """An operator's removal (the admin's action): the same as a deregistration."""
    registration.agent.delete()


# -- the hosted agent and the registration's description ------------------------------------


def fill(agent: Agent, submission: Submission) -> list[Skill]:
    """The agent's fields from the card (unsaved), or BadSubmission naming what the hub cannot
    publish. Cards sent in the body are kept and used by the remote executor; a card URL is
    fetched again by each turn, as imported agents are."""
    if submission.card_url:
        agent.executor_settings = {}
    else:
        agent.executor_settings = {"card": submission.document}
    check_signature(agent, submission)
    try:
        return apply_card(agent, submission.card, submission.card_url)
    except CardRejected as exc:
        raise BadSubmission(str(exc), "card") from exc


def check_signature(agent: Agent, submission: Submission) -> None:
    """Note whether the card is signed by a key the hub trusts: its keys are looked for at
    the card URL's origin, or for a card in the body, at its first interface's."""
    origin = submission.card_url or next(iter(submission.interface_urls()), "")
    trust = card_trust.verify(submission.card, origin)
    try:
        card_trust.require(trust)
    except card_trust.UntrustedCard as exc:
        raise BadSubmission(str(exc), "signatures") from None
    card_trust.record(agent, trust)


def describe(registration: Registration, submission: Submission) -> None:
    card = submission.card
    tags = list(dict.fromkeys([*submission.tags, *(t for s in card.skills for t in s.tags)]))
    registration.source = submission.source
    registration.protocol_version = submission.version
    registration.card_url = submission.card_url
    registration.card_etag = submission.etag
    registration.category = submission.category
    registration.tags = tags
    registration.tag_index = index_of(tags)
    registration.skill_index = index_of([n for s in card.skills for n in (s.id, s.name)])
    registration.protocol_index = index_of(submission.protocols)


def replace_skills(agent: Agent, skills: list[Skill]) -> None:
    agent.skills.all().delete()
    save_skills(agent, skills)
    agent.enabled = True
    # Saved last: its post_save signal drops the cached agent with its old skills.
    agent.save(update_fields=[*CARD_FIELDS, *card_trust.TRUST_FIELDS, "executor_kind",
                              "executor_settings", "enabled", "updated_at"])  # fmt: skip


def renew_rows(registration: Registration, seconds: int) -> None:
    now = timezone.now()
    registration.ttl_seconds = seconds
    registration.renewed_at = now
    registration.expires_at = now + timedelta(seconds=seconds)
    registration.save()
    agent = registration.agent
    if not agent.enabled:
        agent.enabled = True
        agent.save(update_fields=["enabled", "updated_at"])


def recheck_card(registration: Registration) -> Submission | None:
    """The remote card if it changed since the last read (None: unchanged or unreadable)."""
    registration.checked_at = timezone.now()
    try:
        changed = fetch(registration.card_url, registration.card_etag)
    except BadSubmission as exc:
        registration.health, registration.last_error = Health.FAILING, exc.message[:500]
        return None
    registration.health, registration.last_error = Health.OK, ""
    if changed is not None and changed.etag and changed.etag == registration.card_etag:
        return None  # a server that ignores If-None-Match but keeps its ETag
    return changed


# -- expiry -----------------------------------------------------------------------------------


def expire_due(now: datetime | None = None) -> int:
    """Stop serving the agents whose registration expired; safe to run twice."""
    now = now or timezone.now()
    return Agent.objects.filter(registration__expires_at__lte=now, enabled=True).update(
        enabled=False, updated_at=now
    )


def purge_due(now: datetime | None = None) -> int:
    """Delete the agents whose registration expired longer than the grace period ago."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.REGISTRY_PURGE_AFTER_SECONDS)
    doomed = Agent.objects.filter(registration__expires_at__lte=cutoff)
    count = doomed.count()
    doomed.delete()
    return count


def explain_absence(slug: str) -> str | None:
    """agents.lookup's hook: an expired registration's agent is away, and says until when."""
    expired = (
        Registration.objects.filter(agent__slug=slug, agent__enabled=False)
        .values_list("expires_at", flat=True)
        .first()
    )
    if expired is None or expired > timezone.now():
        return None
    return (
        f"The registration of agent {slug!r} expired at {iso(expired)}; the agent is served "
        "again after its owner's next heartbeat."
    )


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
