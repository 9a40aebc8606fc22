"""HTTP+JSON as real clients speak it, on the distributed hub: a 0.3 push config created
from the bare config (the JavaScript SDK's body) or the wrapped request (the Python SDK's),
0.3 errors that carry their JSON-RPC code, answers in the media type the client spoke, and
the official JavaScript SDK (`@a2a-js/sdk`, installed in tests/js/ by `npm ci`) itself."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.stack import Hub

pytestmark = pytest.mark.integration

JS_DIR = Path(__file__).resolve().parents[1] / "js"
PLAIN = "application/json"
MEDIA = "application/a2a+json"
# The one webhook on loopback a hub accepts is its own inbox; nothing is sent to it, since
# the tasks here have ended before their configs are set.
INBOX = "/push/inbox/client-compat"
UNKNOWN_TASK = "no-such-task-anywhere"


def finished_03_task(hub: Hub) -> str:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "content": [{"text": "hi"}]}
    response = httpx.post(
        f"{hub.web_a}/agents/tck/rest/v1/message:send", json={"request": message}, timeout=30
    )
    assert response.status_code == 200, response.text
    return str(response.json()["task"]["id"])


def bare(name: str, config: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "pushNotificationConfig": config}


def wrapped(name: str, config: dict[str, Any]) -> dict[str, Any]:
    return {"config": {"pushNotificationConfig": config}}


@pytest.mark.parametrize("shape", [bare, wrapped], ids=["bare", "wrapped"])
def test_a_03_push_config_set_in_either_shape_is_read_through_the_other_process(
    hub: Hub, shape: Any
) -> None:
    task_id = finished_03_task(hub)
    base = f"/agents/tck/rest/v1/tasks/{task_id}/pushNotificationConfigs"
    name = f"tasks/{task_id}/pushNotificationConfigs/c1"

    webhook = hub.web_a + INBOX
    created = httpx.post(
        f"{hub.web_a}{base}", json=shape(name, {"id": "c1", "url": webhook}), timeout=30
    )
    read = httpx.get(f"{hub.web_b}{base}/c1", timeout=30)

    assert created.status_code == 200, created.text
    assert read.json()["name"] == name
    assert read.json()["pushNotificationConfig"]["url"] == webhook


def test_a_03_error_carries_the_json_rpc_code_a_client_maps(hub: Hub) -> None:
    response = httpx.get(f"{hub.web_b}/agents/tck/rest/v1/tasks/{UNKNOWN_TASK}", timeout=30)
    body = response.json()

    assert response.status_code == 404
    assert (body["code"], body["type"]) == (-32001, "TaskNotFoundError")
    assert body["error"]["status"] == "NOT_FOUND" and body["message"]


@pytest.mark.parametrize(("spoken", "expected"), [(PLAIN, PLAIN), (MEDIA, MEDIA)])
def test_answers_come_in_the_media_type_the_client_spoke(
    hub: Hub, spoken: str, expected: str
) -> None:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    sent = httpx.post(
        f"{hub.web_a}/agents/tck/rest/message:send",
        content=json.dumps({"message": message}),
        headers={"Content-Type": spoken, "A2A-Version": "1.0"},
        timeout=30,
    )
    read = httpx.get(
        f"{hub.web_b}/agents/tck/rest/tasks/{sent.json()['task']['id']}",
        headers={"Accept": spoken, "A2A-Version": "1.0"},
        timeout=30,
    )
    missing = httpx.get(
        f"{hub.web_b}/agents/tck/rest/v1/tasks/{UNKNOWN_TASK}", headers={"Accept": spoken}
    )

    assert (sent.status_code, sent.headers["content-type"]) == (200, expected)
    assert (read.status_code, read.headers["content-type"]) == (200, expected)
    assert (missing.status_code, missing.headers["content-type"]) == (404, expected)


def js_sdk_missing() -> str:
    """Why the JavaScript SDK cannot be run here ("" when it can)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node and npm are not installed (.ci/run installs them)"
    if not (JS_DIR / "node_modules" / "@a2a-js" / "sdk").is_dir():
        return "the JavaScript SDK is not installed: run `npm ci` in tests/js"
    return ""


@pytest.mark.skipif(bool(js_sdk_missing()), reason=js_sdk_missing() or "runs")
def test_the_javascript_sdk_sets_a_push_config_and_gets_a_typed_task_not_found(hub: Hub) -> None:
    task_id = finished_03_task(hub)
    webhook = hub.web_b + INBOX

    run = subprocess.run(
        ["node", "rest_push_and_errors.mjs", f"{hub.web_b}/agents/tck/rest", task_id, webhook],
        cwd=JS_DIR, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)

    assert seen["created"]["taskId"] == task_id
    assert seen["created"]["pushNotificationConfig"]["url"] == webhook
    assert seen["read"]["pushNotificationConfig"]["id"] == "from-js"
    assert seen["unknown"]["thrown"] and seen["unknown"]["taskNotFound"], seen["unknown"]
