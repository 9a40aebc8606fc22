"""Site security on the real stack: the pages' security headers as the web processes send
them, and sign-in throttling counted in Redis, so failures on one web process count on the
other."""

from __future__ import annotations

import re
import subprocess
import sys
import uuid

import httpx
import pytest

from tests.helpers import ROOT
from tests.integration.stack import Hub

pytestmark = pytest.mark.integration

PASSWORD = "throttle-pass-123"
MAKE_USER = """
import django, sys; django.setup()
from django.contrib.auth.models import User
User.objects.create_user(sys.argv[1], password=sys.argv[2])
"""


def make_user(hub: Hub) -> str:
    name = f"person-{uuid.uuid4().hex[:8]}"
    subprocess.run([sys.executable, "-c", MAKE_USER, name, PASSWORD], cwd=ROOT, env=hub.env,
                   capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    return name


def sign_in(base: str, username: str, password: str) -> httpx.Response:
    """One attempt on the developer sign-in, as a browser makes it (the form's CSRF token)."""
    with httpx.Client(base_url=base) as http:
        page = http.get("/dev/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert token is not None
        return http.post("/dev/login/", data={
            "username": username, "password": password, "csrfmiddlewaretoken": token.group(1),
        })  # fmt: skip


def test_the_pages_carry_the_security_headers(hub: Hub) -> None:
    for path in ("/", "/dev/login/", "/admin/login/"):
        response = httpx.get(f"{hub.web_a}{path}")
        assert response.status_code == 200, path
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "same-origin"
        assert response.headers["x-frame-options"] == "DENY"
        assert "script-src 'self'" in response.headers["content-security-policy"]


def test_failures_on_one_web_process_count_on_the_other(hub: Hub) -> None:
    person = make_user(hub)
    failed = [sign_in(hub.web_a, person, "wrong").status_code for _ in range(3)]
    failed += [sign_in(hub.web_b, person, "wrong").status_code for _ in range(2)]

    refused = [sign_in(base, person, PASSWORD) for base in (hub.web_a, hub.web_b)]

    assert failed == [200] * 5
    assert [r.status_code for r in refused] == [429, 429]
    assert refused[0].text.startswith("Too many failed sign-in attempts")
    assert sign_in(hub.web_a, make_user(hub), PASSWORD).status_code == 302  # others sign in
