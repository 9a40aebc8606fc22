"""The dashboard's numbers, gathered in one call (`gather`) for the admin's home page and for
the live page's refreshes.

It must stay fast with millions of stored tasks, so nothing here counts a whole table:
finished tasks come from the rollup tables (at most an hour of minutes and a day of hours)
plus the minutes since the last rollup (a short range of the partial index on finished
tasks); open tasks are capped counts on the `(state, heartbeat_at)` index; lists are LIMITed
ranges of an index; push queues are read from the first pending deliveries by due time.
Each function says which it is. The query count is fixed, whatever the data.
"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from a2ahub import health, processes
from agents.models import Agent
from console import rollup, sends
from console.models import BUCKET_FIELDS, TURN_BUCKETS, FinishedHour, FinishedMinute, RollupMark
from push.models import Delivery, DeliveryState, PushNotificationConfig
from registry.models import Registration
from tasks.admin import STUCK_MINUTES
from tasks.models import ACTIVE_STATES, OPEN_STATES, Task, TaskState

LIST_ROWS = 10
AGENT_ROWS = 100  # the catalog is small; past this many the table shows the busiest
# Counts stop here ("10,000+"): past it an operator learns no more from the exact number, and
# each count reads at most this many index entries however many rows there are.
COUNT_CAP = 10_000
OPEN_BY_AGENT_CAP = 10_000  # open tasks grouped by agent: the first ones found
STUCK_SCAN_CAP = 10_000
PUSH_SCAN_CAP = 10_000  # pending deliveries looked at, soonest due first
# The minutes not rolled up yet are read from the task table, but never more than these:
# a rollup job that stopped shows as a warning, not as a slow page.
LIVE_TAIL_CAP = timedelta(minutes=10)
CHART_MINUTES = 60
EXPIRING_WITHIN = timedelta(hours=24)


@dataclass
class Counted:
    label: str
    count: int
    share: float = 0.0  # of the largest in its group, 0..1, for bars
    cap: int = 0  # the count stopped here, if it was capped

    @property
    def shown(self) -> str:
        return f"{self.count:,}+" if self.cap and self.count >= self.cap else f"{self.count:,}"

    @property
    def percent(self) -> int:
        return round(self.share * 100)


@dataclass
class MinuteBar:
    minute: datetime
    ok: int = 0  # completed
    other: int = 0  # failed, canceled, rejected (finished tasks); 0 for sends


@dataclass
class AgentRow:
    agent: Agent
    finished_hour: int = 0
    finished_day: int = 0
    failed_hour: int = 0  # failed or rejected
    failed_day: int = 0
    open_now: int = 0
    p50: str = "—"  # turn time, last hour
    p95: str = "—"


@dataclass
class PushQueue:
    config_id: int
    task_id: str
    agent: str
    host: str
    pending: int
    retrying: int
    attempts: int
    oldest_due: datetime | None
    active: bool
    last_error: str


@dataclass
class Dashboard:
    now: datetime
    rolled_until: datetime | None
    rollup_behind: bool
    finished_hour: list[Counted] = field(default_factory=list)
    finished_day: list[Counted] = field(default_factory=list)
    open_now: list[Counted] = field(default_factory=list)
    finished_per_minute: list[MinuteBar] = field(default_factory=list)
    sends_per_minute: list[MinuteBar] = field(default_factory=list)
    agents: list[AgentRow] = field(default_factory=list)
    stuck_count: int = 0
    stuck: list[Task] = field(default_factory=list)
    working: list[Task] = field(default_factory=list)
    recent: list[Task] = field(default_factory=list)
    push_queues: list[PushQueue] = field(default_factory=list)
    push_retrying: int = 0
    push_abandoned_day: int = 0
    processes: list[processes.Beat] = field(default_factory=list)
    health: dict[str, str] = field(default_factory=dict)
    expiring: list[Registration] = field(default_factory=list)
    registrations: int = 0
    embedded: bool = False
    rollup_every: float = 0.0
    count_cap: int = COUNT_CAP
    stuck_minutes: int = 5

    @property
    def stuck_filter(self) -> int | None:
        """The task list's "stuck" filter showing these tasks, if it has this threshold."""
        return self.stuck_minutes if self.stuck_minutes in STUCK_MINUTES else None

    @property
    def finished_hour_total(self) -> int:
        return sum(c.count for c in self.finished_hour)

    @property
    def sends_hour_total(self) -> int:
        return sum(bar.ok for bar in self.sends_per_minute)

    @property
    def chart_max(self) -> int:
        return max([1, *(bar.ok + bar.other for bar in self.finished_per_minute)])

    @property
    def sends_max(self) -> int:
        return max([1, *(bar.ok for bar in self.sends_per_minute)])


