"""The A2A methods on tasks, one function each, working on 1.0 request messages.

Version adapters convert 0.3 requests to these and the answers back; handlers raise typed
A2A errors and never see the wire.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from a2a.types import a2a_pb2 as pb
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection
from django.db.models import Q, QuerySet
from google.protobuf.json_format import MessageToDict

from a2ahub import asyncdb, hops, tracing
from a2ahub.errors import (
    ContentTypeNotSupportedError,
    TaskNotCancelableError,
    UnsupportedOperationError,
    invalid_params,
    unavailable,
)
from agents import principals
from agents import scopes as scope_rules
from agents.kinds import execution_mode
from protocol.calls import Call
from protocol.handlers.owned import is_new_client_id, owned_task, task_key
from protocol.handlers.push import inline_push_config
from push.configs import name_given
from tasks import changes, events, queueing, runner, writer
from tasks.changes import NewTask
from tasks.executor import RequestContext
from tasks.models import (
    INTERRUPTED_STATES,
    TERMINAL_STATES,
    ExecutionMode,
    Message,
    Task,
    TaskState,
)
from tasks.reading import load_task, load_tasks, read_owned_task
from tasks.wire import (
    ENDING_STATES,
    PB_TO_STATE,
    V01,
    event_ends_stream,
    message_to_pb,
)

MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 50


# -- reading tasks ----------------------------------------------------------------------


def history_length_of(request: Any) -> int | None:
    if not request.HasField("history_length"):
        return None
    if request.history_length < 0:
        raise invalid_params("historyLength", "must not be negative")
    return int(request.history_length)


async def get_task(call: Call, request: pb.GetTaskRequest) -> pb.Task:
    length = history_length_of(request)
    if call.version != V01 and asyncdb.available():
        key, owner = task_key(request.id), call.principal.id
        return await read_owned_task(key, call.agent.pk, owner, length)
    return await sync_to_async(lambda: load_task(owned_task(call, request.id), length))()


async def stored_task(call: Call, task_id: uuid.UUID, length: int | None) -> pb.Task:
    """The caller's task as stored now, by the hub's id: on PostgreSQL in one statement from
    the loop (`read_owned_task`), elsewhere through the ORM."""
    if not asyncdb.available():
        return await sync_to_async(lambda: load_task(Task.objects.get(id=task_id), length))()
    return await read_owned_task(task_id, call.agent.pk, call.principal.id, length)


# -- listing ------------------------------------------------------------------------------

# `totalSize` is an int32 on the wire.
MAX_TOTAL_SIZE = 2**31 - 1


@dataclass(frozen=True)
class Cursor:
    """Where a page ends: the last task's (status_timestamp, id), and the listing's size as
    told on its first page (None in tokens issued before the size was carried)."""

    status_timestamp: datetime
    task_id: str
    total: int | None


def encode_cursor(task: Task, total: int) -> str:
    raw = json.dumps([task.status_timestamp.isoformat(), str(task.id), total])
    return base64.urlsafe_b64encode(raw.encode()).decode()


# Far longer than any token this server issues (about 120 characters).
MAX_TOKEN_LENGTH = 512


def decode_cursor(token: str) -> Cursor:
    """The cursor a token of ours carries. Anything else (not base64, not our JSON, a total
    past what `totalSize` holds, a date out of range) is invalid params, never a 500."""
    try:
        if len(token) > MAX_TOKEN_LENGTH:
            raise ValueError(token)
        stamp, task_id, *rest = json.loads(base64.urlsafe_b64decode(token.encode()))
        when = datetime.fromisoformat(stamp)
        total = rest[0] if rest else None
        if len(rest) > 1 or when.tzinfo is None or not (total is None or counted(total)):
            raise ValueError(token)
        # In UTC here: a date at the edge of the calendar overflows now, not in the query.
        return Cursor(when.astimezone(UTC), str(uuid.UUID(task_id)), total)
    except (ValueError, TypeError, AttributeError, OverflowError, RecursionError):
        raise invalid_params("pageToken", "is not a token this server issued") from None


def counted(total: object) -> bool:
    return type(total) is int and 0 <= total <= MAX_TOTAL_SIZE


def listed_tasks(call: Call, request: pb.ListTasksRequest) -> QuerySet[Task]:
    """The caller's tasks the request's filters select, latest status first: the spec's order
    ("sorted by their status timestamp time in descending order"), the id breaking ties. Each
    filter has an index in that order (`tasks.models.Task.Meta.indexes`)."""
    tasks = Task.objects.filter(agent=call.agent, owner=call.principal.id)
    if request.context_id:
        tasks = tasks.filter(context_id=request.context_id)
    if request.status:
        state = PB_TO_STATE.get(request.status)
        if state is None:
            raise invalid_params("status", "is not a task state")
        tasks = tasks.filter(state=state)
    if request.HasField("status_timestamp_after"):
        after = request.status_timestamp_after.ToDatetime(tzinfo=datetime.now().astimezone().tzinfo)
        # "greater than or equal to this value", says the spec: a range of the same index.
        tasks = tasks.filter(status_timestamp__gte=after)
    return tasks.order_by("-status_timestamp", "-id")


def after_cursor(tasks: QuerySet[Task], cursor: Cursor) -> QuerySet[Task]:
    """The tasks past the cursor in (status_timestamp, id) order. The first condition follows
    from the second; it is there so that the index scan starts at the cursor rather than
    reading, and dropping, every later task. A task whose status changes while a client pages
    moves to the front of the listing: a later page does not show it again (the spec's order
    makes that so for any cursor)."""
    stamp = cursor.status_timestamp
    return tasks.filter(status_timestamp__lte=stamp).filter(
        Q(status_timestamp__lt=stamp) | Q(id__lt=cursor.task_id)
    )


def total_of(tasks: QuerySet[Task]) -> int:
    """How many tasks the listing holds: counted exactly up to A2A_LIST_EXACT_TOTAL_LIMIT;
    past it, the database's estimate (PostgreSQL's planner, from its statistics), never less
    than what was counted. A database with no estimate counts them all."""
    limit = settings.A2A_LIST_EXACT_TOTAL_LIMIT
    counted = tasks.order_by()[: limit + 1].count()
    if counted <= limit:
        return counted
    estimate = estimated_rows(tasks)
    total = tasks.count() if estimate is None else max(counted, estimate)
    return min(total, MAX_TOTAL_SIZE)


def estimated_rows(tasks: QuerySet[Task]) -> int | None:
    if connection.vendor != "postgresql":
        return None
    plan = json.loads(tasks.order_by().explain(format="json"))
    return int(plan[0]["Plan"]["Plan Rows"])


def page_size_of(request: pb.ListTasksRequest) -> int:
    if not request.HasField("page_size") or request.page_size == 0:
        return DEFAULT_PAGE_SIZE
    if not 1 <= request.page_size <= MAX_PAGE_SIZE:
        raise invalid_params("pageSize", f"must be between 1 and {MAX_PAGE_SIZE}")
    return int(request.page_size)


def list_page(call: Call, request: pb.ListTasksRequest) -> pb.ListTasksResponse:
    """One page: the tasks, their messages and their artifacts in at most four queries (five
    on a first page: the count), whatever the page size."""
    size = page_size_of(request)
    length = history_length_of(request)
    tasks = listed_tasks(call, request)
    cursor = decode_cursor(request.page_token) if request.page_token else None
    # Counted for the first page and carried in the token: the later pages of one listing
    # cost no count, and all say the same size.
    total = cursor.total if cursor and cursor.total is not None else total_of(tasks)
    if cursor:
        tasks = after_cursor(tasks, cursor)
    page = list(tasks[: size + 1])
    response = pb.ListTasksResponse(page_size=size, total_size=total)
    history = 0 if length is None else length
    response.tasks.extend(load_tasks(page[:size], history, request.include_artifacts))
    if len(page) > size:
        response.next_page_token = encode_cursor(page[size - 1], total)
    return response


async def list_tasks(call: Call, request: pb.ListTasksRequest) -> pb.ListTasksResponse:
    return await sync_to_async(list_page)(call, request)


# -- cancel ---------------------------------------------------------------------------------


async def cancel_task(call: Call, request: pb.CancelTaskRequest) -> pb.Task:
    task = await sync_to_async(owned_task)(call, request.id)
    if task.state in TERMINAL_STATES:
        raise TaskNotCancelableError(f"Task {request.id} is {task.state} and cannot be canceled.")
    try:
        await writer.cancel(task.id, call.principal.id)
    except changes.TransitionRefused:
        raise TaskNotCancelableError(
            f"Task {request.id} ended before it could be canceled."
        ) from None
    return await stored_task(call, task.id, None)


# -- send -------------------------------------------------------------------------------------


def media_type_of(part: pb.Part) -> str:
    if part.media_type:
        return part.media_type
    kind = part.WhichOneof("content")
    return {"text": "text/plain", "data": "application/json"}.get(
        kind or "", "application/octet-stream"
    )


def mode_matches(offered: str, wanted: str) -> bool:
    offered, wanted = offered.split(";")[0].strip().lower(), wanted.split(";")[0].strip().lower()
    if "*/*" in (offered, wanted) or offered == wanted:
        return True
    o_type, _, o_sub = offered.partition("/")
    w_type, _, w_sub = wanted.partition("/")
    return o_type == w_type and "*" in (o_sub, w_sub)


def check_modes(call: Call, request: pb.SendMessageRequest) -> None:
    accepted = list(request.configuration.accepted_output_modes)
    outputs = call.agent.default_output_modes or []
    if accepted and not any(mode_matches(o, a) for o in outputs for a in accepted):
        raise ContentTypeNotSupportedError(
            f"This agent answers in {', '.join(outputs)}; none of {', '.join(accepted)}."
        )
    inputs = call.agent.default_input_modes or []
    for part in request.message.parts:
        if not any(mode_matches(mode, media_type_of(part)) for mode in inputs):
            raise ContentTypeNotSupportedError(
                f"This agent does not accept {media_type_of(part)} (it takes {', '.join(inputs)})."
            )


# The columns the ids are stored in: a longer id is refused, not cut (PostgreSQL would refuse
# the write only after the task was planned).
MAX_MESSAGE_ID = Message._meta.get_field("message_id").max_length or 200
MAX_CONTEXT_ID = Task._meta.get_field("context_id").max_length or 200


def check_message(message: pb.Message) -> None:
    if not message.message_id:
        raise invalid_params("message.messageId", "is required")
    for field, value, limit in (
        ("message.messageId", message.message_id, MAX_MESSAGE_ID),
        ("message.contextId", message.context_id, MAX_CONTEXT_ID),
    ):
        if len(value) > limit:
            raise invalid_params(field, f"must be at most {limit} characters")
    if not message.parts:
        raise invalid_params("message.parts", "must hold at least one part")
    if message.role == pb.ROLE_AGENT:
        raise invalid_params("message.role", "must be the user's role")
    for index, part in enumerate(message.parts):
        if part.WhichOneof("content") is None:
            raise invalid_params(f"message.parts[{index}]", "has no content")


def check_follow_up(
    call: Call, message: pb.Message, push_config: pb.TaskPushNotificationConfig | None = None
) -> tuple[Task, list[pb.Message]]:
    """The task a follow-up names, if it takes one now, and its messages so far."""
    task = owned_task(call, message.task_id)
    named = message.task_id  # as the caller knows it (a 0.1 caller by its own id)
    if task.state in TERMINAL_STATES:
        raise UnsupportedOperationError(f"Task {named} is {task.state}; it takes no more messages.")
    if message.context_id and message.context_id != task.context_id:
        field = "sessionId" if call.version == V01 else "message.contextId"
        raise invalid_params(field, "does not match the task's context")
    if task.state not in INTERRUPTED_STATES:
        raise UnsupportedOperationError(f"Task {named} is still {task.state}; wait for it.")
    if push_config is not None:
        name_given(task, push_config)
    return task, [message_to_pb(m) for m in Message.objects.filter(task=task)]


async def prepare_follow_up(
    call: Call, message: pb.Message, push_config: pb.TaskPushNotificationConfig | None, token: str
) -> tuple[Task, list[pb.Message], int]:
    """The task, its messages with this one, and its last event's number after it."""
    task, history = await sync_to_async(check_follow_up)(call, message, push_config)
    tracing.link(task.traceparent)  # the call that made the task
    try:
        added = await writer.add_user_message(
            task,
            call.principal.id,
            message,
            push_config,
            len(history),
            runner=token,
            version=call.version,
        )
    except changes.TransitionRefused:
        raise UnsupportedOperationError(
            f"Task {message.task_id} moved on; it takes no message now."
        ) from None
    history.append(changes.stamp(message, task, pb.ROLE_USER))
    return task, history, added.last_sequence


