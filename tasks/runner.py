"""Running executors: inline on the web process's event loop, or from a worker job.

Both ways share one path (`execute`): the executor drives a TaskUpdater, errors fail the
task, and a turn that ends without a final or interrupted state fails too. Each process keeps
a table of the turns it runs, so a cancel (heard locally or over Redis) can stop them, and a
maintenance thread beats their hearts and fails tasks whose runner died.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.db import (
    DEFAULT_DB_ALIAS,
    InterfaceError,
    OperationalError,
    close_old_connections,
    connections,
)
from django.utils import timezone

from a2ahub import asyncdb, background, bus, schedule, tracing
from a2ahub.errors import A2AError
from a2ahub.outages import DATABASE_AWAY
from agents.kinds import executor_class
from agents.lookup import agent_by_id
from agents.models import Agent
from tasks import changes, events, reading, sql
from tasks.changes import NewTask
from tasks.executor import Executor, RequestContext
from tasks.models import ACTIVE_STATES, Task, TaskState
from tasks.stopping import CONTROL_CHANNEL, RUNNING, request_stop, running_lock
from tasks.updater import TaskUpdater
from tasks.wire import message_to_pb

logger = logging.getLogger(__name__)

RUNNER_ID = f"{socket.gethostname()}:{os.getpid()}"


@dataclass
class Run:
    executor: Executor
    context: RequestContext
    updater: TaskUpdater
    loop: asyncio.AbstractEventLoop
    job: asyncio.Task[None] | None = None

    def stop(self) -> None:
        """Runs on the run's own loop: let the executor clean up, then end its turn."""
        if self.job is None or self.job.done():
            return
        self.updater.stopped = True
        background.keep(asyncio.ensure_future(self._cancel()))

    async def _cancel(self) -> None:
        try:
            await asyncio.wait_for(self.executor.cancel(self.context, self.updater), 5)
        except Exception:
            logger.exception("executor cancel of task %s failed", self.context.task_id)
        finally:
            if self.job is not None:
                self.job.cancel()


async def start(
    agent: Agent,
    spec: NewTask,
    context: RequestContext,
    state: TaskState,
    stored: bool,
    streamed: bool = False,
    sequence: int = 0,
) -> TaskUpdater:
    """Start an executor's turn on this loop and return its updater (whose `settled` future
    resolves when the task reaches a final or interrupted state, or the agent replies).

    A streamed turn stores its task as early as it can, since its stream opens with it:
    before the executor runs, unless the executor may answer with a single Message instead
    (then at its first act). `sequence`: a stored task's last event."""
    updater = TaskUpdater(spec, stored=stored, state=state, runner=RUNNER_ID)
    updater.last_sequence = sequence
    updater.streamed = streamed
    updater.snapshots = not streamed
    if stored:
        updater.known = changes.Known(spec.context_id, len(context.history))
    run = Run(
        executor_class(agent.executor_kind)(agent), context, updater, asyncio.get_running_loop()
    )
    if streamed and not stored and not run.executor.replies_with_messages:
        await updater.flush()
        if updater.stopped:
            updater.ended.set_result(None)
            return updater  # not written: `settled` holds the error
    with running_lock:
        RUNNING[updater.task_id] = run
    ensure_maintenance()
    run.job = background.keep(asyncio.create_task(execute(run)))
    return updater


async def execute(run: Run) -> None:
    if tracing.enabled:
        agent = run.context.agent
        kind = agent.executor_kind
        attributes = {"a2a.task.id": run.updater.task_id, "a2a.agent": agent.slug,
                      "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent.slug,
                      "gen_ai.agent.id": str(agent.pk), "a2a.executor": kind}  # fmt: skip
        with tracing.span(f"a2a.executor {kind}", attributes=attributes):
            await executed(run)
            tracing.annotate(a2a__task__state=str(run.updater.state))
        return
    await executed(run)


async def executed(run: Run) -> None:
    updater = run.updater
    limit = run.context.agent.task_timeout_seconds
    try:
        # In this task (wait_for would start another, one more loop turn before the agent runs).
        async with asyncio.timeout(limit):
            await run.executor.execute(run.context, updater)
    except TimeoutError:
        logger.warning("task %s ran past its limit of %s s", updater.task_id, limit)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(run.executor.cancel(run.context, updater), 5)
        await end_with_failure(updater, f"The task ran longer than its limit of {limit} seconds.")
    except asyncio.CancelledError:
        logger.info("task %s stopped", updater.task_id)
    except A2AError as exc:
        await end_with_failure(updater, exc.message)
    except Exception as exc:
        reference = uuid.uuid4().hex[:12]
        logger.exception("executor of task %s failed (reference %s)", updater.task_id, reference)
        await end_with_failure(updater, f"The agent failed (reference {reference}): {exc}")
    finally:
        try:
            await finish(updater)
        finally:
            with running_lock:
                RUNNING.pop(updater.task_id, None)
            updater.ended.set_result(None)


