"""Finished tasks counted by minute and by hour (`FinishedMinute`, `FinishedHour`), and the
one query over the task table that both the rollup job and the dashboard's last minutes use.

The job runs every `CONSOLE_ROLLUP_SECONDS`. Each run counts the minutes that ended since the
last one (and the two before, again: a write stamped in a minute may commit just after it),
then recounts the hours those minutes fall in from the minute rows. It is safe to run twice:
runs take the mark row's lock in turn, and each replaces the rows of the periods it counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import (
    Aggregate,
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    Max,
    Min,
    Q,
    QuerySet,
    Sum,
)
from django.db.models.functions import TruncMinute
from django.utils import timezone

from console.models import (
    BUCKET_FIELDS,
    TURN_BUCKETS,
    FinishedHour,
    FinishedMinute,
    FinishedTasks,
    RollupMark,
)
from tasks.models import TERMINAL_STATES, Task

MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
RECOUNT_MINUTES = 2
# The first run, and one after the job was stopped for long, looks back a day (the longest
# window the dashboard shows): one range of the index, in the background, and no more.
FIRST_LOOK_BACK = timedelta(days=1)
KEEP_MINUTES = timedelta(hours=2)
KEEP_HOURS = timedelta(days=2)
# Exactly the states of the task table's partial index `task_finished_updated`, in its order,
# so PostgreSQL can prove the index covers the query.
FINISHED_STATES = sorted(TERMINAL_STATES)


def floor_minute(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


def floor_hour(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def finished_between(start: datetime, end: datetime) -> QuerySet[Task]:
    """Tasks that reached a final state in [start, end): a range of the partial index on
    finished tasks' `updated_at` (a finished task is never written again), so the work is
    that of the range, not of the table."""
    return Task.objects.filter(
        state__in=FINISHED_STATES, updated_at__gte=start, updated_at__lt=end
    ).order_by()


def bucket_counts() -> dict[str, Any]:
    """`Count` annotations of the turn-time histogram, one per bucket."""
    turn = ExpressionWrapper(F("updated_at") - F("created_at"), output_field=DurationField())
    counts: dict[str, Any] = {}
    lower: timedelta | None = None
    for name, bound in zip(BUCKET_FIELDS, TURN_BUCKETS, strict=True):
        upper = None if bound == float("inf") else timedelta(seconds=bound)
        condition = Q()
        if lower is not None:
            condition &= Q(turn__gt=lower)
        if upper is not None:
            condition &= Q(turn__lte=upper)
        counts[name] = Count("pk", filter=condition)
        lower = upper
    return {"turn": turn, "counts": counts}


def count_finished(start: datetime, end: datetime, by_minute: bool) -> list[dict[str, Any]]:
    """One aggregate row per (minute, if asked,) agent and final state of the tasks finished
    in [start, end), with `count` and the histogram's fields."""
    histogram = bucket_counts()
    rows = finished_between(start, end).annotate(turn=histogram["turn"])
    keys = ["agent_id", "state"]
    if by_minute:
        rows = rows.annotate(minute=TruncMinute("updated_at"))
        keys.insert(0, "minute")
    extremes = {"shortest": Min("turn"), "longest": Max("turn")}
    found = rows.values(*keys).annotate(count=Count("pk"), **histogram["counts"], **extremes)
    return [in_seconds(row) for row in found]


def in_seconds(row: dict[str, Any]) -> dict[str, Any]:
    """A counted row with its shortest and longest turn as the models keep them."""
    shortest, longest = row.pop("shortest"), row.pop("longest")
    row["turn_min"] = shortest.total_seconds() if shortest is not None else None
    row["turn_max"] = longest.total_seconds() if longest is not None else None
    return row


SUMMED = ("count", *BUCKET_FIELDS)
EXTREMES: dict[str, type[Aggregate]] = {"turn_min": Min, "turn_max": Max}


def summed(rows: QuerySet[Any], *keys: str) -> list[dict[str, Any]]:
    """Rollup rows summed by `keys` (their shortest and longest turns kept), with the models'
    field names (an annotation may not take the name of a field, so the sums are renamed on
    the way out)."""
    sums: dict[str, Aggregate] = {f"sum_{name}": Sum(name) for name in SUMMED}
    sums |= {f"ext_{name}": aggregate(name) for name, aggregate in EXTREMES.items()}
    return [
        {key: row[key] for key in keys}
        | {name: row[f"sum_{name}"] or 0 for name in SUMMED}
        | {name: row[f"ext_{name}"] for name in EXTREMES}
        for row in rows.order_by().values(*keys).annotate(**sums)
    ]


@dataclass
class Run:
    start: datetime
    end: datetime
    minutes: int = 0
    hours: list[datetime] = field(default_factory=list)


def roll_up(now: datetime | None = None) -> Run | None:
    """Count the minutes that ended since the last run; None when another run holds the mark
    or nothing has ended since."""
    now = now or timezone.now()
    end = floor_minute(now)
    with transaction.atomic():
        mark = locked_mark()
        start = first_minute(mark.rolled_until, end)
        if start >= end:
            return None
        run = Run(start, end)
        run.minutes = replace_minutes(start, end)
        run.hours = replace_hours(start, end)
        if mark.rolled_until is None or end > mark.rolled_until:
            mark.rolled_until = end
            mark.save(update_fields=["rolled_until"])
        prune(now, end)
    return run


def locked_mark() -> RollupMark:
    try:
        with transaction.atomic():
            RollupMark.objects.get_or_create(id=1)
    except IntegrityError:
        pass  # another run made it meanwhile
    return RollupMark.objects.select_for_update().get(id=1)


def first_minute(rolled_until: datetime | None, end: datetime) -> datetime:
    if rolled_until is None:
        return floor_hour(end - FIRST_LOOK_BACK)
    return max(rolled_until - RECOUNT_MINUTES * MINUTE, end - FIRST_LOOK_BACK)


def replace_minutes(start: datetime, end: datetime) -> int:
    FinishedMinute.objects.filter(period_start__gte=start, period_start__lt=end).delete()
    rows = [
        FinishedMinute(period_start=row.pop("minute"), **row)
        for row in count_finished(start, end, by_minute=True)
    ]
    FinishedMinute.objects.bulk_create(rows)
    return len(rows)


def replace_hours(start: datetime, end: datetime) -> list[datetime]:
    """Recount every hour that [start, end) touches from its minute rows."""
    hours = []
    hour = floor_hour(start)
    while hour < end:
        minutes = FinishedMinute.objects.filter(
            period_start__gte=hour, period_start__lt=hour + HOUR
        )
        FinishedHour.objects.filter(period_start=hour).delete()
        FinishedHour.objects.bulk_create(
            FinishedHour(period_start=hour, **row) for row in summed(minutes, "agent_id", "state")
        )
        hours.append(hour)
        hour += HOUR
    return hours


def prune(now: datetime, rolled_until: datetime) -> None:
    # An hour still being counted needs all its minutes, however far behind the job is.
    keep_from = min(now - KEEP_MINUTES, floor_hour(rolled_until))
    FinishedMinute.objects.filter(period_start__lt=keep_from).delete()
    FinishedHour.objects.filter(period_start__lt=now - KEEP_HOURS).delete()


def rows_of(model: type[FinishedTasks], start: datetime, end: datetime) -> QuerySet[Any]:
    """A model's rows of the periods starting in [start, end): a range of its unique index,
    which begins with `period_start`."""
    return model._default_manager.filter(period_start__gte=start, period_start__lt=end)
