"""The "only the hub's own inbox" rule for webhooks, on a real hub with a real receiver on
127.0.0.1 counting what arrives: the receiver's port is configured as the hub's own (HOST and
PORT), so a webhook there is a webhook to the hub itself. Dot segments in any spelling, mixed
case and numeric hosts are judged as the HTTP client and the hub's router read them: each is
refused when the config is made, and only the inbox's own path ever receives a delivery."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import ROOT, eventually
from tests.integration.small_hub import own_small_hub
from tests.integration.stack import Hub
from tests.push.receiver import Behaviour, Receiver

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

MAKE_AGENT = """
import django; django.setup()
from agents.models import Agent, Skill
agent, _ = Agent.objects.update_or_create(slug="pusher", defaults=dict(
    name="Pusher", description="echo with push", executor_kind="echo", push_notifications=True))
Skill.objects.get_or_create(agent=agent, skill_id="echo", defaults=dict(
    name="Echo", description="echoes"))
"""
ESCAPES = [
    "http://localhost:{port}/push/inbox/../../registry/agents",
    "http://localhost:{port}/push/inbox/%2e%2e/%2E%2e/registry/agents",
    "http://LOCALHOST:{port}/push/inbox/x/.%2E/../../metrics",
    "http://127.0.0.1:{port}/push/inbox/x/..%2f..%2f..%2fmetrics",
    "http://2130706433:{port}/push/inbox/../../metrics",
    "http://[::1]:{port}/push/inbox/%2e%2e/%2e%2e/registry/agents",
]


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    started = Receiver(Behaviour())
    yield started
    started.down()


@pytest.fixture(scope="module")
def hub(receiver: Receiver, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """A hub that believes it listens where the receiver does (no host is allow-listed)."""
    settings = {"HOST": "127.0.0.1", "PORT": str(receiver.port), "OUTBOUND_ALLOWED_HOSTS": ""}
    root: Path = tmp_path_factory.mktemp("webhook-paths")
    with own_small_hub("paths", root, settings) as running:
        subprocess.run([sys.executable, "-c", MAKE_AGENT], cwd=ROOT, env=running.env,
                       check=True, timeout=60)  # fmt: skip
        yield running


def send(hub: Hub, webhook: str) -> dict[str, Any]:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    params = {"message": message, "configuration": {"taskPushNotificationConfig": {"url": webhook}}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
    response = httpx.post(f"{hub.web_a}/agents/pusher/jsonrpc/", json=body, timeout=60,
                          headers={"A2A-Version": "1.0"})  # fmt: skip
    answer: dict[str, Any] = response.json()
    return answer


@pytest.mark.parametrize("spelling", ESCAPES)
def test_a_webhook_leaving_the_inbox_by_dot_segments_is_refused_and_nothing_arrives(
    hub: Hub, receiver: Receiver, spelling: str
) -> None:
    before = len(receiver.requests)

    answer = send(hub, spelling.format(port=receiver.port))

    assert answer["error"]["code"] == -32602, answer
    assert "url" in answer["error"]["message"]
    assert "only its webhook inbox may receive deliveries" in answer["error"]["message"]
    assert receiver.stays_at(before, seconds=1.0)


def test_the_hubs_own_inbox_receives_every_delivery_and_nothing_else_does(
    hub: Hub, receiver: Receiver
) -> None:
    inbox = f"http://localhost:{receiver.port}/push/inbox/some-token/"
    for spelling in ESCAPES:
        send(hub, spelling.format(port=receiver.port))

    answer = send(hub, inbox)

    assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", answer
    receiver.wait_for(1)
    assert eventually(lambda: receiver.stays_at(len(receiver.requests), seconds=1.0), 20)
    assert {request.path for request in receiver.requests} == {"/push/inbox/some-token/"}
