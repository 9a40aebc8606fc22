"""The TaskUpdater an executor drives; it hands its changes to the writer in batches.

Changes an executor makes without pausing are written together: an updater call only queues
the change and schedules a flush, which runs as soon as the executor awaits something else
(or ends). So a fast agent's whole turn is one transaction, and a slow one's progress is
written as it happens. A task not stored yet is created by the first flush; an executor that
replies with a single Message never creates one.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable
from typing import Any

from a2a.types import a2a_pb2 as pb
from django.utils import timezone

from a2ahub import big_bodies
from a2ahub.errors import InvalidAgentResponseError, internal_error
from a2ahub.outages import DATABASE_AWAY
from tasks import writer
from tasks.changes import (
    ArtifactChange,
    Change,
    Known,
    NewTask,
    Outcome,
    Plan,
    StatusChange,
    TransitionRefused,
    agent_text,
    check_transition,
    snapshot_of,
)
from tasks.models import Task, TaskState
from tasks.stores import release_after_write as release_after_write
from tasks.wire import ENDING_STATES, task_to_pb

logger = logging.getLogger(__name__)
S = TaskState

Content = str | pb.Message | Iterable[pb.Part] | None

# Where a status message carries structured progress (`TaskUpdater.report_progress`): its
# metadata's `PROGRESS_KEY` holds `{"done": 3, "total": 12}`. Pages draw a bar from it, never
# from the text, which is the agent's own wording.
PROGRESS_KEY = "a2ahub/progress"

# A write the database refused because it was away (a restart, a failover) is tried again
# after each of these pauses, for RETRY_SECONDS at most (an attempt may itself wait for a
# pool's connection): a blip costs the turn a pause, not its life. Past that the turn
# ends, failed for that reason.
RETRY_PAUSES = (0.1, 0.25, 0.5, 1.0, 1.0, 1.0, 1.0)
RETRY_SECONDS = 5.0
# How long a turn the outage ended goes on trying to write its failure, and how often: the
# task says why it failed rather than wait for recovery to call its process dead.
FAILURE_WRITE_SECONDS = 300.0
FAILURE_WRITE_EVERY = 0.5
OUTAGE_REASON = (
    "The task failed because the hub's database was unavailable: its progress could not be written."
)


def agent_message(content: Content) -> pb.Message | None:
    if content is None:
        return None
    if isinstance(content, pb.Message):
        return content
    if isinstance(content, str):
        return agent_text(content)
    message = pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_AGENT)
    message.parts.extend(content)
    return message


class TaskUpdater:
    def __init__(self, spec: NewTask, stored: bool, state: TaskState, runner: str) -> None:
        self.spec = spec
        self.task_id = str(spec.id)
        self.context_id = spec.context_id
        self.stored = stored
        self.state = state  # as the executor has made it, queued changes included
        self.stored_state = state  # as the database has it
        self.last_sequence = 0  # of the events this updater wrote (0: none yet)
        # What this updater knows of the stored task (None: read it on the first write).
        self.known: Known | None = None
        self.runner = runner
        # A streamed turn not stored yet stores its task at the agent's first change, before
        # the agent goes on: the stream shows the task then, not when a fast agent's whole
        # turn is written. (Stopped by someone else, it hands the stream what they wrote.)
        self.streamed = False
        # Whether the turn's end must carry the whole task (a blocking send or a job's reply
        # answers with it); a stream's does not.
        self.snapshots = True
        self.buffer: list[Change] = []
        self.stopped = False
        # The failure of a turn the database's outage ended, not written yet (the stream of
        # the turn ends with its event, and the runner writes it once the database is back).
        self.unwritten: StatusChange | None = None
        self.unwritten_event: dict[str, Any] | None = None
        self.settled: asyncio.Future[Outcome | pb.Message] = (
            asyncio.get_running_loop().create_future()
        )
        # Set by the runner once the turn is over here: all it wrote has been handed on.
        self.ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._flushing: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    # -- what executors call -------------------------------------------------------------

    async def start_work(self, message: Content = None) -> None:
        await self._push(StatusChange(S.WORKING, agent_message(message)))

    async def update_status(self, message: Content) -> None:
        """Report progress: the task stays working, with this as its status message."""
        await self._push(StatusChange(S.WORKING, agent_message(message)))

    async def report_progress(self, done: float, total: float, text: str = "") -> None:
        """Report progress as numbers (`done` of `total`) with a line of text for people; the
        status message's metadata carries the numbers (`PROGRESS_KEY`)."""
        message = agent_message(text or f"{done:g} of {total:g} done.")
        assert message is not None
        message.metadata.update({PROGRESS_KEY: {"done": done, "total": total}})
        await self.update_status(message)

    async def add_artifact(
        self,
        parts: Iterable[pb.Part] | str,
        *,
        artifact_id: str = "",
        name: str = "",
        description: str = "",
        append: bool = False,
        last_chunk: bool = False,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        artifact = pb.Artifact(
            artifact_id=artifact_id or uuid.uuid4().hex, name=name, description=description
        )
        if isinstance(parts, str):
            artifact.parts.add(text=parts)
        else:
            # protobuf copies each part: for a big body, on a thread.
            parts = list(parts)
            await big_bodies.off_loop(big_bodies.size_of_all(parts), artifact.parts.extend, parts)
        if metadata:
            artifact.metadata.update(metadata)
        await self._push(ArtifactChange(artifact, append=append, last_chunk=last_chunk))
        return artifact.artifact_id

    async def require_input(self, message: Content) -> None:
        await self._push(StatusChange(S.INPUT_REQUIRED, agent_message(message)))

    async def require_auth(self, message: Content) -> None:
        await self._push(StatusChange(S.AUTH_REQUIRED, agent_message(message)))

    async def complete(self, message: Content = None) -> None:
        await self._push(StatusChange(S.COMPLETED, agent_message(message)))

    async def fail(self, message: Content = None) -> None:
        await self._push(StatusChange(S.FAILED, agent_message(message)))

    async def reject(self, message: Content = None) -> None:
        await self._push(StatusChange(S.REJECTED, agent_message(message)))

    async def reply(self, message: Content) -> None:
        """Answer with a single Message instead of a task (only as the turn's first act)."""
        if self.stored or self.buffer:
            raise InvalidAgentResponseError(
                "An agent can reply with a Message only before work starts."
            )
        reply = agent_message(message)
        assert reply is not None
        reply.context_id = self.context_id
        self.stopped = True
        self.settle(reply)

    # -- the runner's side ---------------------------------------------------------------

    def settle(self, result: Outcome | pb.Message) -> None:
        """Hand the waiters the turn's end, unless an earlier end was handed them already."""
        if not self.settled.done():
            self.settled.set_result(result)

    @property
    def is_over(self) -> bool:
        return self.state in ENDING_STATES or self.stopped

    async def _push(self, change: Change) -> None:
        if self.stopped:
            raise asyncio.CancelledError("the task was stopped")
        try:
            self.state = check_transition(self.state, change)
        except TransitionRefused as exc:
            raise InvalidAgentResponseError(
                f"The agent made a change not allowed now: {exc}"
            ) from exc
        self.buffer.append(change)
        if self.streamed and not self.stored:
            await self.flush()
            return
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.create_task(self.flush())

    async def flush(self) -> None:
        """Write what is queued; safe to call at any time, and in any number of places.
        Changes queued while a write is under way are written before it returns; none once
        the turn has stopped (the outage ended it, say, while the agent went on)."""
        async with self._lock:
            while (self.buffer or not self.stored) and not self.stopped:
                changes, self.buffer = self.buffer, []
                if not await self._write_batch(changes):
                    return
                if self.buffer:
                    # One loop turn before the next batch: the streams woken by this one's
                    # events send them first, and the next batch takes what comes meanwhile.
                    await asyncio.sleep(0)

    async def _write_batch(self, changes: list[Change]) -> bool:
        try:
            outcome = await self._store_retrying(changes)
        except TransitionRefused as exc:
            # Someone else (a cancel, the recovery job) ended the task first.
            logger.info("task %s moved on without its runner: %s", self.task_id, exc)
            self.stopped = True
            self.settle(Outcome(S.CANCELED, 0))
            return False
        except DATABASE_AWAY as exc:
            logger.warning(
                "task %s: the database stayed unavailable for its write; the turn ends: %s",
                self.task_id, exc,
            )  # fmt: skip
            self.stopped = True
            self._settle_unwritten(exc)
            return False
        except Exception as exc:
            # The turn cannot go on unwritten; waiters get an error now, and recovery
            # fails the task once its runner has gone quiet.
            logger.exception("task %s: its write failed; the turn ends", self.task_id)
            self.stopped = True
            if not self.settled.done():
                self.settled.set_exception(internal_error(exc))
            return False
        self.stored_state = outcome.state
        self.last_sequence = outcome.last_sequence
        if outcome.state in ENDING_STATES:
            self.settle(outcome)
        return True

    async def _store_retrying(self, changes: list[Change]) -> Outcome:
        """`_store`, tried again while the database is away, for RETRY_PAUSES. A retry
        writes nothing twice: a new task's insert meets its own row, and a change is made
        only if the task's events are still the ones this updater knows (`writer.record`)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + RETRY_SECONDS
        again = False
        for pause in (*RETRY_PAUSES, None):
            try:
                return await self._store(changes, again)
            except DATABASE_AWAY:
                if pause is None or loop.time() + pause > deadline:
                    raise
            if not again:
                logger.info("task %s: the database is unavailable; writing again", self.task_id)
            again = True
            await asyncio.sleep(pause)
        raise AssertionError("unreachable")

    async def _store(self, changes: list[Change], again: bool = False) -> Outcome:
        if not self.stored:
            outcome = await writer.open(
                self.spec, changes, runner=self.runner, history=self.snapshots, again=again
            )
            self.stored = True
        else:
            outcome = await writer.record(
                self.spec.id, self.stored_state, changes, self.known,
                after=self.last_sequence if again else None,
            )  # fmt: skip
        self.known = outcome.known or self.known
        return outcome

    def _settle_unwritten(self, exc: BaseException) -> None:
        """The database stayed away: a task never stored fails the send (nothing stored, the
        caller may send again); a stored one ends failed for that reason, as its waiters
        and its stream are told now, and as the runner writes it once it can."""
        if not self.stored:
            if not self.settled.done():
                self.settled.set_exception(internal_error(exc))
            return
        self.unwritten = StatusChange(S.FAILED, agent_text(OUTAGE_REASON))
        shell = Task(id=self.spec.id, context_id=self.context_id, state=self.stored_state)
        plan = Plan(shell, self.last_sequence, timezone.now())
        plan.status(self.unwritten, self.known.position if self.known else 0)
        self.unwritten_event = plan.events[0].payload
        snapshot = None
        if self.snapshots:
            snapshot = snapshot_of(plan.task, self.known) if self.known else None
            if snapshot is None:
                snapshot = task_to_pb(plan.task)
                snapshot.history.append(self.spec.message)
        self.settle(Outcome(S.FAILED, self.last_sequence, snapshot))

    async def write_failure(self) -> None:
        """Write the failure of a turn the outage ended (`unwritten`) once the database is
        back, trying every FAILURE_WRITE_EVERY for FAILURE_WRITE_SECONDS (the run stays in
        the runner's table meanwhile, so its heartbeat tells recovery that its process
        lives)."""
        failure = self.unwritten
        assert failure is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + FAILURE_WRITE_SECONDS
        while True:
            try:
                await writer.record(
                    self.spec.id, self.stored_state, [failure], self.known,
                    also={"last_error": OUTAGE_REASON},
                )  # fmt: skip
                logger.warning("task %s failed: the database was unavailable", self.task_id)
                return
            except TransitionRefused:
                return  # ended by someone else meanwhile (recovery, a cancel)
            except DATABASE_AWAY:
                if loop.time() > deadline:
                    logger.error(
                        "task %s: could not write its failure; recovery will fail it",
                        self.task_id,
                    )
                    return
            await asyncio.sleep(FAILURE_WRITE_EVERY)
