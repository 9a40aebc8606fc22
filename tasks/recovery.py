"""Recovery of turns whose process went away: open tasks nobody beats the heart of are failed,
and turns that waited too long for a worker are handed back to be queued again.

Within seconds when the process list (`a2ahub.processes`) says so: a running turn whose
runner missed three beats and is no longer listed as alive is failed, and a queued turn that
no live worker holds while the queue is empty is queued again. Otherwise after
TASK_STALE_SECONDS: a turn of a live process that nobody beats (its run ended without a final
write), or a turn that waited that long in a busy queue.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import redis
from asgiref.sync import async_to_sync
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from a2ahub import processes, worker
from tasks import stopping, writer
from tasks.models import ACTIVE_STATES, Task

logger = logging.getLogger(__name__)

# Each sweep looks at this many tasks at most; the next sweep takes the rest.
BATCH = 500


# The job that runs a queued turn (`tasks.jobs.run_task`), as a worker's beat names it.
RUN_JOB = "tasks.run_task"


def stale_cutoff() -> datetime:
    return timezone.now() - timedelta(seconds=settings.TASK_STALE_SECONDS)


def silent_cutoff() -> datetime:
    """A heartbeat older than this missed three beats: its process is gone from the list."""
    return timezone.now() - timedelta(seconds=processes.expiry())


def live_runners() -> dict[str, datetime] | None:
    """The runners (`host:pid`, as tasks store them) of the processes listed as alive, with
    when each started; None when the list cannot be trusted: Redis is away, or came back
    empty and nobody has beaten into it yet."""
    try:
        beats = processes.live()
    except redis.RedisError:
        return None
    started = {f"{b.host}:{b.pid}": datetime.fromtimestamp(b.started_at, UTC) for b in beats}
    return started or None


def gone(runners: dict[str, datetime], cutoff: datetime) -> Q:
    """Open tasks last heard from before three beats ago whose process is gone: not listed,
    or listed but started since (a container restarted in place has its pid again)."""
    restarted = Q()
    for runner, started_at in runners.items():
        if started_at > cutoff:  # a restart longer ago left nothing newer than `cutoff`
            restarted |= Q(runner=runner, heartbeat_at__lt=started_at)
    return Q(heartbeat_at__lt=silent_cutoff()) & (~Q(runner__in=list(runners)) | restarted)


def fail_stale(cutoff: datetime) -> int:
    """Fail open tasks whose runner has not been heard from since `cutoff`, or that missed
    three beats and whose process is gone (a process that died); how many."""
    dead = Q(heartbeat_at__lt=cutoff)
    if (runners := live_runners()) is not None:
        dead |= gone(runners, cutoff)
    stale = (
        Task.objects.filter(dead, state__in=ACTIVE_STATES)
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
    """The turns (task id, token) whose job is lost: a message may have died with a worker
    that had prefetched it, or with Redis's data. A turn no live worker holds is lost once it
    waited three beats while the queue is empty (an idle worker would have taken it), or
    since before `cutoff` in any case. Each is taken (its wait starts again) before it is
    handed back to be queued; only the job holding the task's token can claim it, so a
    duplicate finds nothing to do."""
    try:
        held = held_turns()
        since = max(cutoff, silent_cutoff()) if worker.jobs_waiting() == 0 else cutoff
    except redis.RedisError:
        return []  # the broker is away too: nothing could be queued; the next sweep will
    taken = []
    for task_id, token in waiting_since(since, held):
        if Task.objects.filter(id=task_id, runner=token).update(heartbeat_at=timezone.now()):
            logger.warning("queued again the turn of task %s", task_id)
            taken.append((str(task_id), token))
    return taken


def waiting_since(cutoff: datetime, held: set[str]) -> list[tuple[str, str]]:
    """Turns (task id, token) queued since before `cutoff` that no live worker holds."""
    waiting = Task.objects.filter(
        state__in=ACTIVE_STATES, runner__startswith="queued:", heartbeat_at__lt=cutoff
    ).values_list("id", "runner")[:BATCH]
    return [(str(task_id), token) for task_id, token in waiting if token not in held]


def held_turns() -> set[str]:
    """The tokens of the turns the live workers hold (running them, or waiting for a thread)."""
    return {
        str(job[1][1])
        for job in processes.held()
        if isinstance(job, list) and len(job) == 2 and job[0] == RUN_JOB and len(job[1]) > 1
    }
