"""The `orchestrator` demo on the distributed hub: it asks `echo` and `toolbox` over A2A through
the hub's public endpoints, and the sub-tasks it names are ordinary hub tasks.

The orchestrator calls its own origin, which the session hub's web processes do not know (they
listen on free ports, without PUBLIC_BASE_URL). So one more web process joins the session hub
(same database, Redis and workers) with PUBLIC_BASE_URL set to where it listens, as an operator
would configure it; the sub-tasks are then read back through web process A.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.helpers import free_port, wait_for_http
from tests.integration.stack import Hub

pytestmark = pytest.mark.integration

TIMEOUT = 60.0


@pytest.fixture(scope="module")
def orchestrating_web(hub: Hub) -> Iterator[str]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    web = Hub(hub.env | {"PUBLIC_BASE_URL": base}, hub.database_url, hub.logs)
    command = [sys.executable, "-m", "a2ahub.daphne", "-b", "127.0.0.1", "-p", str(port)]
    process = web.spawn("web-orchestrator", [*command, "a2ahub.asgi:application"])
    try:
        wait_for_http(f"{base}/agents/orchestrator/.well-known/agent-card.json", process.popen)
        yield base
    finally:
        web.stop()


def rpc(base: str, slug: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = httpx.post(
        f"{base}/agents/{slug}/jsonrpc/", json=body, headers={"A2A-Version": "1.0"},
        timeout=TIMEOUT,
    )  # fmt: skip
    answer = response.json()
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def texts(item: dict[str, Any]) -> list[str]:
    return [part["text"] for part in item.get("parts", []) if "text" in part]


def test_the_orchestrator_completes_with_the_work_of_two_other_agents(
    hub: Hub, orchestrating_web: str
) -> None:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "stressed"}]}

    task = rpc(orchestrating_web, "orchestrator", "SendMessage", {"message": message})["task"]

    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    by_agent = {a["metadata"]["agent"]: a["parts"] for a in task["artifacts"]}
    assert set(by_agent) == {"echo", "toolbox"}
    assert texts({"parts": by_agent["echo"]}) == ["stressed"]
    assert by_agent["toolbox"]  # its first function's answer (which one: the settings' order)
    references = task["status"]["message"]["referenceTaskIds"]
    assert len(references) == 2 and task["id"] not in references
    for slug, reference in zip(["echo", "toolbox"], references, strict=True):
        sub_task = rpc(hub.web_a, slug, "GetTask", {"id": reference})
        assert sub_task["id"] == reference
        assert sub_task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert any(a["metadata"]["taskId"] == reference for a in task["artifacts"])
