"""Retention: finished tasks older than `TASK_RETENTION_DAYS` are deleted with every row that
hangs from them (messages, artifacts, events, and the rows of higher layers, through their
cascades), in short batches so that no delete holds its locks for long. Also the loop that
`push.retention` prunes its deliveries with, and the capped count the admin shows."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from tasks.models import TERMINAL_STATES, Task

# Every minute, at most this many batches: a backlog is worked off over several runs, and one
# run stays short (embedded, it runs on the thread that beats the runners' hearts).
PRUNE_EVERY_SECONDS = 60.0
MAX_BATCHES = 25
# The admin counts up to one more than this, never the whole table.
COUNT_LIMIT = 10_000

# Sorted, so the query's IN list is the one in the partial index `task_finished_updated`.
FINISHED_STATES = sorted(TERMINAL_STATES)


def cutoff(days: int) -> datetime:
    return timezone.now() - timedelta(days=days)


def prunable_tasks(days: int) -> QuerySet[Task]:
    """Finished tasks not updated for `days` days, oldest first (the partial index's order)."""
    return Task.objects.filter(state__in=FINISHED_STATES, updated_at__lt=cutoff(days)).order_by(
        "updated_at"
    )


def prune_in_batches(candidates: QuerySet, batch_size: int, max_batches: int) -> list[int]:
    """Delete the rows `candidates` selects, `batch_size` at a time, each batch in its own
    transaction, for at most `max_batches` batches; the number deleted in each batch."""
    done: list[int] = []
    while len(done) < max_batches:
        with transaction.atomic():
            # Locked as selected: a second run at the same time takes other rows.
            batch = candidates.select_for_update(skip_locked=True).values_list("pk", flat=True)
            ids = list(batch[:batch_size])
            if ids:
                candidates.model._default_manager.filter(pk__in=ids).delete()
        if ids:
            done.append(len(ids))
        if len(ids) < batch_size:
            break
    return done


def prune_tasks(batch_size: int | None = None, max_batches: int = MAX_BATCHES) -> list[int]:
    """One run of task retention; nothing when it is off."""
    if not settings.TASK_RETENTION_DAYS:
        return []
    size = batch_size or settings.RETENTION_BATCH_SIZE
    return prune_in_batches(prunable_tasks(settings.TASK_RETENTION_DAYS), size, max_batches)


def count_capped(queryset: QuerySet) -> int:
    """How many rows `queryset` selects, counting no further than one past `COUNT_LIMIT`."""
    return queryset.order_by()[: COUNT_LIMIT + 1].count()


def pending_text(count: int, what: tuple[str, str], days: int) -> str:
    """The admin's line on what the next runs (of RETENTION_BATCH_SIZE rows a batch) delete;
    `what` is the noun, singular and plural."""
    number = f"More than {COUNT_LIMIT:,}" if count > COUNT_LIMIT else f"{count:,}"
    per_run = settings.RETENTION_BATCH_SIZE * MAX_BATCHES
    when = " at the next run" if count <= per_run else f", up to {per_run:,} a run"
    noun = what[0] if count == 1 else what[1]
    age = f"{days:,} day" if days == 1 else f"{days:,} days"
    return f"{number} {noun} older than {age} will be pruned{when}."


def tasks_pending_text() -> str:
    days = settings.TASK_RETENTION_DAYS
    if not days:
        return "Finished tasks are kept forever (TASK_RETENTION_DAYS is 0)."
    count = count_capped(prunable_tasks(days))
    return pending_text(count, ("finished task", "finished tasks"), days)