@dataclass
class Turn:
    """One send, checked and ready to run: a new task, or the next turn of a stored one."""

    spec: NewTask
    context: RequestContext
    state: TaskState
    stored: bool
    token: str = ""  # a worker's turn: only the job holding it may claim the task
    sequence: int = 0  # a stored task's last event


def skill_named(message: pb.Message) -> str | None:
    """The skill a message asks for in `metadata.skillId`, as the executors read it."""
    metadata = message.metadata
    return str(metadata["skillId"]) if "skillId" in metadata else None


async def check_skill(call: Call, message: pb.Message) -> None:
    """Only a token whose scopes name single skills can be refused; the rule may read the
    agent's skills, so it runs off the event loop, and only for such tokens."""
    scopes = call.principal.scopes
    if scopes is None or scope_rules.reaches_every_skill(scopes, call.agent.slug):
        return
    await sync_to_async(principals.check_skill)(call.agent, call.principal, skill_named(message))


async def prepare_turn(call: Call, request: pb.SendMessageRequest) -> Turn:
    message = request.message
    check_message(message)
    await check_skill(call, message)
    check_modes(call, request)
    push_config = await inline_push_config(call, request)
    # A 0.1 send names its task by the caller's own id, a new one as well as a known one.
    client_id = message.task_id if call.version == V01 else ""
    if client_id and await sync_to_async(is_new_client_id)(call, client_id):
        message.ClearField("task_id")
    worker = execution_mode(call.agent) == ExecutionMode.WORKER
    token = f"queued:{uuid.uuid4().hex}" if worker else ""
    if message.task_id:
        task, history, sequence = await prepare_follow_up(call, message, push_config, token)
        message.task_id = str(task.id)  # the executor sees the hub's id, whoever sent it
        spec = spec_for(call, request, task.context_id, task.id)
        context = make_context(call, spec, message, history, continuation=True)
        return Turn(spec, context, TaskState.WORKING, stored=True, token=token, sequence=sequence)
    spec = spec_for(call, request, message.context_id or str(uuid.uuid4()), uuid.uuid4())
    spec.client_id = client_id
    spec.push_config = push_config
    context = make_context(call, spec, message, [message], continuation=False)
    return Turn(spec, context, TaskState.SUBMITTED, stored=False, token=token)


