"""The task admin in a real browser: sign in, read a task's timeline, cancel it."""

from __future__ import annotations

from typing import Any

import pytest

from tasks.changes import StatusChange
from tasks.models import Task, TaskEvent, TaskState
from tests.browser import chromium
from tests.factories.tasks import open_task, report_artifact

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_operator_reads_the_timeline_and_cancels_the_task(
    live_server: Any, agent_factory: Any
) -> None:
    from django.contrib.auth.models import User

    User.objects.create_superuser("op", "op@example.com", "operator-pass-123")
    task = open_task(agent_factory("watched"), [StatusChange(TaskState.WORKING), report_artifact()])
    with chromium() as browser:
        page = browser.new_page()
        page.on("dialog", lambda dialog: dialog.accept())
        page.goto(f"{live_server.url}/admin/")
        page.fill("#id_username", "op")
        page.fill("#id_password", "operator-pass-123")
        page.click("input[type=submit]")
        page.goto(f"{live_server.url}/admin/tasks/task/?q={task.context_id}")
        page.click(f"#result_list a:text-is('{str(task.id)[:8]}')")
        timeline = page.locator("#events-group").inner_text()
        assert "first message: Hello, agent" in timeline
        assert "artifact Quarterly report" in timeline
        assert "report.pdf" in page.locator("#artifacts-group").inner_text()
        assert page.locator(".field-state .readonly").inner_text().lower() == "working"
        page.click("#cancel-task button")
        page.wait_for_selector(".messagelist .success")
        assert page.locator(".field-state .readonly").inner_text().lower() == "canceled"
        assert "→ canceled" in page.locator("#events-group").inner_text()
        assert page.locator("#cancel-task").count() == 0
    task.refresh_from_db()
    assert task.state == TaskState.CANCELED
    assert TaskEvent.objects.filter(task=task).count() == task.last_sequence == 4
    assert Task.objects.count() == 1
