"""Active health checks of registrations: every live registration's remote card is read, at
most every REGISTRY_HEALTH_SECONDS, through the outbound guard, and what came of it is kept
as its health, last error and check time (the heartbeat of a card-URL registration writes
the same columns when it re-reads the card). Operators see them in the admin and the API."""

from __future__ import annotations

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
    checked = 0
    for pk, last in list(due):
        # A conditional UPDATE: another hub's job that got there first has changed checked_at.
        if Registration.objects.filter(pk=pk, checked_at=last).update(checked_at=now):
            check(Registration.objects.select_related("agent").get(pk=pk), now)
            checked += 1
    return checked


def check(registration: Registration, now: datetime) -> None:
    try:
        fetch(card_location(registration), registration.card_etag)  # 304 counts as an answer
    except BadSubmission as exc:
        record(registration, Health.FAILING, exc.message, now)
        return
    record(registration, Health.OK, "", now)


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
