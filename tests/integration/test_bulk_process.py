"""Requests with big bodies on the distributed hub: a web process hands each to the bulk
process (`protocol.bulk`) and relays its answer, so that their long C calls hold another
interpreter; without a bulk process it serves them itself."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.factories.envelopes import rpc_body
from tests.factories.messages import wire_message
from tests.factories.versions import V1
from tests.helpers import wait_for_port
from tests.integration.stack import Hub, Process
from tests.streaming.sse import artifact_text, chunks_in, open_stream, payload

pytestmark = pytest.mark.integration

BIG = "big body " * 60_000  # 540 kB: past A2A_THREAD_BODY_BYTES (256 KiB)
ECHO = "/agents/echo/jsonrpc/"


def bulk_of(hub: Hub) -> Process:
    return [p for p in hub.processes if p.name == "bulk"][-1]


def served_by(process: Process) -> int:
    """How many JSON-RPC requests to the echo agent the process's access log lists."""
    return process.log.read_text(errors="replace").count(f'"POST {ECHO}"')


def send(base: str, text: str, request_id: str = "") -> httpx.Response:
    headers = {"A2A-Version": V1} | ({"X-Request-ID": request_id} if request_id else {})
    body = rpc_body(V1, "send", {"message": wire_message(V1, text)})
    return httpx.post(f"{base}{ECHO}", json=body, headers=headers, timeout=60)


def echoed(answer: httpx.Response) -> str:
    assert answer.status_code == 200, answer.text[:500]
    task: dict[str, Any] = answer.json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task["status"]
    return artifact_text(task)


def test_a_big_send_is_served_by_the_bulk_process_and_a_small_one_by_the_web_process(
    hub: Hub,
) -> None:
    bulk = bulk_of(hub)
    before = served_by(bulk)

    big = send(hub.web_a, BIG, request_id="bulk-send-1")
    assert BIG in echoed(big)
    assert big.headers["X-Request-ID"] == "bulk-send-1"  # the client's, once
    assert served_by(bulk) == before + 1

    assert "small" in echoed(send(hub.web_b, "small"))
    assert served_by(bulk) == before + 1


def test_a_big_stream_comes_back_event_by_event_through_the_web_process(hub: Hub) -> None:
    bulk = bulk_of(hub)
    before = served_by(bulk)
    params = {"message": wire_message(V1, BIG)}
    with (
        httpx.Client(base_url=hub.web_b, timeout=60) as http,
        open_stream(http, "echo", V1, "stream", params) as stream,
    ):
        assert stream.response.headers["content-type"].startswith("text/event-stream")
        frames = stream.rest()
    assert BIG in chunks_in(frames, V1)
    last = payload(frames[-1].result, V1)
    assert last["status"]["state"] == "TASK_STATE_COMPLETED"
    assert served_by(bulk) == before + 1


@pytest.fixture
def bulk_stopped(hub: Hub) -> Iterator[Process]:
    """The hub's bulk process killed, as a crash would (its socket file left behind); started
    again after the test."""
    bulk = bulk_of(hub)
    bulk.popen.send_signal(signal.SIGKILL)
    bulk.popen.wait(timeout=10)
    yield bulk
    if not bulk_of(hub).alive():
        restarted = hub.start_bulk()
        wait_for_port(hub.env["A2A_BULK_SOCKET"], restarted.popen)


def test_without_the_bulk_process_the_web_process_serves_a_big_send_itself_until_it_is_back(
    hub: Hub, bulk_stopped: Process
) -> None:
    assert BIG in echoed(send(hub.web_a, BIG))

    # Started again on the socket the dead one left (as runhub restarts it), it serves again.
    restarted = hub.start_bulk()
    wait_for_port(hub.env["A2A_BULK_SOCKET"], restarted.popen)
    assert BIG in echoed(send(hub.web_a, BIG))
    assert served_by(restarted) == 1
