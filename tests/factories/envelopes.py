"""JSON-RPC requests of both versions: the stored wire samples from `tests/fixtures/` with
fields changed, fresh request bodies, and the headers that go with them."""

from __future__ import annotations

import copy
import json
import uuid
from functools import cache
from pathlib import Path
from typing import Any

from tests.factories.agents import KEY_HEADER
from tests.factories.messages import text_part
from tests.factories.versions import METHODS, V03, V1

UNKNOWN_TASK = "3f1c2a44-0000-4000-8000-00000000abcd"  # a task id no test ever makes
NON_BLOCKING = {V1: {"returnImmediately": True}, V03: {"blocking": False}}

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SAMPLES = {
    V1: {
        "send": "jsonrpc-1.0/SendMessage.json",
        "get": "jsonrpc-1.0/GetTask.json",
        "list": "jsonrpc-1.0/ListTasks.json",
        "cancel": "jsonrpc-1.0/CancelTask.json",
        "card": "jsonrpc-1.0/GetExtendedAgentCard.json",
    },
    V03: {
        "send": "jsonrpc-0.3/message-send.json",
        "get": "jsonrpc-0.3/tasks-get.json",
        "cancel": "jsonrpc-0.3/tasks-cancel.json",
        "card": "jsonrpc-0.3/agent-getAuthenticatedExtendedCard.json",
    },
}


@cache
def _load(path: str) -> dict[str, Any]:
    return json.loads((FIXTURES / path).read_text())


def sample(version: str, op: str) -> dict[str, Any]:
    """A fresh copy of the stored request envelope of `op` ("send", "get", ...) in `version`."""
    return copy.deepcopy(_load(SAMPLES[version][op]))


def envelope(
    version: str,
    op: str,
    params: dict[str, Any] | None = None,
    *,
    text: str | None = None,
    message: dict[str, Any] | None = None,
    configuration: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The sample with `params` merged in; for sends, `text`, message and configuration
    fields too (a configuration value of None removes that field)."""
    body = sample(version, op)
    body.setdefault("params", {}).update(params or {})
    if text is not None:
        body["params"]["message"]["parts"] = [text_part(version, text)]
    if message:
        body["params"]["message"].update(message)
    if configuration:
        config = body["params"].setdefault("configuration", {})
        config.update(configuration)
        for name in [k for k, v in config.items() if v is None]:
            del config[name]
    return body


def rpc_body(
    version: str, op: str, params: dict[str, Any], request_id: str | int | None = None
) -> dict[str, Any]:
    """A request for any method of the table, made afresh (a random id unless one is given)."""
    return {
        "jsonrpc": "2.0",
        "id": f"req-{uuid.uuid4().hex[:8]}" if request_id is None else request_id,
        "method": METHODS[version][op],
        "params": params,
    }


def request_headers(
    version: str | None, key: str | None, extra: dict[str, str] | None = None
) -> dict[str, str]:
    """The version header (1.0 only: 0.3 callers send none) and the API key, if any."""
    headers: dict[str, str] = {}
    if version == V1:
        headers["A2A-Version"] = V1
    if key is not None:
        headers[KEY_HEADER] = key
    return headers | (extra or {})


def url(slug: str) -> str:
    return f"/agents/{slug}/jsonrpc/"
