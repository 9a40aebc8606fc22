"""Applications and an agent's access on the developer pages, in a real browser against the
distributed hub (two web processes, Celery workers, PostgreSQL, Redis): a developer creates two
applications, reads the first one's secret on the page that made it (and never again), lists it
on their agent, and from then on a client-credentials token of that application (from
/o/token/) calls the agent over A2A while the other application's token gets 403, on the web
process that saved the change at once and on the other within its agent cache's seconds; the
access page then shows the change and the calls, as the audit log recorded them.

Persona: a developer made here (not staff) who owns `<name>-vault`, an echo agent open to
anyone until they restrict it.

The access page is saved as a screenshot: in `A2AHUB_SCREENSHOTS` when set, else in the
test's temporary directory; the path is printed (`pytest -s` shows it).
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser import chromium, screenshot
from tests.helpers import ROOT, eventually
from tests.integration.stack import Hub

pytestmark = [pytest.mark.integration, pytest.mark.browser]

PASSWORD = "vault-pass-123"
SETUP = """
import sys
import django
django.setup()
from django.contrib.auth.models import User
from agents.models import Agent, Skill
name = sys.argv[1]
owner = User.objects.create_user(name, "", sys.argv[2])
agent = Agent.objects.create(slug=f"{name}-vault", name="Vault", description="Echoes.",
                             executor_kind="echo", owner=owner)
Skill.objects.create(agent=agent, skill_id="echo", name="Echo", description="Echoes.",
                     tags=["demo"])
"""
# Generous: the other web process keeps its agent for AGENT_CACHE_SECONDS (2 s by default).
OTHER_PROCESS_SECONDS = 30.0


def make_developer(hub: Hub) -> str:
    name = f"dev-{uuid.uuid4().hex[:8]}"
    subprocess.run([sys.executable, "-c", SETUP, name, PASSWORD], cwd=ROOT, env=hub.env,
                   check=True, timeout=120, capture_output=True)  # fmt: skip
    return name


def sign_in(page: Page, base: str, name: str) -> None:
    page.goto(f"{base}/dev/login/")
    page.fill("#id_username", name)
    page.fill("#id_password", PASSWORD)
    page.click("#login-form button[type=submit]")
    expect(page.locator("h1")).to_have_text("My agents")


def create_application(page: Page, name: str) -> tuple[str, str]:
    """Make a client-credentials application on the page; its client id and secret as shown."""
    page.fill("#id_name", name)
    page.select_option("#id_authorization_grant_type", "client-credentials")
    page.click("#application-form button[type=submit]")
    shown = page.locator("#new-application")
    expect(shown).to_contain_text(f"Application {name} is created.")
    return shown.locator(".client-id").inner_text(), shown.locator(".client-secret").inner_text()


def token(base: str, client: tuple[str, str]) -> str:
    answer = httpx.post(f"{base}/o/token/", data={"grant_type": "client_credentials"},
                        auth=client, timeout=30)  # fmt: skip
    assert answer.status_code == 200, answer.text
    return str(answer.json()["access_token"])


def call(base: str, slug: str, bearer: str) -> httpx.Response:
    body = {
        "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER",
                               "parts": [{"text": "open sesame"}]}},
    }  # fmt: skip
    headers = {"A2A-Version": "1.0", "Authorization": f"Bearer {bearer}"}
    return httpx.post(f"{base}/agents/{slug}/jsonrpc/", json=body, headers=headers, timeout=30)


def echoed(response: httpx.Response) -> bool:
    if response.status_code != 200:
        return False
    task = response.json()["result"]["task"]
    return bool(task["status"]["state"] == "TASK_STATE_COMPLETED")


def test_a_developer_restricts_an_agent_to_an_application_they_made(
    hub: Hub, tmp_path: Path
) -> None:
    name = make_developer(hub)
    slug = f"{name}-vault"
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        sign_in(page, hub.web_a, name)
        page.click(".site-header >> text=Applications")
        robot = create_application(page, "robot")
        stranger = create_application(page, "stranger")
        page.goto(f"{hub.web_a}/dev/applications/")  # a later visit: client ids, no secret
        expect(page.locator("#applications")).to_contain_text(robot[0])
        expect(page.locator("#new-application")).to_have_count(0)
        assert robot[1] not in page.content()

        robot_token, stranger_token = token(hub.web_a, robot), token(hub.web_a, stranger)
        for base in (hub.web_a, hub.web_b):  # open to anyone: each process caches it so
            assert echoed(call(base, slug, stranger_token))

        page.click(".site-header >> text=My agents")
        page.click("#my-agents >> text=Vault")
        page.click(".tabs >> text=Access")
        expect(page.locator("h1")).to_contain_text(slug)
        page.check("#access-form input[name=access][value=listed]")
        page.check("#access-form .field-allowed_applications label:has-text('robot') input")
        page.click("#access-form button[type=submit]")
        expect(page.locator(".messages")).to_contain_text(f"Who may call {slug} is saved.")
        expect(page.locator("#access-form input[name=access][value=listed]")).to_be_checked()
        expect(page.locator("#access-changes .change")).to_contain_text("developer pages")

        # The process that saved the change applies it at once; the other within its cache.
        assert echoed(call(hub.web_a, slug, robot_token))
        assert call(hub.web_a, slug, stranger_token).status_code == 403
        refused = eventually(
            lambda: call(hub.web_b, slug, stranger_token).status_code == 403,
            timeout=OTHER_PROCESS_SECONDS, interval=0.5,
        )  # fmt: skip
        assert refused, "the other web process kept the old rule"
        assert echoed(call(hub.web_b, slug, robot_token))

        # The calls reach the audit log when each process flushes (every second in the test
        # hubs): the page lists the robot's token, counted over both processes, and the
        # stranger's earlier calls; refused ones are not counted.
        def robots_row_counts_both_processes() -> bool:
            page.reload()
            robot_row = page.locator("#calls tr.use", has_text="application robot")
            return robot_row.count() == 1 and robot_row.locator(".calls").inner_text() == "2"

        assert eventually(robots_row_counts_both_processes, timeout=30, interval=1)
        expect(page.locator("#calls tr.use", has_text="application stranger")).to_contain_text(
            "OAuth2 token"
        )
        assert robot[1] not in page.content()
        screenshot(page, "developer-access", tmp_path)

        page.click(".tabs >> text=Overview")
        expect(page.locator("#access-summary")).to_contain_text("only the users, groups")
