"""The audit log on the real stack (two web processes, PostgreSQL, Redis): calls with a user's
API key and with an application's client-credentials token, spread over both web processes,
become one CredentialUse row per agent, principal and credential, whose count adds up what
every process counted, once each process has flushed (AUDIT_FLUSH_SECONDS is short here);
an operator finds them in the admin's list, narrowed to an agent and to a principal."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
from typing import Any

import httpx
import pytest

from tests.factories.messages import user_message
from tests.helpers import ROOT
from tests.integration.clients import a2a_client, send
from tests.integration.stack import Hub

pytestmark = pytest.mark.integration

FLUSH_TIMEOUT = 90.0  # generous: a loaded machine's heartbeats run late

MAKE_CALLERS = """
import django, secrets, sys; django.setup()
from django.contrib.auth.models import User
from oauth2_provider.models import Application
from agents.models import ApiKey
suffix = sys.argv[1]
auditor = User.objects.create_superuser(f"auditor-{suffix}", "", "auditor-pass-" + suffix)
alice = User.objects.create_user(f"alice-{suffix}")
key, raw = ApiKey.issue(f"alice's key {suffix}", owner=alice)
secret = secrets.token_urlsafe(24)
app = Application.objects.create(name=f"robot-{suffix}", client_type="confidential",
    authorization_grant_type="client-credentials", client_secret=secret)
print(alice.pk, key.pk, raw, app.pk, app.client_id, secret)
"""


def make_callers(hub: Hub, suffix: str) -> dict[str, Any]:
    """An operator, a user with a key and an application, made as an operator would."""
    done = subprocess.run([sys.executable, "-c", MAKE_CALLERS, suffix], cwd=ROOT, env=hub.env,
                          capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    alice, key_id, raw, app, client_id, secret = done.stdout.split()[-6:]
    return {"alice": int(alice), "key_id": int(key_id), "key": raw, "app": int(app),
            "client": (client_id, secret)}  # fmt: skip


def client_token(base: str, client: tuple[str, str]) -> str:
    answer = httpx.post(f"{base}/o/token/", data={"grant_type": "client_credentials"}, auth=client)
    assert answer.status_code == 200, answer.text
    token: str = answer.json()["access_token"]
    return token


def call(base: str, slug: str, headers: dict[str, str], times: int) -> None:
    async def scenario() -> None:
        async with a2a_client(base, slug, "1.0", headers=headers) as client:
            for n in range(times):
                await send(client, user_message(f"audited call {n}"))

    asyncio.run(scenario())


def uses_of(hub: Hub, principal: str) -> dict[tuple[str, str], int]:
    rows = hub.query(
        "SELECT agent_slug, credential_kind, calls FROM agents_credentialuse WHERE principal = %s",
        (principal,),
    )
    return {(slug, kind): calls for slug, kind, calls in rows}


def wait_for_uses(hub: Hub, principal: str, expected: dict[tuple[str, str], int]) -> None:
    deadline = time.monotonic() + FLUSH_TIMEOUT
    while (seen := uses_of(hub, principal)) != expected and time.monotonic() < deadline:
        time.sleep(0.5)
    assert seen == expected


def admin_session(base: str, username: str, password: str) -> httpx.Client:
    """A client signed in to the admin, as an operator signs in."""
    browser = httpx.Client(base_url=base, timeout=30)
    page = browser.get("/admin/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token is not None
    signed_in = browser.post("/admin/login/?next=/admin/", data={
        "username": username, "password": password, "csrfmiddlewaretoken": token.group(1),
    })  # fmt: skip
    assert signed_in.status_code == 302, signed_in.text[:500]
    return browser


def test_calls_with_a_key_and_a_token_show_up_in_the_audit_log(hub: Hub) -> None:
    suffix = str(int(time.time() * 1000))
    made = make_callers(hub, suffix)
    key = {"X-API-Key": made["key"]}
    token = {"Authorization": f"Bearer {client_token(hub.web_a, made['client'])}"}
    alice, robot = f"user:{made['alice']}", f"app:{made['app']}"

    call(hub.web_a, "echo", key, times=2)
    call(hub.web_b, "echo", key, times=1)
    call(hub.web_b, "echo", token, times=1)
    call(hub.web_a, "secure", token, times=2)

    wait_for_uses(hub, alice, {("echo", "api_key"): 3})
    wait_for_uses(hub, robot, {("echo", "oauth2_token"): 1, ("secure", "oauth2_token"): 2})
    [(last_used,)] = hub.query("SELECT last_used_at FROM agents_apikey WHERE id = %s",
                               (made["key_id"],))  # fmt: skip
    assert last_used is not None

    [(echo_id,)] = hub.query("SELECT id FROM agents_agent WHERE slug = 'echo'")
    admin = admin_session(hub.web_b, f"auditor-{suffix}", f"auditor-pass-{suffix}")
    try:
        on_echo = admin.get("/admin/agents/credentialuse/", params={"agent__id__exact": echo_id})
        robots = admin.get("/admin/agents/credentialuse/", params={"principal": robot})
        robot_on_echo = admin.get(
            "/admin/agents/credentialuse/",
            params={"agent__id__exact": echo_id, "principal": robot},
        )
    finally:
        admin.close()
    assert on_echo.status_code == robots.status_code == robot_on_echo.status_code == 200
    echo_rows, robot_rows = result_rows(on_echo.text), result_rows(robots.text)
    assert f"apikey:{made['key_id']}" in echo_rows and f"{robot}/token:" in echo_rows
    # Counted as cell text (a long principal is shortened, its whole text in a title too).
    assert robot_rows.count(f">{robot}/token:") == 2 and "apikey:" not in robot_rows
    assert result_rows(robot_on_echo.text).count(f">{robot}/token:") == 1
    assert "secure" not in result_rows(robot_on_echo.text)


def result_rows(page: str) -> str:
    """The changelist's table of rows, without its filters (which name every agent)."""
    match = re.search(r'<table id="result_list">.*?</table>', page, re.S)
    assert match is not None
    return match.group(0)