async def send_message(call: Call, request: pb.SendMessageRequest) -> pb.Task | pb.Message:
    length = history_length_of(request.configuration)
    turn = await prepare_turn(call, request)
    return await run_turn(call, turn, request, length)


def spec_for(
    call: Call, request: pb.SendMessageRequest, context_id: str, task_id: uuid.UUID
) -> NewTask:
    given = MessageToDict(request.metadata) if request.HasField("metadata") else {}
    metadata = hops.stamped(given, call.hops)
    return NewTask(
        agent_id=call.agent.pk, owner=call.principal.id, context_id=context_id,
        message=request.message, protocol_version=call.version, binding=call.binding,
        execution_mode=execution_mode(call.agent), metadata=metadata, id=task_id,
        traceparent=tracing.current_traceparent() if tracing.enabled else "",
    )  # fmt: skip


def make_context(
    call: Call, spec: NewTask, message: pb.Message, history: list[pb.Message], continuation: bool
) -> RequestContext:
    return RequestContext(
        task_id=str(spec.id), context_id=spec.context_id, message=message, agent=call.agent,
        protocol_version=call.version, history=history, metadata=spec.metadata,
        is_continuation=continuation,
    )  # fmt: skip


async def run_turn(
    call: Call, turn: Turn, request: pb.SendMessageRequest, length: int | None
) -> pb.Task | pb.Message:
    immediate = request.configuration.return_immediately
    spec = turn.spec
    if spec.execution_mode == ExecutionMode.WORKER:
        return await run_on_worker(call, spec, turn, immediate, length)
    updater = await runner.start(
        call.agent, spec, turn.context, turn.state, stored=turn.stored, sequence=turn.sequence
    )
    if immediate:
        # One loop turn first: an agent that acts before it awaits anything (a fast one ends
        # there) has its changes written with its new task, one write, rather than a second
        # write at once (with a webhook, the ORM's transaction and its deliveries).
        await asyncio.sleep(0)
        await updater.flush()
    else:
        try:
            await asyncio.wait_for(
                asyncio.shield(updater.settled), settings.A2A_BLOCKING_TIMEOUT_SECONDS
            )
        except TimeoutError:
            await updater.flush()
    settled = updater.settled.result() if updater.settled.done() else None
    if isinstance(settled, pb.Message):
        return settled
    # A turn the database's outage ended answers with the task as it ended, not written
    # yet: the database cannot be read either.
    whole = length is None or updater.unwritten is not None
    if isinstance(settled, changes.Outcome) and settled.snapshot is not None and whole:
        return with_history_length(settled.snapshot, length)
    return await stored_task(call, spec.id, length)


