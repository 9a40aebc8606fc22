"""Stored tasks, opened through the lifecycle as the hub itself opens them (and aged, for
retention), and the artifact the task admin shows (a binary file, a file by URL, and text)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from a2a.types import a2a_pb2 as pb
from asgiref.sync import async_to_sync
from django.utils import timezone

from agents.models import Agent
from tasks import writer
from tasks.changes import ArtifactChange, Change, NewTask, StatusChange
from tasks.models import Task, TaskState
from tests.factories.messages import user_message
from tests.factories.versions import V1

PDF_BYTES = b"%PDF-1.7\x00\x01\xff\xfe binary \r\n end"


def first_message() -> pb.Message:
    """The message `open_task` starts a task with unless told otherwise."""
    return user_message("Hello, agent", message_id="first")


def open_task(
    agent: Agent,
    changes: Sequence[Change] = (),
    owner: str = "apikey:1",
    context_id: str = "ctx-1",
    message: pb.Message | None = None,
) -> Task:
    """An inline task of `agent`, opened with `changes` already applied."""
    spec = NewTask(
        agent_id=agent.pk, owner=owner, context_id=context_id,
        message=message or first_message(), protocol_version=V1, execution_mode="inline",
    )  # fmt: skip
    async_to_sync(writer.open)(spec, changes)
    return Task.objects.get(id=spec.id)


def report_artifact() -> ArtifactChange:
    artifact = pb.Artifact(artifact_id="report-1", name="Quarterly report")
    artifact.parts.add(
        raw=PDF_BYTES, media_type="application/pdf", filename='../../etc/re"port.pdf'
    )
    artifact.parts.add(url="https://files.example.com/big.bin", filename="big.bin")
    artifact.parts.add(text="Summary: all good")
    return ArtifactChange(artifact, last_chunk=True)


def ended(state: TaskState = TaskState.COMPLETED) -> list[Change]:
    """The changes that take a new task through working to `state`."""
    return [StatusChange(TaskState.WORKING), StatusChange(state)]


def last_updated(task: Task, days_ago: float) -> Task:
    """Test setup only: pretend the task was last written `days_ago` days ago."""
    Task.objects.filter(id=task.id).update(updated_at=timezone.now() - timedelta(days=days_ago))
    task.refresh_from_db()
    return task
