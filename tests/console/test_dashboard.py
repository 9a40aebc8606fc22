"""The dashboard on the admin's home page: what an operator reads there, and who may read it."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from a2ahub import processes
from registry.models import Registration
from tasks.models import TaskState
from tests.console.factories import finished_task, stuck_task, waiting_deliveries
from tests.factories.agents import make_agent

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_earlier_rollup")]


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
    assert re.search(r'<div id="site-name"><a href="/admin/">(<img [^>]*>)?A2A Hub</a></div>', page)
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
    # The buckets the turns fell in, narrowed by the shortest (0.3 s) and longest (40 s).
    assert cells[1:8] == ["0", "2", "1", "2", "1", "0.3\u20130.5 s", "30\u201340 s"]


def test_each_agent_has_a_chat_link_to_the_developer_pages(operator_client: Client) -> None:
    make_agent("parrot")
    page = home(operator_client)
    assert 'href="/dev/agents/parrot/chat/" class="chat-link"' in page
    # An operator may chat with any agent, not only their own.
    assert operator_client.get("/dev/agents/parrot/chat/").status_code == 200


def test_an_agent_taking_oauth2_tokens_only_has_no_chat_link(operator_client: Client) -> None:
    # A signed-in session carries no OAuth2 token: its chat page is a 404.
    make_agent("vault", oauth2=True)
    page = home(operator_client)

    row = re.search(r'<tr data-agent="vault".*?</tr>', page, re.S)
    assert row and "tasks</a>" in row.group(0)
    assert "chat-link" not in row.group(0)
    assert operator_client.get("/dev/agents/vault/chat/").status_code == 404


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


def registered(slug: str, expires_in: timedelta) -> Registration:
    agent = make_agent(slug, executor_kind="a2a-remote")
    return Registration.objects.create(
        agent=agent, owner_principal="apikey:1", source="card", protocol_version="1.0",
        ttl_seconds=3600, expires_at=timezone.now() + expires_in,
    )  # fmt: skip


def test_registrations_about_to_expire_are_listed_from_the_registry(
    operator_client: Client,
) -> None:
    registered("soon", timedelta(minutes=30))
    registered("later", timedelta(days=3))

    text = section(home(operator_client), "console-registrations")

    assert "live now: 2" in text
    assert "soon" in text and re.search(r"in (29|30) min", text)
    assert "later" not in text
    assert "Not available" not in text and "until the hub has a registry" not in text


def test_without_registrations_the_panel_says_the_registry_is_empty(
    operator_client: Client,
) -> None:
    text = section(home(operator_client), "console-registrations")
    assert "No agent is registered in the registry." in text


def rollup_notice(page: str) -> str:
    match = re.search(r'<span[^>]*id="console-rollup-behind".*?</span>', page, re.S)
    assert match, "no rollup notice"
    return re.sub(r"<[^>]+>", "", match.group(0))


def test_an_embedded_hub_says_its_own_process_runs_the_rollup_not_celery(
    operator_client: Client, settings: Any
) -> None:
    settings.EMBEDDED = True
    settings.CONSOLE_ROLLUP_SECONDS = 60.0
    settings.TASK_HEARTBEAT_SECONDS = 10.0

    notice = rollup_notice(home(operator_client))

    assert "has not run yet" in notice
    assert "runs it in its own process, every 60 s" in notice
    assert "Celery" not in notice


def test_a_distributed_hub_asks_whether_celery_beat_runs(
    operator_client: Client, settings: Any
) -> None:
    settings.EMBEDDED = False
    assert "(is Celery beat running?)" in rollup_notice(home(operator_client))


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
