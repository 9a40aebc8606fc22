"""Site security of the hub's own pages: security headers (a Content-Security-Policy that runs
only the hub's own script files, which the pages keep to), cookies flagged Secure when the hub
is served over HTTPS, and sign-in throttling on the developer pages and the admin."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.factories.agents import owned
from tests.factories.tasks import open_task
from tests.test_settings import load_settings

pytestmark = pytest.mark.django_db

PASSWORD = "developer-pass-123"
LOGINS = ["/dev/login/", "/admin/login/"]


def assert_secured(response: Any) -> None:
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Frame-Options"] == "DENY"
    policy = response["Content-Security-Policy"]
    assert "script-src 'self';" in policy and "frame-ancestors 'none'" in policy
    assert "connect-src 'self' ws://testserver wss://testserver" in policy


def inline_code(html: str) -> list[str]:
    """Script elements without `src` and event-handler attributes: what the policy blocks."""
    scripts = [tag for tag in re.findall(r"<script\b[^>]*>", html) if " src=" not in tag]
    handlers = re.findall(r"<[^>]*\son[a-z]+\s*=[^>]*>", html)
    return scripts + handlers


def test_public_and_sign_in_pages_carry_the_security_headers() -> None:
    for path in ["/", *LOGINS]:
        response = Client().get(path)
        assert response.status_code == 200, path
        assert_secured(response)


def test_json_answers_carry_no_page_policy() -> None:
    response = Client().get("/.well-known/agent-card.json")

    assert "Content-Security-Policy" not in response


def test_the_developer_and_admin_pages_run_no_inline_code(
    developer: User, operator: User, operator_client: Client
) -> None:
    agent = owned("mine", developer)
    task = open_task(agent)
    client = Client()
    client.force_login(developer)
    pages = {
        path: client.get(path)
        for path in [
            "/dev/agents/",
            "/dev/register/",
            "/dev/agents/mine/",
            "/dev/agents/mine/edit/",
            "/dev/agents/mine/chat/",
            "/dev/agents/mine/keys/",
        ]
    }
    pages |= {
        path: operator_client.get(path)
        for path in [
            "/admin/",
            "/admin/agents/agent/",
            f"/admin/agents/agent/{agent.pk}/change/",
            f"/admin/tasks/task/{task.pk}/change/",
            "/admin/tasks/task/",
        ]
    }

    for path, page in pages.items():
        assert page.status_code == 200, path
        assert_secured(page)
        assert inline_code(page.content.decode()) == [], path


def test_the_cancel_button_of_a_task_still_asks_first(operator_client: Client, db: None) -> None:
    agent = owned("mine", User.objects.create_user("someone"))
    task = open_task(agent)

    page = operator_client.get(f"/admin/tasks/task/{task.pk}/change/").content.decode()

    assert 'data-confirm="Cancel this task? Its agent is told to stop."' in page
    assert "admin_extra/confirm.js" in page
    script = Path(__file__).resolve().parent.parent / "static/admin_extra/confirm.js"
    assert "window.confirm(button.dataset.confirm)" in script.read_text()


# -- cookies over HTTPS ---------------------------------------------------------------------

FLAGS = (
    "import django; django.setup(); from django.conf import settings as s; "
    "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_PROXY_SSL_HEADER)"
)


@pytest.mark.parametrize(
    ("env", "printed"),
    [
        ({}, "False False None"),
        ({"PUBLIC_BASE_URL": "http://hub.example.com"}, "False False None"),
        ({"PUBLIC_BASE_URL": "https://hub.example.com"}, "True True None"),
        (
            {"PUBLIC_BASE_URL": "https://hub.example.com", "TRUST_X_FORWARDED_PROTO": "1"},
            "True True ('HTTP_X_FORWARDED_PROTO', 'https')",
        ),
    ],
)
def test_cookies_are_secure_over_https_and_a_proxy_is_believed_only_when_trusted(
    tmp_path: Path, env: dict[str, str], printed: str
) -> None:
    result = load_settings(tmp_path, FLAGS, **env)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == printed


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("TRUST_X_FORWARDED_PROTO", "perhaps"),
        ("LOGIN_THROTTLE_ATTEMPTS", "-1"),
        ("LOGIN_THROTTLE_WINDOW_SECONDS", "0"),
    ],
)
def test_a_bad_security_setting_stops_start_up_naming_it(
    tmp_path: Path, name: str, value: str
) -> None:
    result = load_settings(tmp_path, **{name: value})

    assert result.returncode != 0
    assert name in result.stderr.splitlines()[-1]


# -- sign-in throttling ---------------------------------------------------------------------


@pytest.fixture
def person() -> User:
    # A fresh name per test: counts live in the cache (Redis in the real-stack runs), which
    # the test database's rollback does not reset.
    return User.objects.create_user(f"dev-{uuid.uuid4().hex[:8]}", password=PASSWORD)


def attempt(client: Client, path: str, username: str, password: str) -> Any:
    return client.post(path, {"username": username, "password": password})


@pytest.mark.parametrize("path", LOGINS)
def test_after_the_allowed_failures_sign_in_is_refused_with_429(
    person: User, path: str, settings: Any
) -> None:
    if path.startswith("/admin/"):
        person.is_staff = True
        person.save()
    client = Client()
    failed = [attempt(client, path, person.username, "wrong").status_code for _ in range(5)]

    refused = attempt(client, path, person.username, PASSWORD)  # even the right password

    assert failed == [200] * 5  # the form again, with its error
    assert refused.status_code == 429
    assert refused.content.decode().startswith("Too many failed sign-in attempts")
    assert "Try again in 15 minutes." in refused.content.decode()
    assert refused["Retry-After"] == "900"
    assert "_auth_user_id" not in client.session


def test_the_count_is_per_username_and_a_success_clears_it(person: User) -> None:
    other = User.objects.create_user(f"dev-{uuid.uuid4().hex[:8]}", password=PASSWORD)
    client = Client()
    for _ in range(4):
        attempt(client, "/dev/login/", person.username, "wrong")

    others_sign_in = attempt(Client(), "/dev/login/", other.username, PASSWORD)
    own_sign_in = attempt(Client(), "/dev/login/", person.username, PASSWORD)
    after = [attempt(client, "/dev/login/", person.username, "wrong").status_code
             for _ in range(5)]  # fmt: skip

    assert others_sign_in.status_code == 302
    assert own_sign_in.status_code == 302  # the fifth try, and right: the count starts anew
    assert after == [200] * 5
    assert attempt(client, "/dev/login/", person.username, PASSWORD).status_code == 429


def test_the_count_is_per_address(person: User) -> None:
    for _ in range(5):
        Client(REMOTE_ADDR="10.0.0.1").post(
            "/dev/login/", {"username": person.username, "password": "wrong"}
        )

    elsewhere = Client(REMOTE_ADDR="10.0.0.2").post(
        "/dev/login/", {"username": person.username, "password": PASSWORD}
    )

    assert elsewhere.status_code == 302


def test_the_limit_and_window_are_settings(person: User, settings: Any) -> None:
    settings.LOGIN_THROTTLE_ATTEMPTS = 2
    settings.LOGIN_THROTTLE_WINDOW_SECONDS = 60
    client = Client()
    for _ in range(2):
        attempt(client, "/dev/login/", person.username, "wrong")

    refused = attempt(client, "/dev/login/", person.username, PASSWORD)

    assert refused.status_code == 429
    assert "Try again in 1 minute." in refused.content.decode()


def test_zero_attempts_turns_throttling_off(person: User, settings: Any) -> None:
    settings.LOGIN_THROTTLE_ATTEMPTS = 0
    client = Client()
    for _ in range(8):
        attempt(client, "/dev/login/", person.username, "wrong")

    assert attempt(client, "/dev/login/", person.username, PASSWORD).status_code == 302