async def end_with_failure(updater: TaskUpdater, text: str) -> None:
    if not updater.is_over:
        await updater.fail(text)


async def finish(updater: TaskUpdater) -> None:
    """Write what is left; a turn that stopped half-way fails rather than hang in working,
    and one the database's outage stopped fails for that reason once it is back."""
    if updater.unwritten is not None:
        await updater.write_failure()
        return
    if updater.stopped:
        updater.settle(changes.Outcome(TaskState.CANCELED, 0))
        if updater.streamed:
            await hand_over_missed(updater)
        return
    if not updater.is_over:
        await updater.fail("The agent ended its turn without finishing the task.")
    await updater.flush()


async def hand_over_missed(updater: TaskUpdater) -> None:
    """A streamed turn stopped by someone else (a cancel, recovery) hands what they wrote to
    the stream, which listens to this process alone (`events.subscribe`)."""
    if not updater.stored:
        return
    try:
        # Its connection given back: this thread may serve a long stream next.
        missed = await sync_to_async(reading.released)(
            reading.read_events, updater.task_id, updater.last_sequence
        )
    except DATABASE_AWAY as exc:
        # The stream reads them itself once the turn has ended (or ends with this error).
        logger.warning("task %s: could not read what stopped it: %s", updater.task_id, exc)
        return
    if missed:
        events.deliver_local(updater.task_id, missed)


@dataclass
class Claim:
    """A stored task that a job has claimed, and what its turn needs."""

    agent: Agent
    spec: NewTask
    context: RequestContext
    state: TaskState
    known: changes.Known
    sequence: int  # the task's last event


_job_threads = threading.local()
_job_loop: asyncio.AbstractEventLoop | None = None
_job_loop_lock = threading.Lock()


def job_loop() -> asyncio.AbstractEventLoop:
    """The event loop this process runs its worker jobs on, on a thread of its own, kept for
    the life of the process: its database pool and Redis client stay with it from one job to
    the next, shared by every job thread (a loop of each thread's own would hold a connection
    of each, and idle ones between jobs)."""
    global _job_loop
    with _job_loop_lock:
        if _job_loop is None:
            _job_loop = asyncio.new_event_loop()
            threading.Thread(target=_job_loop.run_forever, name="a2ahub-jobs", daemon=True).start()
        return _job_loop


def close_job_connections(timeout: float = 10) -> None:
    """Close the job loop's database connections (a worker shutting down; a test, whose
    database goes with it); the next job's first statement opens them again."""
    if _job_loop is not None:
        asyncio.run_coroutine_threadsafe(asyncdb.close(), _job_loop).result(timeout)


def job_database_thread() -> ThreadPoolExecutor:
    """The one thread this thread's jobs call the ORM on, kept with its connection from one
    job to the next: the ORM must not run on the loop, and Django's shared thread for
    thread-sensitive calls would queue every job thread's writes behind each other."""
    executor: ThreadPoolExecutor | None = getattr(_job_threads, "database", None)
    if executor is None:
        executor = _job_threads.database = ThreadPoolExecutor(1, "a2ahub-job-db")
    return executor


def run_job(task_id: str, token: str, reply_to: str = "") -> None:
    """A worker job's turn, on the process's job loop (`job_loop`), for a Celery worker's
    thread or one of a web process's in-process pool, which waits for it. Its statements go to
    the loop's connections, as a request's do in the web process; the ORM calls it makes go
    through sync_to_async to the calling thread's database thread."""
    work = run_on_job_loop(task_id, token, reply_to, job_database_thread())
    asyncio.run_coroutine_threadsafe(work, job_loop()).result()


async def run_on_job_loop(
    task_id: str, token: str, reply_to: str, database: ThreadPoolExecutor
) -> None:
    asyncdb.enabled.set(True)
    asyncdb.pool_size.set(settings.WORKER_DB_CONNECTIONS)
    async with ThreadSensitiveContext(executor=database):
        try:
            await run_stored(task_id, token, reply_to)
        finally:
            # As at the end of a request: a connection the database dropped (a restart)
            # would fail every later job here. (The pool keeps a good one.)
            await sync_to_async(close_old_connections)()


async def run_stored(task_id: str, token: str, reply_to: str = "") -> None:
    """A worker job's turn: claim the stored task (once), then execute it."""
    claim = await sync_to_async(claim_or_give_way)(task_id, token)
    if claim is None:
        events.send_reply(reply_to, task_id, b"")
        return
    await run_claimed(claim, reply_to)


