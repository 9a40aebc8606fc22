"""A developer's task page through Django's test client: linked rows in the task lists, the
conversation, artifacts (text, data, files), status and error, the live part the page polls,
and who may open which task.

Personas and their rights:
- `developer` (tests/conftest.py): owns `mine` and opens every task on it, whoever called;
  on `open`, an agent of the rival's that takes any caller, they see their own tasks only.
- `rival`: owns `open` and `closed` (listed: nobody else may call it); their tasks on `open`
  and everything of `closed` do not exist for the developer (404).
- `operator` (tests/conftest.py): staff; opens every task on every agent.
"""

from __future__ import annotations

import json
import re

import pytest
from a2a.types import a2a_pb2 as pb
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from google.protobuf import struct_pb2

from agents.models import ApiKey
from executors.demo_skills import draw_png
from tasks.changes import ArtifactChange, StatusChange
from tasks.models import Task, TaskState
from tests.factories.agents import owned
from tests.factories.oauth import machine
from tests.factories.tasks import ended, open_task, report_artifact

pytestmark = pytest.mark.django_db


@pytest.fixture
def rival(db: None) -> User:
    return User.objects.create_user("rival", "rival@example.com", "rival-pass-123")


def task_url(task: Task, view: str = "") -> str:
    name = {"": "developers:task", "body": "developers:task-body"}[view]
    return reverse(name, kwargs={"slug": task.agent.slug, "task_id": task.id})


def of(user: User) -> str:
    return f"user:{user.pk}"


def agent_message(text: str) -> pb.Message:
    message = pb.Message(message_id=f"m-{text[:8]}", role=pb.ROLE_AGENT)
    message.parts.add(text=text)
    return message


def data_artifact() -> ArtifactChange:
    artifact = pb.Artifact(artifact_id="numbers-1", name="numbers")
    value = struct_pb2.Value()
    value.struct_value.update({"count": 3, "words": ["a", "b"]})
    artifact.parts.add(data=value)
    return ArtifactChange(artifact, last_chunk=True)


def picture_artifact() -> ArtifactChange:
    artifact = pb.Artifact(artifact_id="picture-1", name="picture")
    artifact.parts.add(raw=draw_png(), media_type="image/png", filename="tiles.png")
    return ArtifactChange(artifact, last_chunk=True)


# -- the list links to the page --------------------------------------------------------------


def test_each_row_of_the_task_list_links_to_the_tasks_page(
    dev_client: Client, developer: User
) -> None:
    task = open_task(owned("mine", developer), ended(), owner=of(developer))
    page = dev_client.get(reverse("developers:tasks", kwargs={"slug": "mine"})).content.decode()
    assert f'href="{task_url(task)}"' in page
    assert dev_client.get(task_url(task)).status_code == 200


def test_the_last_status_column_shows_the_status_time_and_message(
    dev_client: Client, developer: User
) -> None:
    progress = StatusChange(TaskState.WORKING, agent_message("3 of 12 seconds done"))
    task = open_task(owned("mine", developer), [progress], owner=of(developer))
    page = dev_client.get(reverse("developers:tasks", kwargs={"slug": "mine"})).content.decode()
    row = re.search(r'<td class="status-text">(.*?)</td>', page, re.S)
    assert row is not None
    assert "3 of 12 seconds done" in row.group(1)
    assert task.status_timestamp.strftime("%H:%M:%S") in row.group(1)
    assert "—" not in row.group(1)


def test_callers_are_shown_by_name_not_by_principal_id(
    dev_client: Client, developer: User, rival: User
) -> None:
    agent = owned("mine", developer)
    key, _ = ApiKey.issue("CI robot", None, agent)
    application, _ = machine("Billing")
    open_task(agent, owner=of(rival))
    open_task(agent, owner=f"apikey:{key.pk}", context_id="ctx-2")
    open_task(agent, owner=f"app:{application.pk}", context_id="ctx-3")
    open_task(agent, owner="anonymous", context_id="ctx-4")
    page = dev_client.get(reverse("developers:tasks", kwargs={"slug": "mine"})).content.decode()
    assert "<td>rival</td>" in page
    assert "<td>API key “CI robot”</td>" in page
    assert "<td>application “Billing”</td>" in page
    assert "<td>anonymous</td>" in page
    assert "user:" not in page and "apikey:" not in page and "app:" not in page


def test_the_task_tried_on_the_agent_page_is_in_its_recent_tasks(
    dev_client: Client, developer: User
) -> None:
    owned("mine", developer)
    reply = dev_client.post(reverse("developers:try", kwargs={"slug": "mine"}), {"text": "hi"})
    task_id = reply.json()["taskId"]
    page = dev_client.get(reverse("developers:agent", kwargs={"slug": "mine"})).content.decode()
    recent = page[page.index('id="recent-tasks"') :]
    assert f"/dev/agents/mine/tasks/{task_id}/" in recent
    assert "No tasks yet." not in recent


# -- the page ------------------------------------------------------------------------------


def test_the_page_shows_the_conversation_in_order_and_the_agents_answer(
    dev_client: Client, developer: User
) -> None:
    owned("mine", developer)
    reply = dev_client.post(reverse("developers:try", kwargs={"slug": "mine"}), {"text": "polly"})
    task = Task.objects.get(id=reply.json()["taskId"])
    page = dev_client.get(task_url(task)).content.decode()
    conversation = page[page.index('id="task-conversation"') :]
    assert "Caller" in conversation and "polly" in conversation
    artifacts = page[page.index('id="task-artifacts"') : page.index('id="task-conversation"')]
    assert "echo" in artifacts and "polly" in artifacts
    assert 'id="task-state">Completed<' in page
    assert "<dd>dev</dd>" in page  # the caller, by name


