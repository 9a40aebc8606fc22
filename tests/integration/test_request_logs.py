"""JSON logs on the distributed hub: a turn a request queued for a Celery worker logs, on the
worker, with that request's id, so one id finds a request's lines in every process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.factories.envelopes import rpc_body
from tests.factories.messages import wire_message
from tests.factories.versions import V1
from tests.helpers import eventually
from tests.integration.small_hub import own_small_hub
from tests.integration.stack import Hub, Process

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """(Named `hub`, as the session's is: a failing test's report then carries its logs.)"""
    root = tmp_path_factory.mktemp("request-logs")
    with own_small_hub("logs", root, {"LOG_FORMAT": "json"}) as running:
        yield running


def lines_of(process: Process, request_id: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in process.log.read_text().splitlines()
             if line.startswith("{")]  # fmt: skip
    return [line for line in lines if line.get("request_id") == request_id]


def test_a_worker_logs_the_turn_a_request_queued_with_the_requests_id(hub: Hub) -> None:
    body = rpc_body(V1, "send", {"message": wire_message(V1, "0")})
    answer = httpx.post(f"{hub.web_a}/agents/slow/jsonrpc/", json=body, timeout=30,
                        headers={"A2A-Version": V1, "X-Request-ID": "worker-turn-1"})  # fmt: skip
    assert answer.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    [worker] = hub.workers
    assert eventually(lambda: lines_of(worker, "worker-turn-1") != [], timeout=10)
    done = [line["message"] for line in lines_of(worker, "worker-turn-1")]
    assert any("tasks.run_task[" in message and " succeeded " in message for message in done)
    [web] = [p for p in hub.processes if p.name == "web"]
    assert eventually(lambda: lines_of(web, "worker-turn-1") != [], timeout=10)
    [access] = lines_of(web, "worker-turn-1")
    assert access["logger"] == "daphne.access"
    assert (access["agent"], access["method"], access["binding"]) == (
        "slow", "SendMessage", "jsonrpc"
    )  # fmt: skip
