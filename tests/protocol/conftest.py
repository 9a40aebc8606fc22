"""Fixtures for the protocol tests: agents that need an API key, callers holding keys, the
wire samples from `tests/fixtures/`, and helpers that read answers of either version.

Personas and their rights:
- `caller`: holds a valid API key; creates tasks and sees, lists and cancels its own.
- `stranger`: holds another valid API key for the same agents; none of `caller`'s tasks
  exist for it (they are reported as not found, never shown).
- `anonymous`: presents no key; every agent that requires one answers HTTP 401.
- `impostor`: presents a key the hub never issued; also HTTP 401.
"""

from __future__ import annotations

import asyncio
import copy
import json
import time
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import SyncToAsync
from django.db import connections
from django.test import AsyncClient, Client

from agents.models import Agent, ApiKey
from tests.conftest import make_agent

V1 = "1.0"
V03 = "0.3"
VERSIONS = [V1, V03]

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
KEY_HEADER = "X-API-Key"
SECURED: dict[str, Any] = {
    "security_schemes": {"apiKey": {"type": "apiKey", "in": "header", "name": KEY_HEADER}},
    "security_requirements": [{"apiKey": []}],
}
UNKNOWN_TASK = "3f1c2a44-0000-4000-8000-00000000abcd"
TERMINAL = {"completed", "canceled", "failed", "rejected"}


# -- wire samples and request bodies ------------------------------------------------------


@cache
def _load(path: str) -> dict[str, Any]:
    return json.loads((FIXTURES / path).read_text())


def sample(version: str, op: str) -> dict[str, Any]:
    """A fresh copy of the stored request envelope of `op` ("send", "get", ...) in `version`."""
    return copy.deepcopy(_load(SAMPLES[version][op]))


def text_part(version: str, text: str) -> dict[str, Any]:
    return {"text": text} if version == V1 else {"kind": "text", "text": text}


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


