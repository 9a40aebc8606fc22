"""How the task admin writes what it shows: times to the second, the progress an agent
reports as a bar, the one empty mark, and the execution mode true to the way the hub runs."""

from __future__ import annotations

import re
from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb
from django.test import Client
from django.urls import reverse

from tasks.changes import StatusChange
from tasks.models import Task, TaskState
from tasks.updater import PROGRESS_KEY
from tests.factories.tasks import open_task

pytestmark = pytest.mark.django_db

TO_THE_SECOND = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


def progress(done: int, total: int) -> StatusChange:
    message = pb.Message(message_id=f"m{done}", role=pb.ROLE_AGENT)
    message.parts.add(text=f"{done} of {total} seconds done.")
    message.metadata.update({PROGRESS_KEY: {"done": done, "total": total}})
    return StatusChange(TaskState.WORKING, message)


def task_page(client: Client, task: Task) -> str:
    response = client.get(reverse("admin:tasks_task_change", args=[task.id]))
    assert response.status_code == 200
    return response.content.decode()


def test_the_progress_an_agent_reports_shows_as_a_bar(
    operator_client: Client, agent_factory: Any
) -> None:
    task = open_task(agent_factory("slowish"), [progress(1, 12), progress(3, 12)])
    html = task_page(operator_client, task)
    status = re.search(r'class="readonly">(.*?)</div>', html.split("field-status_text")[1], re.S)
    assert status
    assert '<progress class="hub-progress" value="3" max="12"' in status.group(1)
    assert "3 of 12 seconds done." in status.group(1)
    # Each progress event carries its numbers, for the timeline to fold them into one row.
    assert html.count('data-done="1" data-total="12"') == 1
    assert html.count('data-done="3" data-total="12"') == 1
    # The line over the fields: relative times, which the page's script keeps current.
    created = r'<b>Working</b>: created <time class="hub-when"[^>]*>(just now|[^<]+ ago)</time>'
    assert re.search(created, html)


def test_times_are_written_to_the_second(operator_client: Client, agent_factory: Any) -> None:
    task = open_task(agent_factory("timed"), [progress(1, 2)])
    html = task_page(operator_client, task)
    when_cells = re.findall(r'<td class="field-at">\s*<p><time datetime="[^"]+" title="([^"]+)">'
                            r"([^<]+)</time>", html)  # fmt: skip
    assert len(when_cells) == 2
    for title, shown in when_cells:
        assert TO_THE_SECOND.fullmatch(shown) and title == f"{shown} UTC"
    created = re.search(r'field-created_at.*?class="readonly">([^<]+)<', html, re.S)
    assert created and TO_THE_SECOND.fullmatch(created.group(1).strip())


def test_empty_values_read_as_one_mark(operator_client: Client, agent_factory: Any) -> None:
    task = open_task(agent_factory("empty"))
    html = task_page(operator_client, task)
    client_id = re.search(r'field-client_id.*?class="readonly">([^<]+)<', html, re.S)
    assert client_id and client_id.group(1).strip() == "—"


@pytest.mark.parametrize(
    ("embedded", "label"),
    [(True, "worker (the in-process worker pool)"), (False, "worker (a Celery job)")],
)
def test_a_worker_task_says_where_its_worker_runs(
    operator_client: Client, agent_factory: Any, settings: Any, embedded: bool, label: str
) -> None:
    settings.EMBEDDED = embedded
    task = open_task(agent_factory("queued"))
    Task.objects.filter(pk=task.pk).update(execution_mode="worker")

    page = task_page(operator_client, task)
    listing = operator_client.get(reverse("admin:tasks_task_changelist")).content.decode()

    for html in (page, listing):
        assert label in html
    if embedded:
        assert "Celery" not in page and "Celery" not in listing