def gather(now: datetime | None = None) -> Dashboard:
    now = now or timezone.now()
    mark = RollupMark.objects.filter(id=1).values_list("rolled_until", flat=True).first()
    windows = Windows(now, mark)
    board = Dashboard(now, mark, windows.behind, stuck_minutes=settings.CONSOLE_STUCK_MINUTES)
    finished = windows.finished()
    board.finished_hour = by_state(finished.hour)
    board.finished_day = by_state(finished.day)
    board.finished_per_minute = finished.per_minute
    board.sends_per_minute = [MinuteBar(m, ok=n) for m, n in sends.per_minute(now, CHART_MINUTES)]
    board.open_now = open_by_state()
    board.agents = agent_rows(finished, open_by_agent())
    board.stuck_count, board.stuck = stuck_tasks(now)
    board.working = working_tasks()
    board.recent = recently_finished()
    board.push_queues = push_queues()
    board.push_retrying = capped_count(pending_deliveries().filter(attempts__gt=0))
    board.push_abandoned_day = abandoned_since(now - timedelta(days=1))
    board.processes = processes.live()
    board.health = reachability()
    board.registrations, board.expiring = expiring_registrations(now)
    board.embedded = settings.EMBEDDED
    board.rollup_every = rollup_interval()
    return board


def rollup_interval() -> float:
    """How often the minute rollup runs: by Celery beat, or, embedded, by the web process's
    maintenance thread, which looks for due jobs once a heartbeat."""
    every = float(settings.CONSOLE_ROLLUP_SECONDS)
    return max(every, float(settings.TASK_HEARTBEAT_SECONDS)) if settings.EMBEDDED else every


def expiring_registrations(now: datetime) -> tuple[int, list[Registration]]:
    """The registry's live registrations (a capped count) and the first to expire within
    EXPIRING_WITHIN: a range of the index on `expires_at`."""
    live = Registration.objects.filter(expires_at__gt=now)
    soon = live.filter(expires_at__lte=now + EXPIRING_WITHIN).select_related("agent")
    return capped_count(live), list(soon.order_by("expires_at")[:LIST_ROWS])


def capped_count(queryset: QuerySet[Any]) -> int:
    return queryset.order_by().values("pk")[:COUNT_CAP].count()


# -- finished tasks: rollups, plus the minutes since ---------------------------------------


@dataclass
class Finished:
    hour: list[dict[str, Any]]  # rows of agent_id, state, count, turns_*
    day: list[dict[str, Any]]
    per_minute: list[MinuteBar]


