"""A2A tasks, their messages and artifacts, and the event log every stream and push reads.

Parts, messages and statuses are stored in the A2A 1.0 JSON form (the protobuf JSON mapping),
once and version-neutral; `tasks.wire` turns them into either version on the way out.

`tasks.writer` is the writer of a task's state and of its messages, artifacts and events
(on its hot paths through the statements of `tasks.sql`, which `tasks.checks` keeps fitting
these models). Other writers touch a task's bookkeeping columns only: `runner` and
`heartbeat_at` by the claim of a queued turn (`tasks.sql.claim_task`), the runner's heartbeat
and requeue (`tasks.runner`) and the hand-over of a stored task to a worker
(`protocol.handlers.tasks`); `push_enabled` by `push.configs` when a task gets a webhook.
A task's rows are deleted only with its agent, or by retention once finished (`tasks.retention`).
"""

from __future__ import annotations

import uuid

from django.db import models

from agents.models import Agent, ExecutionMode


class TaskState(models.TextChoices):
    SUBMITTED = "submitted"
    WORKING = "working"
    INPUT_REQUIRED = "input-required", "input required"
    AUTH_REQUIRED = "auth-required", "auth required"
    COMPLETED = "completed"
    CANCELED = "canceled"
    FAILED = "failed"
    REJECTED = "rejected"


TERMINAL_STATES = frozenset({TaskState.COMPLETED, TaskState.CANCELED, TaskState.FAILED,
                             TaskState.REJECTED})  # fmt: skip
INTERRUPTED_STATES = frozenset({TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED})
ACTIVE_STATES = frozenset({TaskState.SUBMITTED, TaskState.WORKING})
OPEN_STATES = ACTIVE_STATES | INTERRUPTED_STATES


class Binding(models.TextChoices):
    """The door a task came through: the three A2A bindings, the MCP door (`/mcp`), or the
    developer pages' "try it"."""

    JSONRPC = "JSONRPC", "JSON-RPC"
    HTTP_JSON = "HTTP+JSON", "HTTP+JSON"
    GRPC = "GRPC", "gRPC"
    MCP = "MCP", "MCP"
    PAGE = "PAGE", "developer page"