# A worker turn's end is heard from its job's reply. Past this much waiting the send also
# watches the task's events: a turn may end without its job (a cancel while it is queued, the
# recovery of a worker that died).
REPLY_GRACE_SECONDS = 2.0


async def run_on_worker(
    call: Call, spec: NewTask, turn: Turn, immediate: bool, length: int | None
) -> pb.Task:
    stored = turn.stored
    if immediate:
        await queue_turn(spec, turn)
        return await stored_task(call, spec.id, length)
    task_id = str(spec.id)
    channel, reply = await events.expect_reply(task_id)
    try:
        if not stored and not events.replies_heard():
            # Redis is away: the turn's end could not reach this send. Refused while
            # nothing is stored (a follow-up's message is, so that one goes on).
            raise unavailable("message broker")
        # A job the broker did not take now (it is away) runs once it is back: no reply is
        # coming soon, so the send answers with the task as stored.
        queued = await queue_turn(spec, turn, channel)
        ended = await wait_for_end(task_id, reply) if queued else b""
    finally:
        events.forget_reply(channel, task_id)
    if ended:
        return with_history_length(pb.Task.FromString(ended), length)
    return await stored_task(call, spec.id, length)


async def queue_turn(spec: NewTask, turn: Turn, reply_to: str = "") -> bool:
    """Store the task (when new; a follow-up named its job when it was stored) and hand its
    turn to a worker; only that job may claim it. The job replies to the `reply_to` channel
    when the turn ends. Whether the broker took the job at once."""
    if not turn.stored:
        await writer.open(spec, [], runner=turn.token)
    with tracing.span("a2a.turn.queue", "PRODUCER", {"a2a.task.id": str(spec.id)}):
        return await queueing.enqueue_run(str(spec.id), turn.token, reply_to)


