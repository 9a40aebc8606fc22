"""The registry end to end on the real stack: the example agent (examples/, the official SDK's
server in a process of its own) registers itself, appears in the AI Catalog and in search, and
the official SDK client completes tasks with it through the hub in both protocol versions;
beat's health check finds its card answering.
Killed, it stops heartbeating: its registration expires (a 3-second TTL, swept by Celery
beat), it leaves the catalog and calls get the expiry error; restarted, it is back; stopped
gracefully, it deregisters. Seed 003's request, posted as is, gets the seed's fields. Its key
needs the `registry` scope; so does an application's client-credentials token from the hub's
token endpoint, which registers, renews and deregisters."""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.types import TaskState

from tests.factories.messages import user_message
from tests.helpers import ROOT, eventually, free_port
from tests.integration.applications import application
from tests.integration.clients import a2a_client, send, texts
from tests.integration.small_hub import own_small_hub
from tests.integration.stack import Hub

pytestmark = pytest.mark.integration

TTL = 3
SEED_003 = ROOT / "tests" / "fixtures" / "registry" / "seed-003-registration.json"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """A web process, a worker and beat (which sends the expiry sweep every half second)."""
    settings = {"OUTBOUND_ALLOWED_HOSTS": "127.0.0.1", "REGISTRY_SWEEP_SECONDS": "0.5",
                "AGENT_CACHE_SECONDS": "0.5", "REGISTRY_HEALTH_SECONDS": "1"}  # fmt: skip
    with own_small_hub("registry", tmp_path_factory.mktemp("registry"), settings) as running:
        running.start_beat()
        yield running


def issue_key(hub: Hub, scopes: tuple[str, ...] = ("registry",)) -> str:
    """A hub-wide API key, written as the admin would write it."""
    prefix = secrets.token_hex(6)
    raw = f"a2a_{prefix}_{secrets.token_urlsafe(32)}"
    hub.query(
        "INSERT INTO agents_apikey (name, prefix, key_hash, scopes, created_at) "
        "VALUES (%s, %s, %s, %s::jsonb, now()) RETURNING id",
        ("example agent", prefix, hashlib.sha256(raw.encode()).hexdigest(),
         json.dumps(list(scopes))),
    )  # fmt: skip
    return raw


class Example:
    """The example agent's process: started, killed or stopped as its operator would."""

    def __init__(self, hub: Hub, key: str, log: Path) -> None:
        self.command = [sys.executable, str(ROOT / "examples" / "self_registering_agent.py"),
                        "--hub", hub.web_a, "--key", key, "--port", str(free_port()),
                        "--ttl", str(TTL)]  # fmt: skip
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(self.command, cwd=ROOT, stdout=out,
                                            stderr=subprocess.STDOUT)  # fmt: skip

    def stop(self, how: signal.Signals) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(how)
            self.process.wait(timeout=15)


@pytest.fixture
def example(hub: Hub, tmp_path: Path) -> Iterator[Example]:
    agent = Example(hub, issue_key(hub), tmp_path / "example.log")
    try:
        yield agent
    finally:
        agent.stop(signal.SIGKILL)


def catalog_names(hub: Hub) -> list[str]:
    """The agent ids the catalog lists (its identifiers end with them)."""
    entries = httpx.get(f"{hub.web_a}/.well-known/ai-catalog.json", timeout=10).json()["entries"]
    return [e["identifier"].rsplit(":", 1)[1] for e in entries]


def reverse_through_hub(hub: Hub, version: str, text: str) -> list[list[str]]:
    async def scenario() -> list[list[str]]:
        async with a2a_client(hub.web_a, "reverser", version) as client:
            task = await send(client, user_message(text))
        assert task.status.state == TaskState.TASK_STATE_COMPLETED, task
        return [texts(a.parts) for a in task.artifacts]

    return asyncio.run(scenario())


def send_raw(hub: Hub) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "role": "user", "messageId": uuid.uuid4().hex, "kind": "message",
        "parts": [{"kind": "text", "text": "anyone?"}]}}}  # fmt: skip
    answer = httpx.post(f"{hub.web_a}/agents/reverser/jsonrpc/", json=body, timeout=30)
    return dict(answer.json())


def health_of(hub: Hub, slug: str) -> str:
    rows = hub.query(
        "SELECT r.health FROM registry_registration r JOIN agents_agent a ON a.id = r.agent_id "
        "WHERE a.slug = %s", (slug,),
    )  # fmt: skip
    return str(rows[0][0]) if rows else ""


