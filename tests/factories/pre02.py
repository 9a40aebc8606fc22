"""Requests of the pre-0.2 methods (the first A2A guide's, seed 004): its exchanges as stored in
`tests/fixtures/jsonrpc-0.1/`, requests made afresh, and the frames of their streams."""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

from tests.factories.envelopes import FIXTURES

SEED_TASK = "de38c76d-d54c-436c-8b9f-4c2703648d64"  # the guide's task id, a client's choice


@cache
def _load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / "jsonrpc-0.1" / f"{name}.json").read_text())


def exchange(name: str) -> dict[str, Any]:
    """A fresh copy of the stored exchange `name` ("send", "multi-turn", ...)."""
    return copy.deepcopy(_load(name))


def old_request(method: str, request_id: int = 1, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def old_send(
    task_id: str, *parts: dict[str, Any], text: str = "hello", request_id: int = 1, **params: Any
) -> dict[str, Any]:
    """A `tasks/send` of one text part (or `parts`) to the task `task_id`."""
    message = {"role": "user", "parts": list(parts) or [{"type": "text", "text": text}]}
    return old_request("tasks/send", request_id, id=task_id, message=message, **params)


def sse_frames(text: str) -> list[dict[str, Any]]:
    """The JSON-RPC response in each `data:` line of an event stream, in order."""
    return [
        json.loads(line.removeprefix("data: "))
        for line in text.splitlines()
        if line.startswith("data: ")
    ]
