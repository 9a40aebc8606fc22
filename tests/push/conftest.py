"""Fixtures for the push tests: a real webhook receiver on 127.0.0.1, agents that push, callers
holding API keys, and JSON-RPC helpers for both protocol versions.

Personas and their rights (on the `pusher` agent, which requires an API key):
- `caller`: holds a valid key; creates tasks and manages the push configs of its own tasks.
- `stranger`: holds another valid key; none of `caller`'s tasks (nor their configs) exist for it.

Deliveries run on the hub's in-process thread pool (these tests start no Celery worker), so a
test that waits for one needs `django_db(transaction=True)`: the pool's threads must see the
rows the test wrote.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.test import Client

from agents.models import Agent, ApiKey
from push.models import Delivery
from tests.conftest import make_agent

V1 = "1.0"
V03 = "0.3"
VERSIONS = [V1, V03]
KEY_HEADER = "X-API-Key"
SECURED: dict[str, Any] = {
    "security_schemes": {"apiKey": {"type": "apiKey", "in": "header", "name": KEY_HEADER}},
    "security_requirements": [{"apiKey": []}],
}
METHODS = {
    V1: {
        "send": "SendMessage",
        "create": "CreateTaskPushNotificationConfig",
        "get": "GetTaskPushNotificationConfig",
        "list": "ListTaskPushNotificationConfigs",
        "delete": "DeleteTaskPushNotificationConfig",
    },
    V03: {
        "send": "message/send",
        "create": "tasks/pushNotificationConfig/set",
        "get": "tasks/pushNotificationConfig/get",
        "list": "tasks/pushNotificationConfig/list",
        "delete": "tasks/pushNotificationConfig/delete",
    },
}
TOKEN = "notification-token-7f3a"
CREDENTIALS = "receiver-credentials-91bc"
WAIT_SECONDS = 10.0


# -- the receiver ---------------------------------------------------------------------------


@dataclass
class Received:
    """One request as the receiver saw it, and the status it answered."""

    path: str
    headers: dict[str, str]
    body: bytes
    at: float
    status: int

    def header(self, name: str) -> str:
        return self.headers.get(name.lower(), "")

    def json(self) -> Any:
        return json.loads(self.body)


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a sender that hung up (a killed worker, a timeout) is part of these tests


@dataclass
class Behaviour:
    """How the receiver answers: `fail_first` requests get `fail_status` (with `fail_headers`),
    the rest `status`; each request is recorded when it arrives and answered `delay` s later."""

    fail_first: int = 0
    fail_status: int = 500
    fail_headers: dict[str, str] = field(default_factory=dict)
    status: int = 200
    delay: float = 0.0
    slow_first: int = 0  # only the first `slow_first` requests wait `delay` (0: every request)


class Receiver:
    """A webhook receiver: an HTTP server on 127.0.0.1 in a thread, recording every request.
    `down()` closes its socket (connections are refused) and `up()` opens it again, same port."""

    def __init__(self, behaviour: Behaviour | None = None) -> None:
        self.behaviour = behaviour or Behaviour()
        self.requests: list[Received] = []
        self.lock = threading.Condition()
        self.port = 0
        self.server: ThreadingHTTPServer | None = None
        self.up()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/webhook"

    def up(self) -> None:
        self.server = QuietServer(("127.0.0.1", self.port), self.handler())
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def down(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def answer(
        self, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], float]:
        """Record the request; how to answer it (status, extra headers) and how late."""
        plan = self.behaviour
        with self.lock:
            seen = len(self.requests)
            failing = seen < plan.fail_first
            status = plan.fail_status if failing else plan.status
            self.requests.append(Received(path, headers, body, time.monotonic(), status))
            self.lock.notify_all()
        delay = plan.delay if not plan.slow_first or seen < plan.slow_first else 0.0
        return status, plan.fail_headers if failing else {}, delay

    def handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, extra, delay = receiver.answer(self.path, headers, body)
                time.sleep(delay)
                self.send_response(status)
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def accepted(self) -> list[Received]:
        with self.lock:
            return [r for r in self.requests if 200 <= r.status < 300]

    def wait_for(
        self, count: int, accepted: bool = True, timeout: float = WAIT_SECONDS
    ) -> list[Received]:
        """The first `count` requests (only those it accepted, by default), once they came."""

        def seen() -> list[Received]:
            return [r for r in self.requests if not accepted or 200 <= r.status < 300]

        with self.lock:
            self.lock.wait_for(lambda: len(seen()) >= count, timeout=timeout)
            found = seen()
        assert len(found) >= count, f"{len(found)} of {count} requests arrived: {found}"
        return found

    def stays_at(self, count: int, seconds: float = 0.5) -> bool:
        """True when no request beyond `count` arrives within `seconds`."""
        with self.lock:
            return not self.lock.wait_for(lambda: len(self.requests) > count, timeout=seconds)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.down()


@pytest.fixture
def push_settings(settings: Any) -> Any:
    """Fast retries, the receiver's loopback address allowed, and jobs on the in-process pool
    (with REDIS_URL set they would wait for a Celery worker these tests do not start)."""
    settings.REDIS_URL = ""
    settings.PUSH_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.PUSH_RETRY_BASE_SECONDS = 0.05
    settings.PUSH_RETRY_MAX_SECONDS = 0.2
    settings.PUSH_RETRY_HORIZON_SECONDS = 60.0
    settings.PUSH_TIMEOUT_SECONDS = 5.0
    return settings


# -- callers --------------------------------------------------------------------------------


class Caller:
    """One client holding one API key, speaking JSON-RPC to the hosted agents."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.client = Client()

    def call(self, slug: str, version: str, op: str, params: dict[str, Any]) -> dict[str, Any]:
        """The whole JSON-RPC response object."""
        body = {"jsonrpc": "2.0", "id": 7, "method": METHODS[version][op], "params": params}
        headers = {KEY_HEADER: self.key} | ({"A2A-Version": V1} if version == V1 else {})
        response = self.client.post(
            f"/agents/{slug}/jsonrpc/",
            data=json.dumps(body),
            content_type="application/json",
            headers=headers,
        )
        assert response.status_code == 200, response.content
        answer: dict[str, Any] = response.json()
        return answer

    def result(self, slug: str, version: str, op: str, params: dict[str, Any]) -> Any:
        answer = self.call(slug, version, op, params)
        assert "error" not in answer, answer
        return answer["result"]

    def error(self, slug: str, version: str, op: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = self.call(slug, version, op, params)
        assert "result" not in answer, answer
        error: dict[str, Any] = answer["error"]
        return error

    def send(
        self, slug: str, version: str, text: str = "hello", push: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """A blocking send (with an inline push config when given); the Task it made."""
        result = self.result(slug, version, "send", send_params(version, text, push))
        if version == V1:
            task: dict[str, Any] = result["task"]
            return task
        assert result["kind"] == "task", result
        return dict(result)


def send_params(version: str, text: str, push: dict[str, Any] | None) -> dict[str, Any]:
    message: dict[str, Any] = {"messageId": f"msg-{uuid.uuid4().hex}"}
    if version == V1:
        message |= {"role": "ROLE_USER", "parts": [{"text": text}]}
        configuration: dict[str, Any] = {"returnImmediately": False}
        if push is not None:
            configuration["taskPushNotificationConfig"] = push
    else:
        message |= {"kind": "message", "role": "user", "parts": [{"kind": "text", "text": text}]}
        configuration = {"blocking": True}
        if push is not None:
            configuration["pushNotificationConfig"] = push
    return {"message": message, "configuration": configuration}


def webhook(
    version: str, url: str, token: str = TOKEN, credentials: str = CREDENTIALS, **fields: Any
) -> dict[str, Any]:
    """A push config as each version spells it (without its task), with a token and a Bearer
    credential."""
    if version == V1:
        auth: dict[str, Any] = {"scheme": "Bearer", "credentials": credentials}
    else:
        auth = {"schemes": ["Bearer"], "credentials": credentials}
    return {"url": url, "token": token, "authentication": auth} | fields


def create_params(version: str, task_id: str, config: dict[str, Any]) -> dict[str, Any]:
    if version == V1:
        return {"taskId": task_id, **config}
    return {"taskId": task_id, "pushNotificationConfig": config}


def named_params(version: str, task_id: str, config_id: str = "") -> dict[str, Any]:
    """Params naming a task (and one of its configs) for get, list and delete."""
    if version == V1:
        return {"taskId": task_id} | ({"id": config_id} if config_id else {})
    return {"id": task_id} | ({"pushNotificationConfigId": config_id} if config_id else {})


def holder_of_key(name: str) -> Caller:
    _, raw = ApiKey.issue(name)
    return Caller(raw)


@pytest.fixture
def caller(db: None) -> Caller:
    return holder_of_key("caller")


@pytest.fixture
def stranger(db: None) -> Caller:
    return holder_of_key("stranger")


@pytest.fixture
def pusher(db: None) -> Agent:
    """An echo agent that sends push notifications: each task has four events (the task,
    working, its artifact, completed)."""
    return make_agent("pusher", push_notifications=True, **SECURED)


@pytest.fixture
def silent(db: None) -> Agent:
    """An echo agent without push notifications."""
    return make_agent("silent", push_notifications=False, **SECURED)


# -- reading what happened ------------------------------------------------------------------


def deliveries_of(task_id: str) -> list[Delivery]:
    return list(Delivery.objects.filter(config__task_id=task_id).order_by("sequence"))


def sequences_of(requests: list[Received]) -> list[int]:
    """The event sequence each request carried, from its webhook-id (the Delivery's id)."""
    by_id = {str(d.id): d.sequence for d in Delivery.objects.all()}
    return [by_id[r.header("webhook-id")] for r in requests]


def eventually(check: Callable[[], bool], timeout: float = WAIT_SECONDS) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