class Windows:
    """The last hour (60 minutes, the current one last) and the last day (24 hours, the
    current one last), each made of rollup rows up to the mark and the live tail after it."""

    def __init__(self, now: datetime, mark: datetime | None) -> None:
        self.now = now
        self.current = rollup.floor_minute(now)
        self.hour_start = self.current - (CHART_MINUTES - 1) * rollup.MINUTE
        self.day_start = rollup.floor_hour(now) - 23 * rollup.HOUR
        floor = rollup.floor_minute(now - LIVE_TAIL_CAP)
        rolled = min(mark, self.current) if mark else None
        self.tail_start = max(rolled, floor) if rolled else floor
        self.rolled_end = min(rolled, self.tail_start) if rolled else self.day_start
        # Minutes between the mark and the tail are in neither: the numbers fall short.
        self.behind = rolled is None or rolled < floor

    def finished(self) -> Finished:
        tail = rollup.count_finished(self.tail_start, self.current + rollup.MINUTE, True)
        hour = self.hour_rows() + tail
        day = self.day_rows() + tail
        return Finished(merge(hour), merge(day), self.per_minute(tail))

    def hour_rows(self) -> list[dict[str, Any]]:
        # At most 60 minutes of rows: a range of FinishedMinute's unique index.
        minutes = rollup.rows_of(FinishedMinute, self.hour_start, self.rolled_end)
        return rollup.summed(minutes, "agent_id", "state")

    def day_rows(self) -> list[dict[str, Any]]:
        # At most 24 hours of rows, then the minutes of the hour the mark is in.
        whole_hours_end = max(self.day_start, rollup.floor_hour(self.rolled_end))
        hours = rollup.rows_of(FinishedHour, self.day_start, whole_hours_end)
        minutes = rollup.rows_of(FinishedMinute, whole_hours_end, self.rolled_end)
        return rollup.summed(hours, "agent_id", "state") + rollup.summed(
            minutes, "agent_id", "state"
        )

    def per_minute(self, tail: list[dict[str, Any]]) -> list[MinuteBar]:
        bars = {
            self.hour_start + i * rollup.MINUTE: MinuteBar(self.hour_start + i * rollup.MINUTE)
            for i in range(CHART_MINUTES)
        }
        minutes = rollup.rows_of(FinishedMinute, self.hour_start, self.rolled_end)
        rows = rollup.summed(minutes, "period_start", "state")
        for row in [*rows, *({"period_start": r["minute"], **r} for r in tail)]:
            bar = bars.get(row["period_start"])
            if bar is None:
                continue
            if row["state"] == TaskState.COMPLETED:
                bar.ok += int(row["count"])
            else:
                bar.other += int(row["count"])
        return list(bars.values())


