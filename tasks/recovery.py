"""Recovery of turns whose process went away: open tasks nobody beats the heart of are failed,
and turns that waited too long for a worker are handed back to be queued again."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from asgiref.sync import async_to_sync
from django.conf import settings
from django.utils import timezone

from tasks import stopping, writer
from tasks.models import ACTIVE_STATES, Task

logger = logging.getLogger(__name__)

# Each sweep looks at this many tasks at most; the next sweep takes the rest.
BATCH = 500


def stale_cutoff() -> datetime:
    return timezone.now() - timedelta(seconds=settings.TASK_STALE_SECONDS)


def fail_stale(cutoff: datetime) -> int:
    """Fail open tasks whose runner has not been heard from since `cutoff` (a process that
    died); how many."""
    stale = (
        Task.objects.filter(state__in=ACTIVE_STATES, heartbeat_at__lt=cutoff)
        .exclude(id__in=stopping.running_here())
        # A job still waiting for a free worker ("queued:<token>") has no runner that could
        # have died; a busy queue is not a crash (`lost_turns` looks after those).
        .exclude(runner__startswith="queued:")
        .values_list("id", flat=True)[:BATCH]
    )
    failed = 0
    for task_id in list(stale):
        reason = (
            "The process running this task stopped answering (it ended, or could not reach "
            "the database); the task was failed by recovery."
        )
        if async_to_sync(writer.fail_stale)(task_id, reason):
            logger.warning("recovered stale task %s", task_id)
            failed += 1
    return failed


def lost_turns(cutoff: datetime) -> list[tuple[str, str]]:
    """The turns (task id, token) that waited for a worker since before `cutoff`: a message
    may have died with a worker that had prefetched it. Each is taken (its wait starts again)
    before it is handed back to be queued; only the job holding the task's token can claim
    it, so a duplicate finds nothing to do."""
    waiting = Task.objects.filter(
        state__in=ACTIVE_STATES, runner__startswith="queued:", heartbeat_at__lt=cutoff
    ).values_list("id", "runner")[:BATCH]
    taken = []
    for task_id, token in list(waiting):
        if Task.objects.filter(id=task_id, runner=token).update(heartbeat_at=timezone.now()):
            logger.warning("queued again the turn of task %s", task_id)
            taken.append((str(task_id), token))
    return taken
