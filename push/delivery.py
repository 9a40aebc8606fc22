"""One delivery attempt: build the body in the config's version, sign it, send it through
the guarded HTTP module, and classify the answer (delivered, retry later, or gone)."""

from __future__ import annotations

import email.utils
import json
import random
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from a2ahub.signing import issuer, sign_delivery
from push.models import Delivery, DeliveryAttempt
from tasks import v01_json
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


def build_body(delivery: Delivery) -> tuple[bytes, str]:
    """1.0 receivers get the event as a StreamResponse; 0.3 receivers get the Task, and 0.1
    receivers too, in 0.1's shape under the id their client gave it."""
    if delivery.config.protocol_version == V1:
        return json.dumps(delivery.event.payload).encode(), "application/a2a+json"
    task = load_task(delivery.config.task, None)
    if delivery.config.protocol_version == V01:
        body = v01_json.task(to_json(task), delivery.config.task.client_id)
        return json.dumps(body).encode(), "application/json"
    return json.dumps(task_json(task, "0.3")).encode(), "application/json"


def build_headers(delivery: Delivery, body: bytes, content_type: str) -> dict[str, str]:
    config = delivery.config
    headers = {
        "Content-Type": content_type,
        "webhook-id": str(delivery.id),
        "A2A-Push-Signature": sign_delivery(body, str(delivery.id), str(config.task_id), issuer()),
    }
    if config.auth_scheme:
        headers["Authorization"] = f"{config.auth_scheme} {config.auth_credentials}".strip()
    if config.token:
        headers["X-A2A-Notification-Token"] = config.token
    return headers


def send(delivery: Delivery) -> Result:
    from a2ahub import outbound

    body, content_type = build_body(delivery)
    headers = build_headers(delivery, body, content_type)
    started, clock = timezone.now(), time.monotonic()
    try:
        response = outbound.post(
            delivery.config.url, content=body, headers=headers,
            timeout=settings.PUSH_TIMEOUT_SECONDS,
        )  # fmt: skip
        result = classify(response.status_code, response.headers, response.content)
    except Exception as exc:  # every failure to reach the receiver is worth a retry
        result = Result(RETRY, error=f"{type(exc).__name__}: {exc}"[:1000])
    record_attempt(delivery, started, clock, result)
    return result


def classify(status: int, headers: object, content: bytes) -> Result:
    excerpt = content[:300].decode("utf-8", "replace")
    if 200 <= status < 300:
        return Result(DELIVERED, status, excerpt=excerpt)
    if status == 410:
        return Result(GONE, status, error="the receiver answered 410 Gone", excerpt=excerpt)
    retry_after = parse_retry_after(
        getattr(headers, "get", lambda _k, _d=None: None)("Retry-After")
    )
    return Result(RETRY, status, error=f"HTTP {status}", excerpt=excerpt, retry_after=retry_after)


def parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max((when - timezone.now()).total_seconds(), 0.0)


def record_attempt(delivery: Delivery, started: datetime, clock: float, result: Result) -> None:
    DeliveryAttempt.objects.create(
        delivery=delivery, started_at=started,
        duration_ms=int((time.monotonic() - clock) * 1000), status_code=result.status,
        error=result.error, response_excerpt=result.excerpt,
    )  # fmt: skip


def next_attempt(delivery: Delivery, result: Result) -> datetime | None:
    """When to try again, or None when the retry horizon is passed (give up)."""
    # Past the cap the exponent need not grow: 2 ** 1024 and up no longer fits a float, and a
    # long outage with a low cap (minutes apart for days) gets that many failures.
    doublings = min(max(delivery.attempts - 1, 0), MAX_DOUBLINGS)
    base = settings.PUSH_RETRY_BASE_SECONDS * 2**doublings
    delay = min(base, settings.PUSH_RETRY_MAX_SECONDS) * random.uniform(0.5, 1.5)
    if result.retry_after is not None:
        delay = min(max(delay, result.retry_after), settings.PUSH_RETRY_MAX_SECONDS)
    when = timezone.now() + timedelta(seconds=delay)
    horizon = delivery.created_at + timedelta(seconds=settings.PUSH_RETRY_HORIZON_SECONDS)
    return None if when > horizon else when