async def run_claimed(claim: Claim, reply_to: str) -> None:
    """Execute the claimed turn; when it ends, tell the waiting web process (`reply_to`),
    with the task as it ended so it need not read it again."""
    updater = await start(
        claim.agent, claim.spec, claim.context, claim.state, stored=True, sequence=claim.sequence
    )
    # The turn has not run yet (start only schedules it): these hold from its first write.
    updater.known = claim.known
    snapshot = b""
    try:
        settled = await asyncio.shield(updater.settled)
        if isinstance(settled, changes.Outcome) and settled.snapshot is not None:
            snapshot = settled.snapshot.SerializeToString()
    finally:
        events.send_reply(reply_to, updater.task_id, snapshot)
    with running_lock:
        run = RUNNING.get(updater.task_id)
    if run is not None and run.job is not None:
        await asyncio.gather(run.job, return_exceptions=True)


class ClaimFailed(Exception):
    """The database could not be asked for the claim (it restarts, say): nothing changed, and
    the job may be offered again."""


def claim_or_give_way(task_id: str, token: str) -> Claim | None:
    try:
        connections[DEFAULT_DB_ALIAS].ensure_connection()
        return claim_and_load(task_id, token)
    except (OperationalError, InterfaceError) as exc:
        raise ClaimFailed(f"could not claim task {task_id}: {exc}") from exc


def claim_and_load(task_id: str, token: str) -> Claim | None:
    """Claim the task (only the job holding its token may) and read its messages: one
    statement on PostgreSQL; the agent comes from the per-process cache."""
    claimed = sql.claim_task(task_id, token, RUNNER_ID, timezone.now())
    if claimed is None:
        logger.info("task %s was claimed already or is over; nothing to do", task_id)
        return None
    task = claimed.task
    agent = agent_by_id(task["agent_id"])
    assert agent is not None  # its tasks go with it
    key = uuid.UUID(task_id)
    history = [message_to_pb(m) for m in claimed.messages]
    # A task claimed with its first message alone has had no turn: nothing else is written.
    artifacts = {} if len(history) == 1 else reading.read_artifacts(key)
    spec = NewTask(
        agent_id=agent.pk, owner=task["owner"], context_id=task["context_id"],
        message=history[-1], protocol_version=task["protocol_version"],
        execution_mode=task["execution_mode"], id=key,
    )  # fmt: skip
    context = RequestContext(
        task_id=task_id, context_id=spec.context_id, message=history[-1], agent=agent,
        protocol_version=spec.protocol_version, history=history, metadata=task["metadata"],
        is_continuation=len(history) > 1,
    )  # fmt: skip
    known = changes.Known(
        spec.context_id, len(history), artifacts, task["push_enabled"], task["metadata"],
        list(history),
    )  # fmt: skip
    return Claim(agent, spec, context, TaskState(task["state"]), known, task["last_sequence"])


# -- maintenance: heartbeats, recovery, and stop requests from other processes ------------

_maintenance_lock = threading.Lock()
_maintenance_stopping = threading.Event()
_maintenance_thread: threading.Thread | None = None
_control_heard = False  # the stop requests' subscription: once a process, not once a thread


def ensure_maintenance() -> None:
    global _maintenance_thread, _control_heard
    with _maintenance_lock:
        if _maintenance_thread is not None:
            return
        _maintenance_thread = threading.Thread(
            target=maintenance_loop, name="a2ahub-maintenance", daemon=True
        )
        _maintenance_thread.start()
        if not _control_heard:
            _control_heard = True
            bus.get().subscribe_in_background(CONTROL_CHANNEL, stop_requested)


def stop_requested(body: bytes | str) -> None:
    """A stop request on the bus: another process's comes as bytes, this process's own (a
    recovery job here, say) as it was published."""
    request_stop(body.decode() if isinstance(body, bytes) else body)


def stop_maintenance(timeout: float = 10) -> None:
    """End the maintenance thread and wait for it, its connections given back (a process
    shutting down; a test, whose database access ends with it). The next turn run here
    starts it again."""
    global _maintenance_thread
    with _maintenance_lock:
        thread = _maintenance_thread
        if thread is None:
            return
        _maintenance_stopping.set()
        thread.join(timeout)
        if not thread.is_alive():
            _maintenance_thread = None
            _maintenance_stopping.clear()


def maintenance_loop() -> None:
    while not _maintenance_stopping.wait(settings.TASK_HEARTBEAT_SECONDS):
        try:
            beat()
            if settings.EMBEDDED:
                # Distributed, Celery beat sends the periodic jobs (recovery, the push sweep).
                schedule.run_due()
        except Exception:
            # This thread must outlive any failure (a database restart, say), or heartbeats
            # and recovery stop for the life of the process.
            logger.exception("task maintenance failed")
        finally:
            release_connections()


def release_connections() -> None:
    """Give the connection back between beats rather than hold it while asleep."""
    try:
        connections.close_all()
    except Exception:
        logger.exception("could not close the maintenance thread's connections")


def beat() -> None:
    with running_lock:
        ids = [task_id for task_id, run in RUNNING.items() if run.updater.stored]
    if ids:
        Task.objects.filter(id__in=ids, state__in=ACTIVE_STATES).update(
            heartbeat_at=timezone.now(), runner=RUNNER_ID
        )