async def wait_for_end(task_id: str, reply: asyncio.Future[bytes]) -> bytes:
    """The job's reply when the turn ends: the task as it ended (serialized), or b"" when the
    job has none, the end came from elsewhere or the blocking timeout passed (the caller
    reads the task then)."""
    timeout = settings.A2A_BLOCKING_TIMEOUT_SECONDS
    grace = min(REPLY_GRACE_SECONDS, timeout)
    with contextlib.suppress(TimeoutError):
        return await asyncio.wait_for(asyncio.shield(reply), grace)
    if grace >= timeout:
        return b""
    subscription = await events.subscribe(task_id)
    try:
        if await sync_to_async(has_ended)(task_id):
            return b""
        ended = asyncio.ensure_future(end_event(subscription))
        either: set[asyncio.Future[Any]] = {reply, ended}
        try:
            await asyncio.wait(either, timeout=timeout - grace, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ended.cancel()
        return reply.result() if reply.done() else b""
    finally:
        events.unsubscribe(subscription)


async def end_event(subscription: events.Subscription) -> None:
    while True:
        event = await subscription.get()
        if isinstance(event, tuple) and event_ends_stream(event[1]):
            return


def has_ended(task_id: str) -> bool:
    return Task.objects.filter(id=task_id, state__in=ENDING_STATES).exists()


def with_history_length(task: pb.Task, length: int | None) -> pb.Task:
    """The task with only its newest `length` messages (all of them when None)."""
    if length is not None:
        kept = list(task.history)[-length:] if length > 0 else []
        del task.history[:]
        task.history.extend(kept)
    return task
