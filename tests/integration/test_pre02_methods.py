"""The pre-0.2 methods of the first A2A guide (seed 004) on the distributed hub, as a client
written from the guide calls them: plain JSON-RPC over HTTP, without `A2A-Version`.

The `slow` agent runs its turns on a Celery worker. A task sent through web process A under
the client's own id is read through web process B, and a streamed send's events cross from
the worker to the web process through Redis, ending with `final: true`.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

from tests.factories.pre02 import old_request, old_send
from tests.integration.stack import Hub

pytestmark = pytest.mark.integration

TIMEOUT = 60.0


def call(base: str, body: dict[str, Any]) -> Any:
    answer = httpx.post(f"{base}/agents/slow/jsonrpc/", json=body, timeout=TIMEOUT)
    assert answer.status_code == 200, answer.text
    reply = answer.json()
    assert reply.get("id") == body["id"] and "error" not in reply, reply
    return reply["result"]


def streamed(base: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The result of every frame of a stream, read to its end."""
    events = []
    with httpx.stream("POST", f"{base}/agents/slow/jsonrpc/", json=body, timeout=TIMEOUT) as reply:
        assert reply.headers["content-type"].startswith("text/event-stream")
        for line in reply.iter_lines():
            if line.startswith("data: "):
                frame = json.loads(line.removeprefix("data: "))
                assert "error" not in frame, frame
                events.append(frame["result"])
    return events


def texts(item: dict[str, Any]) -> list[str]:
    return [part["text"] for part in item.get("parts", []) if part["type"] == "text"]


def ran_on_a_worker(hub: Hub, client_id: str) -> bool:
    rows = hub.query("SELECT id FROM tasks_task WHERE client_id = %s", (client_id,))
    process = hub.process_running(str(rows[0][0])) if len(rows) == 1 else None
    return process is not None and process.name.startswith("worker")


def test_a_worker_task_sent_under_the_clients_id_is_read_through_the_other_web_process(
    hub: Hub,
) -> None:
    task_id = f"order-{uuid.uuid4().hex[:8]}"

    sent = call(hub.web_a, old_send(task_id, text="1"))
    got = call(hub.web_b, old_request("tasks/get", 2, id=task_id, historyLength=10))

    assert (sent["id"], sent["status"]["state"]) == (task_id, "completed")
    assert [texts(a) for a in sent["artifacts"]] == [["Worked for 1 seconds."]]
    assert (got["id"], got["sessionId"]) == (task_id, sent["sessionId"])
    assert got["artifacts"] == sent["artifacts"]
    assert (got["history"][0]["role"], texts(got["history"][0])) == ("user", ["1"])
    assert ran_on_a_worker(hub, task_id)


def test_a_streamed_send_to_a_worker_agent_ends_with_final(hub: Hub) -> None:
    task_id = f"essay-{uuid.uuid4().hex[:8]}"
    message = {"role": "user", "parts": [{"type": "text", "text": "1"}]}

    events = streamed(hub.web_a, old_request("tasks/sendSubscribe", 3, id=task_id,
                                             message=message))  # fmt: skip
    got = call(hub.web_b, old_request("tasks/get", 4, id=task_id))

    statuses = [e for e in events if "status" in e]
    assert {e["id"] for e in events} == {task_id}
    assert [e["final"] for e in statuses] == [False] * (len(statuses) - 1) + [True]
    assert events[-1]["status"]["state"] == "completed"
    assert statuses[0]["status"]["state"] == "submitted"
    chunks = [e["artifact"] for e in events if "artifact" in e]
    assert [(c["index"], c["append"], c["lastChunk"], texts(c)) for c in chunks] == [
        (0, False, True, ["Worked for 1 seconds."])
    ]
    assert got["status"]["state"] == "completed"
    assert ran_on_a_worker(hub, task_id)