def merge(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of the same agent and state added together."""
    merged: dict[tuple[int, str], dict[str, Any]] = {}
    for row in rows:
        key = (row["agent_id"], row["state"])
        into = merged.setdefault(key, {"agent_id": key[0], "state": key[1]} | dict.fromkeys(
            rollup.SUMMED, 0) | dict.fromkeys(rollup.EXTREMES))  # fmt: skip
        for name in rollup.SUMMED:
            into[name] += int(row[name] or 0)
        into["turn_min"] = extreme(min, into["turn_min"], row.get("turn_min"))
        into["turn_max"] = extreme(max, into["turn_max"], row.get("turn_max"))
    return list(merged.values())


def extreme(pick: Any, *values: float | None) -> float | None:
    """The least or greatest of the values that are known."""
    known = [value for value in values if value is not None]
    return float(pick(known)) if known else None


def by_state(rows: list[dict[str, Any]]) -> list[Counted]:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["state"]] = counts.get(row["state"], 0) + int(row["count"])
    return shares([Counted(state, counts[state]) for state in sorted(counts)])


def shares(items: list[Counted]) -> list[Counted]:
    top = max([1, *(item.count for item in items)])
    for item in items:
        item.share = item.count / top
    return items


def percentile(
    buckets: list[int],
    fraction: float,
    shortest: float | None = None,
    longest: float | None = None,
) -> str:
    """The range the turn at `fraction` of them is sure to lie in: its bucket of the
    histogram, narrowed by the shortest and longest turns seen ("12 s" for one 12 s turn,
    from 10.5 to 14 s for several; "—" without turns)."""
    total = sum(buckets)
    if not total:
        return "—"
    seen, lower = 0, 0.0
    for count, bound in zip(buckets, TURN_BUCKETS, strict=True):
        seen += count
        if seen >= fraction * total:
            low = max(lower, shortest) if shortest is not None else lower
            high = min(bound, longest) if longest is not None else bound
            return turn_range(low, high, lower)
        lower = bound
    return "—"


def turn_range(low: float, high: float, bucket_floor: float) -> str:
    if high == float("inf"):
        return f"> {low:g} s"
    if round(high - low, 1) == 0:
        return f"{round(high, 1):g} s"
    if low == 0 and bucket_floor == 0:
        return f"≤ {round(high, 1):g} s"
    return f"{round(low, 1):g}\u2013{round(high, 1):g} s"


# -- open tasks: capped counts on the (state, heartbeat_at) index ---------------------------


def open_by_state() -> list[Counted]:
    # One capped count per open state, as the /metrics gauges do.
    return shares(
        [
            Counted(state, capped_count(Task.objects.filter(state=state)), cap=COUNT_CAP)
            for state in OPEN_ORDER
        ]
    )


OPEN_ORDER = [TaskState.SUBMITTED, TaskState.WORKING, TaskState.INPUT_REQUIRED,
              TaskState.AUTH_REQUIRED]  # fmt: skip
assert set(OPEN_ORDER) == OPEN_STATES


def open_by_agent() -> dict[int, int]:
    # Counted here over the first OPEN_BY_AGENT_CAP open tasks the index gives, not all of
    # them. Grouped in SQL over `pk IN (... LIMIT)`, PostgreSQL read the whole table instead.
    first = Task.objects.filter(state__in=sorted(OPEN_STATES)).order_by()
    return dict(Counter(first.values_list("agent_id", flat=True)[:OPEN_BY_AGENT_CAP]))


def stuck_tasks(now: datetime) -> tuple[int, list[Task]]:
    """Active tasks whose status has not moved for CONSOLE_STUCK_MINUTES: a capped count,
    and the oldest among the first STUCK_SCAN_CAP of them."""
    since = now - timedelta(minutes=settings.CONSOLE_STUCK_MINUTES)
    stuck = Task.objects.filter(state__in=sorted(ACTIVE_STATES), status_timestamp__lt=since)
    # The oldest are picked here from the first ones found (a subquery of them made PostgreSQL
    # read the whole table), then read by primary key.
    first = stuck.order_by().values_list("pk", "status_timestamp")[:STUCK_SCAN_CAP]
    oldest = [pk for pk, _ in heapq.nsmallest(LIST_ROWS, first, key=lambda row: row[1])]
    tasks = Task.objects.filter(pk__in=oldest).select_related("agent").order_by("status_timestamp")
    return capped_count(stuck), list(tasks) if oldest else []


def working_tasks() -> list[Task]:
    # The newest heartbeats: the end of the (state, heartbeat_at) index for "working".
    working = Task.objects.filter(state=TaskState.WORKING).select_related("agent")
    return list(working.order_by("-heartbeat_at")[:LIST_ROWS])


def recently_finished() -> list[Task]:
    # The end of the partial index on finished tasks' updated_at.
    finished = Task.objects.filter(state__in=rollup.FINISHED_STATES).select_related("agent")
    return list(finished.order_by("-updated_at")[:LIST_ROWS])


# -- agents ----------------------------------------------------------------------------------


def agent_rows(finished: Finished, open_counts: dict[int, int]) -> list[AgentRow]:
    busy = {row["agent_id"] for row in finished.day} | set(open_counts)
    agents = {agent.pk: agent for agent in Agent.objects.order_by("slug")[:AGENT_ROWS]}
    missing = busy - set(agents)
    if missing:
        agents |= {a.pk: a for a in Agent.objects.filter(pk__in=sorted(missing)[:AGENT_ROWS])}
    rows = {pk: AgentRow(agent, open_now=open_counts.get(pk, 0)) for pk, agent in agents.items()}
    add_finished(rows, finished.hour, "hour")
    add_finished(rows, finished.day, "day")
    ordered = sorted(rows.values(), key=lambda r: (-r.finished_day, -r.open_now, r.agent.slug))
    return ordered[:AGENT_ROWS]


def add_finished(rows: dict[int, AgentRow], finished: list[dict[str, Any]], window: str) -> None:
    buckets: dict[int, list[int]] = {}
    extremes: dict[int, tuple[float | None, float | None]] = {}
    for row in finished:
        agent_row = rows.get(row["agent_id"])
        if agent_row is None:
            continue
        count = int(row["count"])
        failed = count if row["state"] in (TaskState.FAILED, TaskState.REJECTED) else 0
        setattr(agent_row, f"finished_{window}", getattr(agent_row, f"finished_{window}") + count)
        setattr(agent_row, f"failed_{window}", getattr(agent_row, f"failed_{window}") + failed)
        sums = buckets.setdefault(row["agent_id"], [0] * len(BUCKET_FIELDS))
        for i, name in enumerate(BUCKET_FIELDS):
            sums[i] += int(row[name] or 0)
        low, high = extremes.get(row["agent_id"], (None, None))
        extremes[row["agent_id"]] = (
            extreme(min, low, row.get("turn_min")),
            extreme(max, high, row.get("turn_max")),
        )
    if window == "hour":
        for pk, sums in buckets.items():
            seen = extremes.get(pk, (None, None))
            rows[pk].p50 = percentile(sums, 0.5, *seen)
            rows[pk].p95 = percentile(sums, 0.95, *seen)


# -- push queues: the first pending deliveries by due time (the `delivery_due` index) --------


def pending_deliveries() -> QuerySet[Delivery]:
    return Delivery.objects.filter(state=DeliveryState.PENDING)


def push_queues() -> list[PushQueue]:
    """The queues (one per config) with the most retrying, then pending, deliveries among
    the first PUSH_SCAN_CAP pending ones due."""
    # Grouped here, not in SQL: over `pk IN (... LIMIT)` PostgreSQL read the whole table.
    first = pending_deliveries().order_by("next_attempt_at")
    queues: dict[int, dict[str, Any]] = {}
    for config_id, attempts, due in first.values_list("config_id", "attempts", "next_attempt_at")[
        :PUSH_SCAN_CAP
    ]:
        queue = queues.setdefault(
            config_id,
            {"config_id": config_id, "pending": 0, "retrying": 0, "attempts": 0, "oldest_due": due},
        )
        queue["pending"] += 1
        queue["retrying"] += attempts > 0
        queue["attempts"] = max(queue["attempts"], attempts)
        queue["oldest_due"] = min(queue["oldest_due"], due)
    order = sorted(queues.values(), key=lambda q: (-q["retrying"], -q["pending"], q["config_id"]))
    rows = order[:LIST_ROWS]
    configs = PushNotificationConfig.objects.filter(
        pk__in=[r["config_id"] for r in rows]
    ).order_by()
    fields = ("id", "task_id", "url", "active", "last_error", "task__agent__slug")
    by_id: dict[int, dict[str, Any]] = {c["id"]: dict(c) for c in configs.values(*fields)}
    return [queue_of(row, by_id.get(row["config_id"], {})) for row in rows]


def queue_of(row: dict[str, Any], config: dict[str, Any]) -> PushQueue:
    # Only the host of a webhook's URL: its path or query may carry a secret.
    return PushQueue(
        config_id=row["config_id"], task_id=str(config.get("task_id", "")),
        agent=config.get("task__agent__slug") or "", host=urlsplit(config.get("url") or "").hostname
        or "", pending=row["pending"], retrying=row["retrying"], attempts=row["attempts"] or 0,
        oldest_due=row["oldest_due"], active=bool(config.get("active")),
        last_error=(config.get("last_error") or "")[:200],
    )  # fmt: skip


def abandoned_since(since: datetime) -> int:
    # A range of the `delivery_due` index (state, next_attempt_at), capped.
    abandoned = Delivery.objects.filter(state=DeliveryState.ABANDONED, next_attempt_at__gte=since)
    return capped_count(abandoned)


# -- reachability: the readiness checks of a2ahub.health -------------------------------------


def reachability() -> dict[str, str]:
    parts = {"database": health.database()}
    parts["redis"] = health.redis_ping() if settings.REDIS_URL else health.EMBEDDED
    return parts
