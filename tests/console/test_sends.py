"""Sends per minute: each web process adds the sends it answered to the current minute at its
heartbeat, whichever version, binding or outcome; other requests are not sends."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import pytest
from django.utils import timezone

from console import sends
from tests.door_client import Door
from tests.factories.agents import make_agent

pytestmark = pytest.mark.django_db


def since(start: datetime) -> int:
    """The sends from the minute of `start` to now: a minute may turn while a test runs."""
    now = timezone.now()
    minutes = int(now.timestamp() // 60) - int(start.timestamp() // 60) + 1
    return sum(count for _, count in sends.per_minute(now, minutes))


def send(client: Door, version: str, method: str) -> None:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER" if version == "1.0" else "user",
               "parts": [{"text": "hi"}]}  # fmt: skip
    if version == "0.3":
        message = {"kind": "message", **message, "parts": [{"kind": "text", "text": "hi"}]}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": message}}
    headers = {"A2A-Version": version} if version == "1.0" else {}
    response = client.post("/agents/counted/jsonrpc/", body, content_type="application/json",
                           headers=headers)  # fmt: skip
    assert response.status_code == 200, response.content


@pytest.fixture
def counted(door: Door, settings: Any) -> None:
    # Counted in this process's memory: Redis's counters are shared by every hub on it (the
    # real-stack test reads them from a Redis of its own).
    settings.REDIS_URL = ""
    make_agent("counted")
    sends.record_sends()  # what this test process sent before is counted already


def test_sends_of_both_versions_are_counted_in_the_current_minute(counted: None) -> None:
    start = timezone.now()
    before = since(start)
    client = Door()
    send(client, "1.0", "SendMessage")
    send(client, "0.3", "message/send")
    client.post("/agents/counted/jsonrpc/", {"jsonrpc": "2.0", "id": 2, "method": "tasks/get",
                "params": {"id": str(uuid.uuid4())}}, content_type="application/json")  # fmt: skip

    sends.record_sends()

    assert since(start) - before == 2


def test_every_send_method_of_the_method_table_counts() -> None:
    wire_names = {"SendMessage", "SendStreamingMessage", "message/send", "message/stream",
                  "tasks/send", "tasks/sendSubscribe"}  # fmt: skip
    assert wire_names == sends.SEND_METHODS
