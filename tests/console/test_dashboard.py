"""The dashboard on the admin's home page: what an operator reads there, and who may read it."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from a2ahub import processes
from tasks.models import TaskState
from tests.console.factories import finished_task, stuck_task, waiting_deliveries
from tests.factories.agents import make_agent

pytestmark = pytest.mark.django_db


def home(client: Client) -> str:
    response = client.get(reverse("admin:index"))
    assert response.status_code == 200
    return response.content.decode()


def section(page: str, element_id: str) -> str:
    """The text of the dashboard section with this id, tags removed."""
    match = re.search(rf'<section[^>]*id="{element_id}".*?</section>', page, re.S)
    assert match, f"no section {element_id}"
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", match.group(0)))


def test_the_admin_is_named_for_the_hub_and_its_home_is_the_dashboard(
    operator_client: Client,
) -> None:
    page = home(operator_client)
    assert "<title>A2A Hub dashboard | A2A Hub</title>" in page
    assert '<div id="site-name"><a href="/admin/">A2A Hub</a></div>' in page
    assert 'id="console-dashboard"' in page
    assert 'data-socket="/ws/console/dashboard/"' in page
    nav = re.search(r'<nav id="console-nav".*?</nav>', page, re.S)
    assert nav and "Developer pages" in nav.group(0) and 'href="/dev/agents/"' in nav.group(0)
    assert "Site administration" not in page


def test_a_task_finished_a_moment_ago_is_counted_and_listed(
    operator_client: Client, echo: Any
) -> None:
    task = finished_task(echo, TaskState.COMPLETED, took=0.3)
    finished_task(echo, TaskState.FAILED, took=40)

    page = home(operator_client)

    assert str(task.id)[:8] in section(page, "console-recent")
    assert "completed 1" in section(page, "console-states")
    assert "failed 1" in section(page, "console-states")
    row = re.search(r'<tr data-agent="echo".*?</tr>', page, re.S)
    assert row
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(0), re.S)
    # open, finished 1 h, failed 1 h, finished 24 h, failed 24 h, p50, p95
    assert cells[1:8] == ["0", "2", "1", "2", "1", "≤ 0.5 s", "≤ 60 s"]


def test_each_agent_has_a_chat_link_to_the_developer_pages(operator_client: Client) -> None:
    make_agent("parrot")
    page = home(operator_client)
    assert 'href="/dev/agents/parrot/chat/" class="chat-link"' in page
    # An operator may chat with any agent, not only their own.
    assert operator_client.get("/dev/agents/parrot/chat/").status_code == 200


def test_stuck_tasks_are_counted_past_the_threshold_only(
    operator_client: Client, echo: Any, settings: Any
) -> None:
    settings.CONSOLE_STUCK_MINUTES = 5
    stuck = stuck_task(echo, minutes=12)
    fresh = stuck_task(echo, minutes=1)

    text = section(home(operator_client), "console-stuck")

    assert str(stuck.id)[:8] in text
    assert str(fresh.id)[:8] not in text
    assert re.search(r"no progress for 5 min\) 1 ", text)


def test_failing_push_queues_show_the_receiver_host_but_not_the_secret_in_its_url(
    operator_client: Client, echo: Any
) -> None:
    task = finished_task(echo)
    waiting_deliveries(task, "https://hooks.example.net/in?token=s3cret-value", 5, 2)

    page = home(operator_client)
    text = section(page, "console-push")

    assert "hooks.example.net" in text
    assert "s3cret-value" not in page
    assert "Retrying deliveries: 2" in text
    assert "HTTP 503 from the receiver" in text


def test_expiring_registrations_have_a_labelled_slot_and_no_numbers(
    operator_client: Client,
) -> None:
    text = section(home(operator_client), "console-registrations")
    assert "Not available yet" in text
    assert not re.search(r"\d", text)


def test_live_processes_come_from_their_heartbeats(operator_client: Client, settings: Any) -> None:
    settings.REDIS_URL = ""
    processes.record("worker", 1_000.0)
    text = section(home(operator_client), "console-health")
    assert f"worker {processes.IDENTITY}" in text
    assert "database ready" in text


@pytest.mark.parametrize("who", ["developer_client", "client"])
def test_the_dashboard_is_for_staff_only(who: str, request: pytest.FixtureRequest) -> None:
    client: Client = request.getfixturevalue(who)
    response = client.get(reverse("admin:index"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))
