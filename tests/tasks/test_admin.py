"""The task admin: who may see it, the stuck filter, the timeline, file downloads and cancel."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from tasks.changes import Change, StatusChange
from tasks.models import Artifact, Message, Task, TaskEvent, TaskState
from tests.factories.messages import user_message
from tests.factories.tasks import PDF_BYTES, open_task, report_artifact

pytestmark = pytest.mark.django_db


def age(task: Task, minutes: int) -> Task:
    # Test setup only: pretend the last status change happened a while ago.
    Task.objects.filter(id=task.id).update(
        status_timestamp=timezone.now() - timedelta(minutes=minutes)
    )
    return task


def working() -> list[Change]:
    return [StatusChange(TaskState.WORKING)]


def completed() -> list[Change]:
    return [StatusChange(TaskState.WORKING), StatusChange(TaskState.COMPLETED)]


def changelist(client: Client, **params: str) -> set[Task]:
    response = client.get(reverse("admin:tasks_task_changelist"), params)
    assert response.status_code == 200
    return set(response.context["cl"].result_list)


def cancel_action(client: Client, *tasks: Task) -> Any:
    return client.post(
        reverse("admin:tasks_task_changelist"),
        {"action": "cancel_tasks", "_selected_action": [str(t.id) for t in tasks]},
        follow=True,
    )


def page_messages(response: Any) -> list[str]:
    return [str(m) for m in response.context["messages"]]


# Who may see it.


def test_anonymous_users_are_sent_to_the_login_page(client: Client, agent_factory: Any) -> None:
    task = open_task(agent_factory("anon"))
    for url in (
        reverse("admin:tasks_task_changelist"),
        reverse("admin:tasks_task_change", args=[task.id]),
    ):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("admin:login"))
        assert response["Location"] == f"{reverse('admin:login')}?next={url}"


def test_signed_in_non_staff_users_cannot_enter(
    client: Client, developer: Any, agent_factory: Any
) -> None:
    task = open_task(agent_factory("nonstaff"))
    client.force_login(developer)
    for url in (
        reverse("admin:tasks_task_changelist"),
        reverse("admin:tasks_task_change", args=[task.id]),
    ):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"] == f"{reverse('admin:login')}?next={url}"
    cancel = reverse("admin:tasks_task_cancel", args=[task.id])
    response = client.post(cancel)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('admin:login')}?next={cancel}"
    task.refresh_from_db()
    assert task.state == TaskState.SUBMITTED


def test_staff_see_tasks_with_agent_state_and_owner(
    operator_client: Client, agent_factory: Any
) -> None:
    task = open_task(agent_factory("listed"), working(), owner="apikey:77")
    page = operator_client.get(reverse("admin:tasks_task_changelist")).content.decode()
    assert str(task.id) in page
    assert "listed" in page and "apikey:77" in page and "working" in page


def test_tasks_cannot_be_added_or_edited(operator_client: Client, agent_factory: Any) -> None:
    task = open_task(agent_factory("readonly"))
    assert operator_client.get(reverse("admin:tasks_task_add")).status_code == 403
    page = operator_client.get(reverse("admin:tasks_task_change", args=[task.id]))
    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode()
    operator_client.post(reverse("admin:tasks_task_change", args=[task.id]), {"state": "completed"})
    task.refresh_from_db()
    assert task.state == TaskState.SUBMITTED


# Filters and search.


def test_the_stuck_filter_selects_open_tasks_whose_status_has_not_moved(
    operator_client: Client, agent_factory: Any
) -> None:
    agent = agent_factory("stuck")
    submitted_10 = age(open_task(agent), 10)
    working_60 = age(open_task(agent, working()), 60)
    open_task(agent, working())  # fresh
    age(open_task(agent, completed()), 200)  # finished long ago: not stuck
    waiting = [StatusChange(TaskState.WORKING), StatusChange(TaskState.INPUT_REQUIRED)]
    age(open_task(agent, waiting), 200)  # waiting for the user: not stuck
    assert changelist(operator_client, stuck="5") == {submitted_10, working_60}
    assert changelist(operator_client, stuck="30") == {working_60}
    assert changelist(operator_client, stuck="120") == set()
    assert len(changelist(operator_client, stuck="not-a-number")) == 5


def test_filters_by_agent_state_and_protocol_version(
    operator_client: Client, agent_factory: Any
) -> None:
    first, second = agent_factory("first"), agent_factory("second")
    done = open_task(first, completed())
    busy = open_task(second, working())
    assert changelist(operator_client, agent__id__exact=str(first.pk)) == {done}
    assert changelist(operator_client, state__exact="working") == {busy}
    assert changelist(operator_client, protocol_version__exact="1.0") == {done, busy}
    assert changelist(operator_client, protocol_version__exact="0.3") == set()


def test_search_finds_tasks_by_id_context_and_owner(
    operator_client: Client, agent_factory: Any
) -> None:
    agent = agent_factory("searched")
    mine = open_task(agent, owner="apikey:5", context_id="ctx-alpha")
    other = open_task(agent, owner="user:9", context_id="ctx-beta")
    assert changelist(operator_client, q="ctx-alpha") == {mine}
    assert changelist(operator_client, q="user:9") == {other}
    assert changelist(operator_client, q=str(other.id)) == {other}


# The task page.


def test_the_task_page_shows_its_timeline_messages_and_artifacts(
    operator_client: Client, agent_factory: Any
) -> None:
    task = open_task(agent_factory("timeline"), [*working(), report_artifact()])
    page = operator_client.get(reverse("admin:tasks_task_change", args=[task.id]))
    html = page.content.decode()
    assert "created → submitted; first message: Hello, agent" in html
    assert "→ working" in html
    assert "artifact Quarterly report [last chunk]" in html
    assert "Hello, agent" in html and "Summary: all good" in html
    artifact = Artifact.objects.get(task=task)
    download = reverse("admin:tasks_task_file", args=[task.id, "artifact", artifact.pk, 0])
    assert f'href="{download}"' in html
    assert 'href="https://files.example.com/big.bin"' in html
    assert 'id="cancel-task"' in html


def test_a_finished_task_has_no_cancel_button(operator_client: Client, agent_factory: Any) -> None:
    task = open_task(agent_factory("finished"), completed())
    html = operator_client.get(reverse("admin:tasks_task_change", args=[task.id])).content.decode()
    assert 'id="cancel-task"' not in html


# Downloads.


def test_a_file_part_downloads_with_its_exact_bytes_and_a_safe_name(
    operator_client: Client, agent_factory: Any
) -> None:
    task = open_task(agent_factory("files"), [report_artifact()])
    artifact = Artifact.objects.get(task=task)
    url = reverse("admin:tasks_task_file", args=[task.id, "artifact", artifact.pk, 0])
    response = operator_client.get(url)
    assert response.status_code == 200
    assert response.content == PDF_BYTES
    assert response["Content-Type"] == "application/octet-stream"  # never the part's own type
    assert response["Content-Disposition"] == "attachment; filename*=UTF-8''report.pdf"
    assert response["X-Content-Type-Options"] == "nosniff"


def test_a_file_in_a_message_downloads_too(operator_client: Client, agent_factory: Any) -> None:
    upload = pb.Part(raw=b"a,b\n1,2\n", media_type="text/html\r\nX-Evil: 1", filename="données.csv")
    task = open_task(
        agent_factory("upload"),
        message=user_message(parts=[pb.Part(text="see"), upload], message_id="first"),
    )
    row = Message.objects.get(task=task)
    response = operator_client.get(
        reverse("admin:tasks_task_file", args=[task.id, "message", row.pk, 1])
    )
    assert response.content == b"a,b\n1,2\n"
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"] == "attachment; filename*=UTF-8''donn%C3%A9es.csv"


def test_downloads_refuse_parts_that_are_not_files_or_belong_to_another_task(
    operator_client: Client, agent_factory: Any
) -> None:
    agent = agent_factory("nofile")
    task = open_task(agent, [report_artifact()])
    other = open_task(agent)
    artifact = Artifact.objects.get(task=task)
    for args in (
        [task.id, "artifact", artifact.pk, 1],  # a url part
        [task.id, "artifact", artifact.pk, 9],
        [other.id, "artifact", artifact.pk, 0],
        [task.id, "event", artifact.pk, 0],
    ):
        assert operator_client.get(reverse("admin:tasks_task_file", args=args)).status_code == 404


def test_non_staff_users_cannot_download(
    client: Client, developer: Any, agent_factory: Any
) -> None:
    task = open_task(agent_factory("guarded"), [report_artifact()])
    artifact = Artifact.objects.get(task=task)
    client.force_login(developer)
    url = reverse("admin:tasks_task_file", args=[task.id, "artifact", artifact.pk, 0])
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('admin:login')}?next={url}"
    assert PDF_BYTES not in response.content


# Cancel.


def test_the_cancel_action_cancels_an_open_task_through_the_lifecycle(
    operator_client: Client, agent_factory: Any
) -> None:
    task = open_task(agent_factory("cancelme"), working())
    response = cancel_action(operator_client, task)
    task.refresh_from_db()
    assert task.state == TaskState.CANCELED
    event = TaskEvent.objects.filter(task=task).order_by("sequence").last()
    assert event is not None and event.sequence == task.last_sequence
    assert event.payload["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert "Canceled by the operator op." in str(task.status_message)
    assert {k: v for k, v in task.status_message.items() if k != "messageId"} == {
        "contextId": "ctx-1",
        "taskId": str(task.id),
        "role": "ROLE_AGENT",
        "parts": [{"text": "Canceled by the operator op."}],
    }
    assert "1 task(s) canceled." in page_messages(response)


def test_the_cancel_action_refuses_a_finished_task(
    operator_client: Client, agent_factory: Any
) -> None:
    agent = agent_factory("mixed")
    done = open_task(agent, completed())
    busy = open_task(agent)
    events_before = TaskEvent.objects.filter(task=done).count()
    response = cancel_action(operator_client, done, busy)
    done.refresh_from_db()
    busy.refresh_from_db()
    assert done.state == TaskState.COMPLETED
    assert busy.state == TaskState.CANCELED
    assert TaskEvent.objects.filter(task=done).count() == events_before
    shown = page_messages(response)
    assert "1 task(s) canceled." in shown
    assert any("not cancelable" in m and str(done.id) in m for m in shown)


def test_the_cancel_button_cancels_the_task_and_returns_to_its_page(
    operator_client: Client, agent_factory: Any
) -> None:
    task = open_task(agent_factory("button"), working())
    url = reverse("admin:tasks_task_cancel", args=[task.id])
    assert operator_client.get(url).status_code == 405
    response = operator_client.post(url)
    assert response["Location"] == reverse("admin:tasks_task_change", args=[task.id])
    task.refresh_from_db()
    assert task.state == TaskState.CANCELED


def test_the_cancel_button_reports_a_finished_task(
    operator_client: Client, agent_factory: Any
) -> None:
    task = open_task(agent_factory("late"), completed())
    response = operator_client.post(reverse("admin:tasks_task_cancel", args=[task.id]), follow=True)
    task.refresh_from_db()
    assert task.state == TaskState.COMPLETED
    assert response.redirect_chain == [(reverse("admin:tasks_task_change", args=[task.id]), 302)]
    assert any("not cancelable" in m for m in page_messages(response))
