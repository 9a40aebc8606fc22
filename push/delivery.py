"""One delivery attempt's pieces: the body in the config's version, the signed headers, the
answer classified (delivered, retry later, or gone), and when to try again."""

from __future__ import annotations

import email.utils
import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from django.conf import settings
from django.utils import timezone

from a2ahub import numerals
from a2ahub.signing import Signer
from push.claims import Item, Target
from tasks import v01_json
from tasks.models import Task
from tasks.reading import load_task
from tasks.wire import V01, V1, task_json, to_json

DELIVERED, RETRY, GONE = "delivered", "retry", "gone"
MAX_DOUBLINGS = 60  # far past any cap: PUSH_RETRY_BASE_SECONDS is at least 0.01 s


@dataclass
class Result:
    kind: str
    status: int | None = None
    error: str = ""
    excerpt: str = ""
    retry_after: float | None = None


def needs_task(target: Target) -> bool:
    """Whether the body is the task as it is now (read from the database when sent)."""
    return target.protocol_version != V1


def event_body(item: Item) -> tuple[bytes, str]:
    """A 1.0 receiver gets the event as a StreamResponse: its stored JSON as it is."""
    return item.payload.encode(), "application/a2a+json"


def task_body(target: Target) -> tuple[bytes, str]:
    """0.3 receivers get the Task as it is now, and 0.1 receivers too, in 0.1's shape under
    the id their client gave it."""
    task = Task.objects.get(id=target.task_id)
    if target.protocol_version == V01:
        body = v01_json.task(to_json(load_task(task, None)), target.client_id)
        return json.dumps(body).encode(), "application/json"
    return json.dumps(task_json(load_task(task, None), "0.3")).encode(), "application/json"


def build_headers(
    target: Target, item: Item, body: bytes, content_type: str, signer: Signer, issuer: str
) -> dict[str, str]:
    headers = {
        "Content-Type": content_type,
        "webhook-id": str(item.id),
        "A2A-Push-Signature": signer.sign(
            body, str(item.id), target.task_id, issuer, target.url, target.config_id
        ),
    }
    if target.auth_scheme:
        headers["Authorization"] = f"{target.auth_scheme} {target.auth_credentials}".strip()
    if target.token:
        headers["X-A2A-Notification-Token"] = target.token
    return headers


def classify(status: int, headers: Mapping[str, str], content: bytes) -> Result:
    excerpt = content[:300].decode("utf-8", "replace")
    if 200 <= status < 300:
        return Result(DELIVERED, status, excerpt=excerpt)
    if status == 410:
        return Result(GONE, status, error="the receiver answered 410 Gone", excerpt=excerpt)
    retry_after = parse_retry_after(headers.get("Retry-After"))
    return Result(RETRY, status, error=f"HTTP {status}", excerpt=excerpt, retry_after=retry_after)


def parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    if (seconds := numerals.whole_number(value)) is not None:
        return float(seconds)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max((when - timezone.now()).total_seconds(), 0.0)


class Attempted(Protocol):
    attempts: int
    created_at: datetime


def next_attempt(delivery: Attempted, result: Result, probe: bool = False) -> datetime | None:
    """When to try again, or None when the retry horizon is passed (give up); `attempts`
    counts the attempt that just failed. A probe (`push.receivers.Probes`) waits no longer
    than PUSH_PROBE_SECONDS, or than the receiver's Retry-After if it asked for longer."""
    # Past the cap the exponent need not grow: 2 ** 1024 and up no longer fits a float, and a
    # long outage with a low cap (minutes apart for days) gets that many failures.
    doublings = min(max(delivery.attempts - 1, 0), MAX_DOUBLINGS)
    base = settings.PUSH_RETRY_BASE_SECONDS * 2**doublings
    delay = min(base, settings.PUSH_RETRY_MAX_SECONDS) * random.uniform(0.5, 1.5)
    if result.retry_after is not None:
        delay = min(max(delay, result.retry_after), settings.PUSH_RETRY_MAX_SECONDS)
    if probe:
        delay = min(delay, max(settings.PUSH_PROBE_SECONDS, result.retry_after or 0.0))
    when = timezone.now() + timedelta(seconds=delay)
    horizon = delivery.created_at + timedelta(seconds=settings.PUSH_RETRY_HORIZON_SECONDS)
    return None if when > horizon else when
