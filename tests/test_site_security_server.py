"""A real server with an https PUBLIC_BASE_URL behind a trusted proxy: its pages carry the
security headers, and its CSRF and session cookies are Secure and HttpOnly as it sends them."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.helpers import ROOT, embedded_env, free_port, manage, wait_for_http

PUBLIC = "https://hub.example.com"
# What the trusted proxy in front of the hub would add to each request it passes on.
PROXIED = {"Host": "hub.example.com", "X-Forwarded-Proto": "https"}


@pytest.fixture(scope="module")
def https_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """One server for the module's tests: none of them changes what another reads."""
    env = embedded_env(tmp_path_factory.mktemp("https-hub")) | {
        "PUBLIC_BASE_URL": PUBLIC, "TRUST_X_FORWARDED_PROTO": "1"}  # fmt: skip
    manage("migrate", "--noinput", env=env)
    password = re.search(r"password '([^']+)'", manage("seed_demo", env=env).stdout)
    assert password is not None
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "manage.py", "runhub", "--port", str(port)], cwd=ROOT, env=env
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(f"{base}/healthz", process)
        yield base, password.group(1)
    finally:
        process.terminate()
        process.wait(timeout=30)


def cookie(response: httpx.Response, name: str) -> str:
    """The Set-Cookie line of `name` (the client's jar would not keep a Secure cookie over
    the plain HTTP between the proxy and the hub, so the lines are read as sent)."""
    lines = [line for line in response.headers.get_list("set-cookie") if line.startswith(name)]
    assert len(lines) == 1, response.headers
    return lines[0]


def test_over_https_the_cookies_are_secure_and_the_pages_secured(
    https_hub: tuple[str, str],
) -> None:
    base, password = https_hub
    # A first page and a password's hash took more than httpx's 5 s on a loaded CI machine.
    with httpx.Client(base_url=base, headers=PROXIED, timeout=30) as http:
        page = http.get("/dev/login/")
        csrf = cookie(page, "csrftoken")
        token = csrf.split(";")[0].split("=", 1)[1]
        form_token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert form_token is not None
        signed_in = http.post(
            "/dev/login/",
            data={"username": "operator", "password": password,
                  "csrfmiddlewaretoken": form_token.group(1)},
            headers={"Cookie": f"csrftoken={token}", "Referer": f"{PUBLIC}/dev/login/"},
        )  # fmt: skip

    assert page.status_code == 200
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "same-origin"
    assert page.headers["x-frame-options"] == "DENY"
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "; Secure" in csrf
    assert signed_in.status_code == 302, signed_in.text
    session = cookie(signed_in, "sessionid")
    assert "; Secure" in session and "; HttpOnly" in session


def test_a_client_claiming_https_is_not_believed_without_the_setting(tmp_path: Path) -> None:
    env = embedded_env(tmp_path) | {"PUBLIC_BASE_URL": PUBLIC}
    code = (
        "import django; django.setup(); from django.test import RequestFactory; "
        "print(RequestFactory().get('/', HTTP_X_FORWARDED_PROTO='https').is_secure())"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60, check=True)  # fmt: skip

    assert done.stdout.strip() == "False"


def test_probes_answer_a_pods_address_over_plain_http(https_hub: tuple[str, str]) -> None:
    """The kubelet and Prometheus ask the pod itself: by its address, over plain HTTP, with
    no proxy's headers. The probes answer; the site refuses that host."""
    base, _ = https_hub
    pod = {"Host": "10.244.1.7:8000"}
    with httpx.Client(base_url=base, headers=pod, timeout=30) as http:
        assert http.get("/healthz").json() == {"status": "ok"}
        ready = http.get("/readyz")
        assert (ready.status_code, ready.json()["status"]) == (200, "ready")
        assert http.get("/metrics").text.startswith("# HELP")
        assert http.get("/").status_code == 400
