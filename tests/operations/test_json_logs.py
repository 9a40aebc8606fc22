"""With `LOG_FORMAT=json` every log line is one JSON object: time, level, logger, message,
process, and the id, agent, JSON-RPC method and binding of the request that caused it, with
the exception's text when there is one. Without it the lines stay as they were."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.test import Client

from a2ahub import asyncdb
from a2ahub.logs import JsonFormatter
from executors.python import REGISTRY, skill
from tasks.executor import RequestContext
from tests.factories.agents import make_agent
from tests.factories.envelopes import envelope, rpc_body
from tests.factories.messages import wire_message
from tests.factories.versions import V1
from tests.helpers import ROOT, embedded_env, eventually, free_port, wait_for_http
from tests.operations.asgi_calls import call, http_scope, in_db


class Lines:
    """What the JSON formatter wrote, one object a line."""

    def __init__(self) -> None:
        self.stream = io.StringIO()

    def all(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stream.getvalue().splitlines()]

    def of_request(self, request_id: str) -> list[dict[str, Any]]:
        return [line for line in self.all() if line.get("request_id") == request_id]


@pytest.fixture
def json_lines() -> Iterator[Lines]:
    """The root logger's lines, formatted as a process with LOG_FORMAT=json writes them."""
    lines = Lines()
    handler = logging.StreamHandler(lines.stream)
    handler.setFormatter(JsonFormatter())
    logging.getLogger().addHandler(handler)
    try:
        yield lines
    finally:
        logging.getLogger().removeHandler(handler)


def test_a_line_names_its_time_level_logger_message_process_and_exception(
    json_lines: Lines,
) -> None:
    try:
        {}["missing"]
    except KeyError:
        logging.getLogger("a2ahub.test").error("could not find %s", "it", exc_info=True)
    # Only this logger's: the embedded hub's maintenance thread may log too, at any time.
    [line] = [line for line in json_lines.all() if line["logger"] == "a2ahub.test"]
    assert line["level"] == "ERROR"
    assert line["message"] == "could not find it"
    assert line["process"] == os.getpid()
    assert line["time"].endswith("+00:00")
    assert line["exception"].startswith("Traceback") and "KeyError: 'missing'" in line["exception"]
    assert "request_id" not in line  # written outside any request


def test_a_line_written_while_a_page_is_served_carries_its_request_id(
    client: Client, json_lines: Lines
) -> None:
    client.get("/nowhere", headers={"X-Request-ID": "page-1"})
    [line] = json_lines.of_request("page-1")
    assert (line["logger"], line["message"]) == ("django.request", "Not Found: /nowhere")


def breaks(context: RequestContext) -> str:
    raise RuntimeError("the skill broke")


@pytest.fixture
async def breaking(db: None) -> AsyncIterator[None]:
    # Registered for this test only: the developer pages list every registered function.
    skill("tests.operations.breaks")(breaks)
    await in_db(make_agent, "breaking", executor_kind="python",
                executor_settings={"function": "tests.operations.breaks"})  # fmt: skip
    try:
        yield
    finally:
        REGISTRY.pop("tests.operations.breaks", None)
        await asyncdb.close()


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_an_agent_failing_in_the_turn_a_request_started_logs_that_requests_id(
    breaking: None, json_lines: Lines
) -> None:
    headers = {"content-type": "application/json", "a2a-version": V1, "x-request-id": "rpc-9"}
    scope = http_scope("/agents/breaking/jsonrpc/", headers=headers)
    answer = await call(scope, json.dumps(envelope(V1, "send", text="hi")).encode())
    assert answer.json()["result"]["task"]["status"]["state"] == "TASK_STATE_FAILED"
    [failure] = [line for line in json_lines.of_request("rpc-9") if line["level"] == "ERROR"]
    assert failure["logger"] == "tasks.runner"
    assert (failure["agent"], failure["method"], failure["binding"]) == (
        "breaking", "SendMessage", "jsonrpc"
    )  # fmt: skip
    assert "RuntimeError: the skill broke" in failure["exception"]


WARN = "import django, logging; django.setup(); logging.getLogger('hub.test').warning('hello')"


