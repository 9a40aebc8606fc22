"""Active health checks of registrations: every live registration's remote card is read, at
most every REGISTRY_HEALTH_SECONDS, through the outbound guard, and what came of it is kept
as its health, last error and check time (the heartbeat of a card-URL registration writes
the same columns when it re-reads the card). Operators see them in the admin and the API."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from executors.remote_cards import CardRejected, read_card
from registry.models import Health, Registration
from registry.shapes import BadSubmission, fetch

# Registrations checked by one run of the job; the rest wait for the next run, oldest first.
BATCH = 20
# Cards read at once.
READERS = 10


def check_due(now: datetime | None = None) -> int:
    """Check the live registrations whose last check is older than the interval; returns how
    many this run checked. Safe to run twice at once: each row is claimed first."""
    every = settings.REGISTRY_HEALTH_SECONDS
    if not every:
        return 0
    now = now or timezone.now()
    stale = Q(checked_at__isnull=True) | Q(checked_at__lte=now - timedelta(seconds=every))
    due = (
        Registration.objects.filter(stale, expires_at__gt=now)
        .order_by(F("checked_at").asc(nulls_first=True))
        .values_list("pk", "checked_at")[:BATCH]
    )
    # A conditional UPDATE: another hub's job that got there first has changed checked_at.
    claimed = [
        pk
        for pk, last in list(due)
        if Registration.objects.filter(pk=pk, checked_at=last).update(checked_at=now)
    ]
    registrations = list(Registration.objects.select_related("agent").filter(pk__in=claimed))
    if not registrations:
        return 0
    # The cards are read at once (no database on those threads): a card that takes its time
    # holds up its own check, not the others'.
    with ThreadPoolExecutor(min(len(registrations), READERS), "a2ahub-health") as readers:
        outcomes = list(readers.map(probe, registrations))
    for registration, (health, error) in zip(registrations, outcomes, strict=True):
        record(registration, health, error, now)
    return len(registrations)


def probe(registration: Registration) -> tuple[str, str]:
    """The registration's health and the reason it is failing, from reading its card."""
    try:
        fetch(card_location(registration), registration.card_etag)  # 304 counts as an answer
    except BadSubmission as exc:
        return Health.FAILING, exc.message
    return Health.OK, ""


def card_location(registration: Registration) -> str:
    """The card URL it registered with; for a card sent in the body, the well-known card at
    the origin of its first interface (where A2A servers publish their card)."""
    if registration.card_url:
        return registration.card_url
    try:
        card = read_card((registration.agent.executor_settings or {}).get("card")).card
    except CardRejected as exc:
        raise BadSubmission(f"The stored card cannot be read: {exc}", "card") from exc
    urls = [i.url for i in card.supported_interfaces if i.url]
    if not urls:
        raise BadSubmission("The card names no interface whose card could be read.", "card")
    origin = urlsplit(urls[0])
    return f"{origin.scheme}://{origin.netloc}/.well-known/agent-card.json"


def record(registration: Registration, health: str, error: str, now: datetime) -> None:
    Registration.objects.filter(pk=registration.pk).update(
        health=health, last_error=error[:500], checked_at=now
    )