def test_the_example_registers_serves_expires_and_comes_back(hub: Hub, example: Example) -> None:
    example.start()
    assert eventually(lambda: "reverser" in catalog_names(hub), timeout=30), example.log.read_text()
    # Beat's health check reads the card the SDK's server publishes at its origin.
    assert eventually(lambda: health_of(hub, "reverser") == "ok", timeout=30)
    found = httpx.get(f"{hub.web_a}/registry/agents?q=revers&skill=reverse", timeout=10).json()
    assert [a["agentId"] for a in found["agents"]] == ["reverser"]

    for version in ("1.0", "0.3"):
        assert reverse_through_hub(hub, version, f"hello {version}") == [[f"hello {version}"[::-1]]]

    example.stop(signal.SIGKILL)  # no deregistration: the registration has to expire
    assert eventually(lambda: "reverser" not in catalog_names(hub), timeout=TTL + 10)
    assert eventually(lambda: "error" in send_raw(hub), timeout=10)
    error = send_raw(hub)["error"]
    assert error["code"] == -32004 and "expired at" in error["message"]

    example.start()
    assert eventually(lambda: "reverser" in catalog_names(hub), timeout=30), example.log.read_text()
    assert eventually(lambda: "result" in send_raw(hub), timeout=10)
    assert reverse_through_hub(hub, "1.0", "back") == [["kcab"]]

    example.stop(signal.SIGTERM)  # a graceful stop deregisters
    gone = httpx.get(f"{hub.web_a}/registry/agents/reverser", timeout=10)
    assert gone.status_code == 404


def test_seed_003s_request_posted_as_is_gets_the_seeds_fields(hub: Hub) -> None:
    raw = issue_key(hub)
    answer = httpx.post(f"{hub.web_a}/registry/agents", content=SEED_003.read_bytes(), timeout=10,
                        headers={"Content-Type": "application/json",
                                 "Authorization": f"Bearer {raw}"})  # fmt: skip
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert {"status", "agentId", "registrationId", "expiresAt", "discoveryUrl"} <= set(body)
    assert (body["status"], body["agentId"]) == ("registered", "weather-agent-001")
    card = httpx.get(body["discoveryUrl"], timeout=10).json()
    assert card["name"] == json.loads(SEED_003.read_text())["name"]


def test_a_key_without_the_registry_scope_gets_403(hub: Hub) -> None:
    raw = issue_key(hub, scopes=())
    answer = httpx.post(f"{hub.web_a}/registry/agents", content=SEED_003.read_bytes(), timeout=10,
                        headers={"Content-Type": "application/json",
                                 "Authorization": f"Bearer {raw}"})  # fmt: skip
    assert answer.status_code == 403
    assert 'error="insufficient_scope", scope="registry"' in answer.headers["WWW-Authenticate"]


def test_the_example_refused_by_the_hub_says_why_and_stops(hub: Hub, tmp_path: Path) -> None:
    agent = Example(hub, issue_key(hub, scopes=()), tmp_path / "example.log")
    agent.start()
    assert agent.process is not None and agent.process.wait(timeout=60) != 0
    log = agent.log.read_text()
    assert "registration refused (403)" in log, log
    assert "registry" in log.split("registration refused (403)")[1].splitlines()[0]


def app_token(hub: Hub, client: tuple[str, str], scope: str) -> str:
    metadata = httpx.get(f"{hub.web_a}/.well-known/oauth-authorization-server", timeout=10).json()
    answer = httpx.post(metadata["token_endpoint"], data={"grant_type": "client_credentials",
                        "scope": scope}, auth=client, timeout=10)  # fmt: skip
    assert answer.status_code == 200, answer.text
    assert answer.json()["scope"] == scope
    token: str = answer.json()["access_token"]
    return token


def test_an_applications_token_with_the_registry_scope_registers_renews_and_deregisters(
    hub: Hub,
) -> None:
    client = application(hub, "registering robot")
    refused = app_token(hub, client, "a2a:invoke")
    agents = f"{hub.web_a}/registry/agents"
    body = json.loads(SEED_003.read_text()) | {"id": "robot-weather"}
    answer = httpx.post(agents, json=body, headers={"Authorization": f"Bearer {refused}"},
                        timeout=10)  # fmt: skip
    assert answer.status_code == 403, answer.text

    token = {"Authorization": f"Bearer {app_token(hub, client, 'registry')}"}
    created = httpx.post(agents, json=body, headers=token, timeout=10)
    assert created.status_code == 201, created.text
    [(owner,)] = hub.query(
        "SELECT owner_principal FROM registry_registration r JOIN agents_agent a "
        "ON a.id = r.agent_id WHERE a.slug = 'robot-weather'"
    )
    assert owner.startswith("app:")
    renewed = httpx.post(f"{agents}/robot-weather/heartbeat", headers=token, timeout=10)
    assert renewed.status_code == 200 and renewed.json()["status"] == "registered"
    assert httpx.delete(f"{agents}/robot-weather", headers=token, timeout=10).status_code == 204
    assert httpx.get(f"{agents}/robot-weather", timeout=10).status_code == 404
