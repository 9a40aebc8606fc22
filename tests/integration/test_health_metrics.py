"""The probes on the real stack: each web process is ready (PostgreSQL, Redis, and a Celery
worker that answers), and its `/metrics` counts the requests it answered itself."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.integration.stack import Hub
from tests.operations.metered import sample

pytestmark = pytest.mark.integration

SENT = {"agent": "echo", "method": "SendMessage", "version": "1.0", "binding": "jsonrpc",
        "code": "ok"}  # fmt: skip


def test_every_web_process_is_ready_with_database_redis_and_workers(hub: Hub) -> None:
    for base in (hub.web_a, hub.web_b):
        response = httpx.get(f"{base}/readyz", timeout=10)
        assert response.status_code == 200, response.text
        assert response.json()["parts"] == {
            "database": "ready", "redis": "ready", "workers": "ready"
        }  # fmt: skip


def test_a_web_process_counts_the_requests_sent_to_it(hub: Hub) -> None:
    before = httpx.get(f"{hub.web_a}/metrics", timeout=10).text
    other_before = httpx.get(f"{hub.web_b}/metrics", timeout=10).text
    body = {
        "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER",
                               "parts": [{"text": "count me"}]}},
    }  # fmt: skip
    sent = httpx.post(f"{hub.web_a}/agents/echo/jsonrpc/", json=body,
                      headers={"A2A-Version": "1.0"}, timeout=30)  # fmt: skip
    assert "result" in sent.json(), sent.text
    after = httpx.get(f"{hub.web_a}/metrics", timeout=10).text
    other_after = httpx.get(f"{hub.web_b}/metrics", timeout=10).text
    assert (
        sample(after, "a2ahub_requests_total", **SENT)
        - sample(before, "a2ahub_requests_total", **SENT)
        == 1
    )
    assert sample(other_after, "a2ahub_requests_total", **SENT) == sample(
        other_before, "a2ahub_requests_total", **SENT
    )