def test_data_parts_are_formatted_json_and_files_are_links_to_the_hubs_own_route(
    dev_client: Client, developer: User
) -> None:
    changes = [data_artifact(), report_artifact(), picture_artifact(), *ended()]
    task = open_task(owned("mine", developer), changes, owner=of(developer))
    page = dev_client.get(task_url(task)).content.decode()
    assert '<pre class="part part-data">{\n  &quot;' in page  # indented, one key a line
    assert "\n  &quot;count&quot;: 3" in page
    file_route = f"{task_url(task)}file/?artifact=report-1&amp;part=0"
    assert f'href="{file_route}"' in page
    assert 'href="https://files.example.com/big.bin"' in page  # the agent's link, not loaded
    assert f'<img src="{task_url(task)}file/?artifact=picture-1&amp;part=0"' in page
    assert page.count('<img src="/dev/') == 1  # only the picture is inline

    pdf = dev_client.get(f"{task_url(task)}file/?artifact=report-1&part=0")
    assert pdf.status_code == 200
    assert pdf["Content-Type"] == "application/octet-stream"
    assert pdf["Content-Disposition"].startswith("attachment;")
    png = dev_client.get(f"{task_url(task)}file/?artifact=picture-1&part=0")
    assert png["Content-Type"] == "image/png" and png.content == draw_png()


def test_a_failed_task_shows_its_error(dev_client: Client, developer: User) -> None:
    failure = StatusChange(TaskState.FAILED, agent_message("The weather service is down."))
    task = open_task(owned("mine", developer), [StatusChange(TaskState.WORKING), failure],
                     owner=of(developer))  # fmt: skip
    page = dev_client.get(task_url(task)).content.decode()
    error = page[page.index('class="task-error"') :]
    assert "Error:" in error and "The weather service is down." in error


def test_the_live_part_says_whether_the_task_still_moves(
    dev_client: Client, developer: User
) -> None:
    agent = owned("mine", developer)
    working = open_task(agent, [StatusChange(TaskState.WORKING)], owner=of(developer))
    done = open_task(agent, ended(), owner=of(developer), context_id="ctx-2")
    live = dev_client.get(task_url(working, "body")).json()
    assert live["moving"] is True and live["state"] == "working"
    assert 'data-moving="true"' in dev_client.get(task_url(working)).content.decode()
    finished = dev_client.get(task_url(done, "body")).json()
    assert finished["moving"] is False and "Completed" in finished["html"]
    assert 'data-moving="false"' in dev_client.get(task_url(done)).content.decode()


# -- who may open which task ---------------------------------------------------------------


def test_a_caller_sees_their_own_tasks_on_another_users_agent_and_no_one_elses(
    dev_client: Client, developer: User, rival: User
) -> None:
    agent = owned("open", rival)
    own = open_task(agent, ended(), owner=of(developer))
    theirs = open_task(agent, ended(), owner=of(rival), context_id="ctx-2")
    assert dev_client.get(task_url(own)).status_code == 200
    assert dev_client.get(task_url(theirs)).status_code == 404
    assert dev_client.get(task_url(theirs, "body")).status_code == 404
    listed = dev_client.get(reverse("developers:tasks", kwargs={"slug": "open"}))
    assert listed.status_code == 200
    assert str(own.id)[:8] in listed.content.decode()
    assert str(theirs.id)[:8] not in listed.content.decode()


def test_a_task_of_an_agent_the_developer_may_not_call_is_not_found(
    dev_client: Client, developer: User, rival: User
) -> None:
    agent = owned("closed", rival, access="listed")
    task = open_task(agent, ended(), owner=of(rival))
    assert dev_client.get(task_url(task)).status_code == 404


def test_an_unknown_task_is_not_found(dev_client: Client, developer: User) -> None:
    owned("mine", developer)
    url = "/dev/agents/mine/tasks/00000000-0000-0000-0000-000000000000/"
    assert dev_client.get(url).status_code == 404
    assert dev_client.get("/dev/agents/mine/tasks/not-a-uuid/").status_code == 404


def test_staff_open_every_task(operator_client: Client, rival: User) -> None:
    task = open_task(owned("closed", rival, access="listed"), ended(), owner=of(rival))
    page = operator_client.get(task_url(task))
    assert page.status_code == 200
    assert "rival" in page.content.decode()


def test_the_page_needs_sign_in(client: Client, rival: User) -> None:
    task = open_task(owned("open", rival), ended(), owner=of(rival))
    response = client.get(task_url(task))
    assert response.status_code == 302 and response["Location"].startswith("/dev/login/")


def test_the_data_part_json_is_what_the_agent_sent(dev_client: Client, developer: User) -> None:
    task = open_task(owned("mine", developer), [data_artifact()], owner=of(developer))
    html = dev_client.get(task_url(task, "body")).json()["html"]
    shown = re.search(r'<pre class="part part-data">(.*?)</pre>', html, re.S)
    assert shown is not None
    assert json.loads(shown.group(1).replace("&quot;", '"')) == {"count": 3, "words": ["a", "b"]}
