"""Receivers that answer again. A delivery's receiver is its config URL's origin (scheme, host,
port): when an engine sees one succeed after failures, the deliveries waiting there for their
retry are made due at once (`make_due`) and the engines woken, so a backlog drains in seconds
rather than each delivery at the end of its own backoff.

Only when deliveries are due changes: the claims still take each queue whole, one holder at a
time, sent in order with one request in flight, up to PUSH_CONCURRENCY queues per engine, and a
delivery is still marked delivered by its holder only. Many configs of one tenant (or several)
aimed at one host get no more from one success than PUSH_CONCURRENCY queues made due, and only
when the receiver's answers in that batch were mostly successes: a receiver that fails again
stops the chain of successes that makes the next queues due.

That first success must come soon after the receiver is back, also with no new webhook to
find it: while a receiver has deliveries waiting after failures, an engine keeps one of its
retries there (a probe, `Probes`) no further off than PUSH_PROBE_SECONDS, or than the
receiver's Retry-After when it asks for longer. Only the retry is earlier: the probe is the
head of its queue, claimed and sent like any other. One queue per receiver and engine gets it
(the first to fail where that engine had no probe), so many configs aimed at one host add one
request per PUSH_PROBE_SECONDS per engine, not one per config.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Min
from django.utils import timezone

from push import delivery
from push.claims import Item
from push.models import Delivery, DeliveryState

# Origins an engine remembers as failing, and their next probes (the oldest forgotten first): a
# first success there is news too, not only the success of a delivery that failed itself.
FAILING_KEPT = 4096


@dataclass
class Tally:
    successes: int = 0
    failures: int = 0
    recovered: bool = False  # a success after failures, the delivery's own or the receiver's


class Answers:
    """What receivers answered one engine since its last batch, and which were failing."""

    def __init__(self) -> None:
        self.failing: dict[str, None] = {}  # ordered: a bounded set, oldest first
        self.tallies: dict[str, Tally] = {}

    def add(self, origin: str, delivered: bool, attempts: int) -> None:
        """One attempt's answer at `origin`: delivered or failed (to be retried); `attempts`
        counts it."""
        tally = self.tallies.setdefault(origin, Tally())
        if not delivered:
            tally.failures += 1
            self.failing.pop(origin, None)
            self.failing[origin] = None
            if len(self.failing) > FAILING_KEPT:
                del self.failing[next(iter(self.failing))]
            return
        tally.successes += 1
        if attempts > 1 or origin in self.failing:
            tally.recovered = True

    def take(self) -> list[str]:
        """The origins back since the last call: a success after failures, and more successes
        than failures there (a receiver that fails again still waits for its retries)."""
        back = [
            origin
            for origin, tally in self.tallies.items()
            if origin and tally.recovered and tally.successes > tally.failures
        ]
        self.tallies = {}
        for origin in back:
            self.failing.pop(origin, None)
        return back


class Probes:
    """Which delivery is one engine's probe at each failing receiver, and when it is due."""

    def __init__(self) -> None:
        # Ordered: a bounded map, the oldest noted first.
        self.due: dict[str, tuple[uuid.UUID, datetime]] = {}

    def retry_at(self, origin: str, failed: Item, result: delivery.Result) -> datetime | None:
        """When the `failed` delivery at `origin` is tried again (None: given up): as a probe
        when it is this engine's probe there or the engine has none to come, else on its own
        schedule. A probe not tried again here PUSH_PROBE_SECONDS after it was due has run its
        course (it succeeded, its queue ended, or another engine took the queue over)."""
        now = timezone.now()
        noted = self.due.get(origin)
        late = timedelta(seconds=settings.PUSH_PROBE_SECONDS)
        probe = bool(origin) and (noted is None or noted[0] == failed.id or noted[1] + late <= now)
        when = delivery.next_attempt(failed, result, probe=probe)
        if probe:
            self.due.pop(origin, None)
            if when is not None:
                self.due[origin] = (failed.id, when)
                if len(self.due) > FAILING_KEPT:  # forgetting one costs an extra probe at most
                    del self.due[next(iter(self.due))]
        return when


def make_due(origin: str) -> int:
    """Make the waiting deliveries of up to PUSH_CONCURRENCY queues at `origin` (the oldest
    first) due now, each queue whole; how many. Rows another transaction holds (a batch that
    records their queue's outcome) are skipped, not waited for: engines running this at once
    never wait on each other, and that batch decides when its queue is due."""
    now = timezone.now()
    waiting = Delivery.objects.filter(
        state=DeliveryState.PENDING, next_attempt_at__gt=now, config__active=True
    )
    queues = (
        waiting.filter(config__origin=origin)
        .values("config_id")
        .annotate(oldest=Min("created_at"))
        .order_by("oldest")
        .values("config_id")[: settings.PUSH_CONCURRENCY]
    )
    rows = waiting.filter(config_id__in=queues).order_by()
    with transaction.atomic():
        if connection.vendor == "postgresql":
            rows = Delivery.objects.filter(
                pk__in=rows.select_for_update(skip_locked=True, of=("self",)).values("pk")
            )
        return rows.update(next_attempt_at=now)


def make_due_at(origins: list[str]) -> int:
    return sum(make_due(origin) for origin in origins)