def run_logging(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    clean |= {"DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "a2ahub.settings"} | env
    return subprocess.run([sys.executable, "-c", WARN], cwd=ROOT, env=clean,
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def test_a_process_writes_json_lines_only_when_asked(tmp_path: Path) -> None:
    [plain] = run_logging(tmp_path).stderr.splitlines()
    assert plain.endswith(" WARNING hub.test hello")
    [line] = run_logging(tmp_path, LOG_FORMAT="json").stderr.splitlines()
    assert json.loads(line) | {"time": "", "process": 0} == {
        "time": "", "level": "WARNING", "logger": "hub.test", "message": "hello", "process": 0
    }  # fmt: skip


def test_an_unknown_log_format_stops_start_up_naming_it(tmp_path: Path) -> None:
    done = run_logging(tmp_path, LOG_FORMAT="xml")
    assert done.returncode != 0
    assert "LOG_FORMAT must be plain or json, not 'xml'" in done.stderr


# Below: a real server process (daphne, embedded), as an operator runs it with JSON logs.

SETUP = """
import django
django.setup()
from django.core.management import call_command
from agents.models import Agent
call_command("migrate", interactive=False, verbosity=0)
Agent.objects.create(slug="overdue", name="Overdue", description="Writes past its limit.",
                     executor_kind="writer", executor_settings={"delay": 0.3},
                     task_timeout_seconds=1)
"""


@dataclass
class Server:
    base: str
    log: Path

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def of_request(self, request_id: str) -> list[dict[str, Any]]:
        return [line for line in self.lines() if line.get("request_id") == request_id]

    def access_lines(self, request_id: str) -> list[dict[str, Any]]:
        return [line for line in self.of_request(request_id) if line["logger"] == "daphne.access"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("json-logs")
    env = embedded_env(root) | {"LOG_FORMAT": "json"}
    subprocess.run([sys.executable, "-c", SETUP], cwd=ROOT, env=env, check=True, timeout=120)
    port = free_port()
    log = root / "web.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "a2ahub.daphne", "-b", "127.0.0.1", "-p", str(port),
             "a2ahub.asgi:application"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for_http(f"{base}/healthz", process)
        yield Server(base, log)
    finally:
        process.terminate()
        process.wait(timeout=30)


def send_overdue(server: Server, request_id: str, binding: str) -> httpx.Response:
    headers = {"A2A-Version": V1, "X-Request-ID": request_id}
    message = {"message": wire_message(V1, "logs")}
    if binding == "jsonrpc":
        body = rpc_body(V1, "send", message)
        return httpx.post(f"{server.base}/agents/overdue/jsonrpc/", json=body, headers=headers,
                          timeout=30)  # fmt: skip
    return httpx.post(f"{server.base}/agents/overdue/rest/message:send", json=message,
                      headers=headers, timeout=30)  # fmt: skip


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
def test_a_server_logs_what_a_request_caused_as_json_with_its_id(
    server: Server, binding: str
) -> None:
    request_id = f"overdue-{binding}"
    answer = send_overdue(server, request_id, binding)
    assert answer.headers["X-Request-ID"] == request_id
    # The turn ran past the agent's limit: its runner warned, in the turn the request began.
    [warning] = [line for line in server.of_request(request_id) if line["level"] == "WARNING"]
    assert warning["logger"] == "tasks.runner" and "ran past its limit" in warning["message"]
    assert (warning["agent"], warning["method"], warning["binding"]) == (
        "overdue", "SendMessage", binding
    )  # fmt: skip
    path = "jsonrpc/" if binding == "jsonrpc" else "rest/message:send"
    # Written once the answer is sent: perhaps after the client has it.
    assert eventually(lambda: server.access_lines(request_id) != [])
    [access] = server.access_lines(request_id)
    assert f'"POST /agents/overdue/{path}" 200' in access["message"]


def test_a_page_a_server_serves_logs_with_its_id_and_a_hostile_id_is_replaced(
    server: Server,
) -> None:
    hostile = 'x" injected="1'
    answer = httpx.get(f"{server.base}/nowhere", headers={"X-Request-ID": hostile}, timeout=10)
    given = answer.headers["X-Request-ID"]
    assert answer.status_code == 404 and re.fullmatch(r"[0-9a-f]{32}", given)
    assert eventually(lambda: server.access_lines(given) != [])
    lines = server.of_request(given)
    assert [line["logger"] for line in lines] == ["django.request", "daphne.access"]
    assert lines[0]["message"] == "Not Found: /nowhere"
    assert '"GET /nowhere" 404' in lines[1]["message"]
    assert "injected" not in server.log.read_text()


def test_every_line_a_server_wrote_is_a_json_object(server: Server) -> None:
    httpx.get(f"{server.base}/healthz", timeout=10)
    lines = server.log.read_text().splitlines()
    assert lines and all(isinstance(json.loads(line), dict) for line in lines)
