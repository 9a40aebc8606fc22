"""A developer's tasks in a real browser, against a hub of one web process and one Celery worker
on PostgreSQL and Redis: they send with "Try it", see the task in "Recent tasks" at once, open
it from the list and read the agent's answer, artifacts and status; a slow task's page turns
"Completed" and shows its artifact without a reload, then stops asking; a snippet's copy button
puts the snippet on the clipboard.

Persona: a developer made here (not staff) who owns `<name>-parrot` (echo) and `<name>-slow`
(the slow demo executor), both open to anyone.

The agent page and the task page are saved as screenshots (1400 px wide): in
`A2AHUB_SCREENSHOTS` when set, else in the test's temporary directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser import chromium
from tests.helpers import ROOT
from tests.integration.small_hub import own_small_hub
from tests.integration.stack import Hub

pytestmark = [pytest.mark.integration, pytest.mark.browser]

PASSWORD = "tasks-pass-123"
SETUP = """
import sys
import django
django.setup()
from django.contrib.auth.models import User
from agents.models import Agent, Skill
name = sys.argv[1]
owner = User.objects.create_user(name, "", sys.argv[2])
for slug, kind in ((f"{name}-parrot", "echo"), (f"{name}-slow", "slow")):
    agent = Agent.objects.create(slug=slug, name=slug.title(), description="Answers.",
                                 executor_kind=kind, owner=owner)
    Skill.objects.create(agent=agent, skill_id="answer", name="Answer",
                         description="Answers.", tags=["demo"])
"""
WIDE = {"width": 1400, "height": 900}
WAIT_MS = 30_000
SLOW_SECONDS = 8  # long enough for the page to open while the task works, on a busy machine


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """(Named `hub`, as the session's is: a failing test's report then carries its logs.)"""
    with own_small_hub("devtasks", tmp_path_factory.mktemp("developer-tasks")) as running:
        yield running


@pytest.fixture(scope="module")
def developer(hub: Hub) -> str:
    name = f"dev-{uuid.uuid4().hex[:8]}"
    subprocess.run([sys.executable, "-c", SETUP, name, PASSWORD], cwd=ROOT, env=hub.env,
                   check=True, timeout=120, capture_output=True)  # fmt: skip
    return name


def screenshots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("A2AHUB_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def sign_in(page: Page, base: str, name: str) -> None:
    page.goto(f"{base}/dev/login/")
    page.fill("#id_username", name)
    page.fill("#id_password", PASSWORD)
    page.click("#login-form button[type=submit]")
    expect(page.locator("h1")).to_have_text("My agents")


def test_a_developer_tries_an_agent_and_reads_the_task_from_recent_tasks(
    hub: Hub, developer: str, tmp_path: Path
) -> None:
    slug = f"{developer}-parrot"
    with chromium() as browser:
        page = browser.new_page(viewport=WIDE)
        sign_in(page, hub.web_a, developer)
        page.goto(f"{hub.web_a}/dev/agents/{slug}/")
        expect(page.locator("#recent-tasks")).to_contain_text("No tasks yet.")
        page.fill("#try-text", "polly wants a cracker")
        page.click("#try-form button[type=submit]")
        expect(page.locator("#try-state")).to_have_text("completed", timeout=WAIT_MS)

        rows = page.locator("#recent-tasks tbody tr")
        expect(rows).to_have_count(1)  # without a reload
        expect(rows.first).to_contain_text("Completed")
        expect(rows.first).to_contain_text(developer)  # the caller, by name
        page.screenshot(path=str(screenshots(tmp_path) / "agent-page.png"), full_page=True)

        rows.first.locator("a").click()
        expect(page.locator("h1")).to_contain_text(f"of {slug}")
        expect(page.locator("#task-state")).to_have_text("Completed")
        expect(page.locator("#task-conversation")).to_contain_text("polly wants a cracker")
        expect(page.locator("#task-artifacts .artifact")).to_contain_text("polly wants a cracker")
        page.screenshot(path=str(screenshots(tmp_path) / "task-page.png"), full_page=True)


def test_a_running_tasks_page_ends_true_without_a_reload(
    hub: Hub, developer: str, tmp_path: Path
) -> None:
    slug = f"{developer}-slow"
    with chromium() as browser:
        page = browser.new_page(viewport=WIDE)
        sign_in(page, hub.web_a, developer)
        task_id = start_slow_task(hub, slug, SLOW_SECONDS)
        page.goto(f"{hub.web_a}/dev/agents/{slug}/tasks/{task_id}/")
        expect(page.locator("#task-body")).to_have_attribute("data-moving", "true")
        expect(page.locator("#task-state")).to_have_text("Working", timeout=WAIT_MS)
        expect(page.locator("#task-state")).to_have_text("Completed", timeout=WAIT_MS)
        expect(page.locator("#task-artifacts .artifact")).to_contain_text(
            f"Worked for {SLOW_SECONDS} seconds"
        )
        expect(page.locator("#task-conversation")).to_contain_text(
            f"{SLOW_SECONDS} of {SLOW_SECONDS} seconds done"
        )
        expect(page.locator("#task-body")).to_have_attribute("data-moving", "false")
        page.screenshot(path=str(screenshots(tmp_path) / "task-live.png"), full_page=True)


def start_slow_task(hub: Hub, slug: str, seconds: int) -> str:
    """A SendMessage that answers at once with the task, which then runs on the worker."""
    parts = [{"text": str(seconds)}]
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": parts}
    params = {"message": message, "configuration": {"returnImmediately": True}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
    sent = httpx.post(f"{hub.web_a}/agents/{slug}/jsonrpc/", json=body, timeout=30,
                      headers={"A2A-Version": "1.0"})  # fmt: skip
    return str(sent.json()["result"]["task"]["id"])


def test_a_snippets_copy_button_puts_it_on_the_clipboard(hub: Hub, developer: str) -> None:
    with chromium() as browser:
        context = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
        page = context.new_page()
        sign_in(page, hub.web_a, developer)
        page.goto(f"{hub.web_a}/dev/agents/{developer}-parrot/")
        button = page.locator("#figure-curl button.copy")
        button.click()
        expect(button).to_have_text("Copied")
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied == page.locator("#snippet-curl").inner_text()
        assert f"/agents/{developer}-parrot/jsonrpc/" in copied