class Task(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    context_id = models.CharField(max_length=200)
    # Looked up through `task_agent_newest`, which also orders an agent's tasks.
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="tasks", db_index=False)
    # The principal that created the task ("apikey:12", "user:3", "anonymous"); only it sees it.
    owner = models.CharField(max_length=100)
    # The id a pre-0.2 client gave the task (its `tasks/send` names the task itself); empty
    # for tasks made through 0.3 or 1.0. Kept beside the primary key rather than as it, even
    # when it is a UUID: a client's id is unique only among its caller's tasks on one agent,
    # so two callers may choose the same one, and neither may learn of the other's task.
    client_id = models.CharField(max_length=200, blank=True, default="", db_default="")
    state = models.CharField(max_length=20, choices=TaskState.choices)
    status_message = models.JSONField(null=True, blank=True)
    status_timestamp = models.DateTimeField()
    metadata = models.JSONField(default=dict, blank=True)
    protocol_version = models.CharField(max_length=8)
    binding = models.CharField(
        max_length=10, choices=Binding.choices, default=Binding.JSONRPC, db_default=Binding.JSONRPC
    )
    execution_mode = models.CharField(max_length=10, choices=ExecutionMode.choices)
    last_sequence = models.PositiveIntegerField(default=0)
    # Which process runs the task and when it last said so; recovery fails silent ones.
    runner = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    # The W3C `traceparent` of the call that created the task (empty while tracing is off):
    # its later turns and its webhook deliveries link to that trace. Never shown to clients.
    traceparent = models.CharField(max_length=55, blank=True, default="", db_default="")
    # Set once a push config exists, so writes of tasks without webhooks skip the lookup.
    push_enabled = models.BooleanField(default=False, db_default=False)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # ListTasks: a caller's tasks on one agent, latest status first (the spec's order),
            # with each filter; the id breaks ties in status_timestamp, so a cursor
            # (status_timestamp, id) is a place in them, and `statusTimestampAfter` is a range
            # of the same index.
            models.Index(fields=["owner", "agent", "-status_timestamp", "-id"], name="task_list"),
            models.Index(
                fields=["owner", "agent", "state", "-status_timestamp", "-id"],
                name="task_list_state",
            ),
            # A context's tasks in the same order (ListTasks filters by context), and the
            # admin's search by a context id's beginning: the pattern operators serve LIKE 'x%'
            # whatever the database's collation, and equality too.
            models.Index(
                fields=["context_id", "-status_timestamp", "-id"],
                name="task_context",
                opclasses=["varchar_pattern_ops", "timestamptz_ops", "uuid_ops"],
            ),
            # The admin's list: every task, newest first; an agent's (also its cascade).
            models.Index(fields=["-created_at", "-id"], name="task_newest"),
            models.Index(fields=["agent", "-created_at", "-id"], name="task_agent_newest"),
            # The admin's filters on columns of few values, for the values that are not the
            # usual one (1.0, JSON-RPC): most tasks add no entry, and the usual value is found
            # at once in `task_newest`.
            models.Index(
                fields=["protocol_version", "-created_at", "-id"],
                condition=~models.Q(protocol_version="1.0"),
                name="task_other_versions",
            ),
            models.Index(
                fields=["binding", "-created_at", "-id"],
                condition=~models.Q(binding="JSONRPC"),
                name="task_other_bindings",
            ),
            # The admin's search by a pre-0.2 client's own task id (or its beginning).
            models.Index(
                fields=["client_id"],
                condition=~models.Q(client_id=""),
                name="task_client_id_search",
                opclasses=["varchar_pattern_ops"],
            ),
            models.Index(fields=["state", "heartbeat_at"], name="task_state_heartbeat"),
            # Retention's batches, oldest first. Partial: an open task's writes add no entry.
            models.Index(
                fields=["updated_at"],
                condition=models.Q(state__in=sorted(TERMINAL_STATES)),
                name="task_finished_updated",
            ),
        ]
        constraints = [
            # Also the index that finds a task by its client's id. Partial: the tasks of 0.3
            # and 1.0 callers, which have none, add no entry to it.
            models.UniqueConstraint(
                fields=["agent", "owner", "client_id"],
                condition=~models.Q(client_id=""),
                name="task_client_id_unique",
            )
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}/{self.id} ({self.state})"

    @property
    def is_terminal(self) -> bool:
        return self.state in TERMINAL_STATES


# The rows a task's turns add are looked up by task through the index or constraint on
# (task, position / artifact_id / sequence), so their foreign keys need no index of their own:
# one less index to write for every row.


class Message(models.Model):
    task = models.ForeignKey(
        Task,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="messages",
        db_index=False,
    )
    context_id = models.CharField(max_length=200, blank=True)
    message_id = models.CharField(max_length=200)
    role = models.CharField(max_length=10, choices=[("user", "user"), ("agent", "agent")])
    parts = models.JSONField(default=list)
    reference_task_ids = models.JSONField(default=list, blank=True)
    extensions = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    position = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["task_id", "position"]
        indexes = [models.Index(fields=["task", "position"], name="message_task_position")]

    def __str__(self) -> str:
        return f"{self.role} {self.message_id}"


class Artifact(models.Model):
    task = models.ForeignKey(
        Task, on_delete=models.CASCADE, related_name="artifacts", db_index=False
    )
    artifact_id = models.CharField(max_length=200)
    name = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    parts = models.JSONField(default=list)
    extensions = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    position = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["task_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["task", "artifact_id"], name="artifact_unique_per_task")
        ]

    def __str__(self) -> str:
        return self.name or self.artifact_id


class TaskEvent(models.Model):
    """One change of a task, numbered per task from 1 with no gaps, as a 1.0 StreamResponse."""

    KINDS = [("task", "task"), ("status", "status update"), ("artifact", "artifact update")]

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="events", db_index=False)
    sequence = models.PositiveIntegerField()
    kind = models.CharField(max_length=10, choices=KINDS)
    payload = models.JSONField()
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["task_id", "sequence"]
        constraints = [
            models.UniqueConstraint(fields=["task", "sequence"], name="event_unique_sequence")
        ]

    def __str__(self) -> str:
        return f"{self.task_id}#{self.sequence} {self.kind}"