def request_headers(version: str | None, key: str | None, extra: dict[str, str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    if version == V1:
        headers["A2A-Version"] = V1
    if key is not None:
        headers[KEY_HEADER] = key
    return headers | extra


def url(slug: str) -> str:
    return f"/agents/{slug}/jsonrpc/"


# -- reading answers -------------------------------------------------------------------------


def result_of(response: Any) -> Any:
    assert response.status_code == 200, response.content
    body = response.json()
    assert "error" not in body, body
    return body["result"]


def error_of(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.content
    body = response.json()
    assert "result" not in body, body
    return body["error"]


def task_of(result: dict[str, Any], version: str) -> dict[str, Any]:
    """The Task in a send result: wrapped in 1.0 (`{"task": ...}`), bare with `kind` in 0.3."""
    if version == V1:
        assert set(result) == {"task"}, result
        return result["task"]
    assert result["kind"] == "task", result
    return result


def state_of(task: dict[str, Any]) -> str:
    """The task's state in the 0.3 spelling, whichever version answered."""
    state = task["status"]["state"]
    return state.removeprefix("TASK_STATE_").lower().replace("_", "-")


def texts(item: dict[str, Any] | None) -> list[str]:
    """The text parts of a message or artifact of either version."""
    return [part["text"] for part in (item or {}).get("parts", []) if "text" in part]


def artifact_texts(task: dict[str, Any]) -> list[str]:
    return [text for artifact in task.get("artifacts", []) for text in texts(artifact)]


def error_info(error: dict[str, Any]) -> dict[str, Any]:
    """The google.rpc.ErrorInfo a 1.0 error carries first in its `data` list."""
    assert isinstance(error.get("data"), list) and error["data"], error
    info = error["data"][0]
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo", info
    assert info["domain"] == "a2a-protocol.org", info
    return info


# -- callers ---------------------------------------------------------------------------------


class Caller:
    """One client holding one API key (or none), speaking JSON-RPC to hosted agents."""

    def __init__(self, key: str | None, principal: str = "") -> None:
        self.key = key
        self.principal = principal  # the owner its tasks are stored under
        self.client = Client()

    def post(
        self,
        slug: str,
        body: Any,
        version: str | None = V03,
        headers: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> Any:
        data = body if isinstance(body, str | bytes) else json.dumps(body)
        return self.client.post(
            url(slug),
            data=data,
            content_type=content_type,
            headers=request_headers(version, self.key, headers or {}),
        )

    def rpc(self, slug: str, version: str, op: str, params: dict[str, Any] | None = None,
            headers: dict[str, str] | None = None, **fields: Any) -> Any:  # fmt: skip
        return self.post(slug, envelope(version, op, params, **fields), version, headers)

    def result(self, slug: str, version: str, op: str, params: dict[str, Any] | None = None,
               **fields: Any) -> Any:  # fmt: skip
        return result_of(self.rpc(slug, version, op, params, **fields))

    def error(self, slug: str, version: str, op: str, params: dict[str, Any] | None = None,
              **fields: Any) -> dict[str, Any]:  # fmt: skip
        return error_of(self.rpc(slug, version, op, params, **fields))

    def send(self, slug: str, version: str, text: str = "hello", **fields: Any) -> dict[str, Any]:
        """Send a message and return the Task it made or moved."""
        return task_of(self.result(slug, version, "send", text=text, **fields), version)

    def get(self, slug: str, version: str, task_id: str, **params: Any) -> dict[str, Any]:
        task: dict[str, Any] = self.result(slug, version, "get", {"id": task_id, **params})
        return task

    def wait_for(self, slug: str, task_id: str, done: Callable[[dict[str, Any]], bool],
                 timeout: float = 2.5) -> dict[str, Any]:  # fmt: skip
        deadline = time.monotonic() + timeout
        while True:
            task = self.get(slug, V1, task_id)
            if done(task) or time.monotonic() > deadline:
                return task
            time.sleep(0.05)


class AsyncCaller:
    """The same, on an AsyncClient: the test's event loop stays alive between requests, so
    inline executors keep running after a non-blocking send has been answered."""

    def __init__(self, key: str | None) -> None:
        self.key = key
        self.client = AsyncClient()

    async def rpc(self, slug: str, version: str, op: str, params: dict[str, Any] | None = None,
                  **fields: Any) -> Any:  # fmt: skip
        return await self.client.post(
            url(slug),
            data=json.dumps(envelope(version, op, params, **fields)),
            content_type="application/json",
            headers=request_headers(version, self.key, {}),
        )

    async def result(self, slug: str, version: str, op: str,
                     params: dict[str, Any] | None = None, **fields: Any) -> Any:  # fmt: skip
        return result_of(await self.rpc(slug, version, op, params, **fields))

    async def send(self, slug: str, version: str, text: str = "hello",
                   **fields: Any) -> dict[str, Any]:  # fmt: skip
        return task_of(await self.result(slug, version, "send", text=text, **fields), version)

    async def get(self, slug: str, task_id: str) -> dict[str, Any]:
        task: dict[str, Any] = await self.result(slug, V1, "get", {"id": task_id})
        return task

    async def wait_for(self, slug: str, task_id: str, done: Callable[[dict[str, Any]], bool],
                       timeout: float = 2.5) -> dict[str, Any]:  # fmt: skip
        deadline = time.monotonic() + timeout
        while True:
            task = await self.get(slug, task_id)
            if done(task) or time.monotonic() > deadline:
                return task
            await asyncio.sleep(0.05)


def is_terminal(task: dict[str, Any]) -> bool:
    return state_of(task) in TERMINAL


# -- fixtures ----------------------------------------------------------------------------------


def issue_key(name: str) -> str:
    _, raw = ApiKey.issue(name)
    return raw


def holder_of_key(name: str) -> Caller:
    key, raw = ApiKey.issue(name)
    return Caller(raw, key.principal)


@pytest.fixture
def caller(db: None) -> Caller:
    return holder_of_key("caller")


@pytest.fixture
def stranger(db: None) -> Caller:
    return holder_of_key("stranger")


@pytest.fixture
def anonymous(db: None) -> Caller:
    return Caller(None)


@pytest.fixture
def impostor(db: None) -> Caller:
    return Caller("a2a_000000000000_not-a-key-this-hub-issued")


@pytest.fixture
def async_caller(db: None) -> Iterator[AsyncCaller]:
    yield AsyncCaller(issue_key("async caller"))
    # Outside any request, sync_to_async runs the view's queries on asgiref's one shared
    # thread; the test client does not close that thread's connection, so close it here
    # (PostgreSQL will not drop the test database while it is open).
    SyncToAsync.single_thread_executor.submit(connections.close_all).result()


def secured_agent(slug: str, kind: str = "echo", **fields: Any) -> Agent:
    """An agent that requires an API key in the X-API-Key header."""
    return make_agent(slug, executor_kind=kind, **(SECURED | fields))


@pytest.fixture
def echo(db: None) -> Agent:
    return secured_agent("echo")


@pytest.fixture
def interview(db: None) -> Agent:
    return secured_agent("interview", "interview")


@pytest.fixture
def tck(db: None) -> Agent:
    return secured_agent("tck", "conformance")


@pytest.fixture
def slow_agent(db: None) -> Callable[..., Agent]:
    """Slow agents work the seconds named in the message, in steps of 0.1 s."""

    def make(slug: str = "slow", mode: str = "worker") -> Agent:
        return secured_agent(slug, "slow", execution_mode=mode, executor_settings={"step": 0.1})

    return make


@pytest.fixture
def in_process_workers(settings: Any) -> None:
    """Worker-mode turns go to Celery when REDIS_URL is set; these tests start no Celery
    worker, so the turns run on the hub's in-process pool (the integration tests run a real
    worker)."""
    settings.REDIS_URL = ""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
