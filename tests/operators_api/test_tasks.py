"""Tasks: read and filtered in cursor pages; canceled through the lifecycle, as the admin does."""

from __future__ import annotations

import json

import pytest

from tasks.models import Task, TaskEvent, TaskState
from tests.factories.agents import make_agent
from tests.factories.tasks import ended, open_task
from tests.operators_api.conftest import Api

pytestmark = pytest.mark.django_db


def test_tasks_filtered_by_agent_state_and_owner(staff_api: Api) -> None:
    north, south = make_agent("north"), make_agent("south")
    working = open_task(north, owner="user:7")
    done = open_task(north, ended(), owner="apikey:3")
    elsewhere = open_task(south, owner="user:7")

    def ids(query: str) -> set[str]:
        response = staff_api.get(f"tasks?{query}")
        assert response.status_code == 200, response.json()
        return {t["id"] for t in response.json()["results"]}

    assert ids("agent=north") == {str(working.id), str(done.id)}
    assert ids("state=completed") == {str(done.id)}
    assert ids("owner=user:7") == {str(working.id), str(elsewhere.id)}
    assert ids("agent=north&owner=user:7") == {str(working.id)}
    assert staff_api.get("tasks?state=sleeping").json()["error"]["field"] == "state"


def test_tasks_come_in_cursor_pages(staff_api: Api) -> None:
    agent = make_agent("busy")
    made = {str(open_task(agent).id) for _ in range(5)}
    seen: list[str] = []
    page = staff_api.get("tasks?limit=2").json()
    while True:
        seen.extend(t["id"] for t in page["results"])
        if not page["next"]:
            break
        page = staff_api.client.get(page["next"], **staff_api.headers).json()
    assert len(seen) == 5
    assert set(seen) == made


def test_cancel_goes_through_the_lifecycle(staff_api: Api, operator: object) -> None:
    task = open_task(make_agent("slow"))
    response = staff_api.post(f"tasks/{task.id}/cancel")
    assert response.status_code == 200, response.json()
    assert response.json()["state"] == TaskState.CANCELED
    task.refresh_from_db()
    assert task.state == TaskState.CANCELED
    # The lifecycle wrote the status subscribers and webhooks see, with who canceled it.
    last = TaskEvent.objects.filter(task=task).order_by("-sequence").first()
    assert last is not None and last.sequence == task.last_sequence
    assert "Canceled by the operator op" in json.dumps(task.status_message)


def test_a_finished_task_is_not_canceled(staff_api: Api) -> None:
    task = open_task(make_agent("quick"), ended())
    response = staff_api.post(f"tasks/{task.id}/cancel")
    assert response.status_code == 409
    assert "completed" in response.json()["error"]["message"]
    assert Task.objects.get(pk=task.pk).state == TaskState.COMPLETED


def test_unknown_tasks_are_404(staff_api: Api) -> None:
    assert staff_api.get("tasks/not-a-uuid").status_code == 404
    assert staff_api.post("tasks/00000000-0000-0000-0000-000000000000/cancel").status_code == 404
