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
from tests.operations.metered import sample
from tests.streaming.sse import artifact_text, chunks_in, open_stream, payload

pytestmark = pytest.mark.integration

BIG = "big body " * 60_000  # 540 kB: past A2A_THREAD_BODY_BYTES (256 KiB)
ECHO = "/agents/echo/jsonrpc/"


def bulk_of(hub: Hub) -> Process:
    return [p for p in hub.processes if p.name == "bulk"][-1]


def served_by(process: Process) -> int:
    """How many JSON-RPC requests to the echo agent the process's access log lists."""
    return process.log.read_text(errors="replace").count(f'"POST {ECHO}"')


def send(
    base: str, text: str, request_id: str = "", agent: str = "echo", **headers: str
) -> httpx.Response:
    headers = {"A2A-Version": V1} | ({"X-Request-ID": request_id} if request_id else {}) | headers
    body = rpc_body(V1, "send", {"message": wire_message(V1, text)})
    return httpx.post(f"{base}/agents/{agent}/jsonrpc/", json=body, headers=headers, timeout=60)


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


def counted(base: str, code: str, method: str = "SendMessage") -> float:
    """How many 1.0 JSON-RPC requests to echo the web process's `/metrics` counts, by method
    ("unknown": refused before it was read) and answer."""
    text = httpx.get(f"{base}/metrics", timeout=10).text
    labels = {"agent": "echo", "method": method, "version": V1, "binding": "jsonrpc"}
    return sample(text, "a2ahub_requests_total", **labels, code=code)


def test_the_web_process_counts_the_big_requests_the_bulk_process_answered(hub: Hub) -> None:
    bulk = bulk_of(hub)
    before, served = counted(hub.web_a, "ok"), served_by(bulk)
    refused_before = counted(hub.web_a, "-32602", "unknown")
    other_before = counted(hub.web_b, "ok")

    assert BIG in echoed(send(hub.web_a, BIG))
    # Past the cap on parts, and big: refused by the bulk process, naming the cap.
    parts = [{"text": "part " * 60} for _ in range(1001)]
    message = {"messageId": "too-many-parts", "role": "ROLE_USER", "parts": parts}
    refused = httpx.post(f"{hub.web_a}{ECHO}", json=rpc_body(V1, "send", {"message": message}),
                         headers={"A2A-Version": V1}, timeout=60)  # fmt: skip
    assert refused.json()["error"]["code"] == -32602, refused.text[:300]
    assert "1000" in refused.json()["error"]["message"]

    assert served_by(bulk) == served + 2
    assert counted(hub.web_a, "ok") == before + 1
    assert counted(hub.web_a, "-32602", "unknown") == refused_before + 1
    assert counted(hub.web_b, "ok") == other_before
    assert "x-a2ahub-counted" not in refused.headers  # between the processes only


def challenge_of(answer: httpx.Response) -> str:
    assert answer.status_code == 401, answer.text[:300]
    return answer.headers["WWW-Authenticate"]


def test_the_bulk_process_sees_the_scheme_the_request_came_by_not_one_a_client_claims(
    hub: Hub,
) -> None:
    """An OAuth2 agent's challenge names its metadata at the hub's URL, as the request reached
    the hub: the bulk process, reached on a Unix socket, hears the scheme from the web process,
    which drops the header a client sends in its place."""
    forged = send(hub.web_a, BIG, agent="secure", **{"X-A2AHub-Scheme": "https"})
    assert f'resource_metadata="{hub.web_a}/.well-known/oauth-protected-resource/agents/secure"' \
        in challenge_of(forged)  # fmt: skip

    # What a web process that took the request over TLS hands over.
    transport = httpx.HTTPTransport(uds=hub.env["A2A_BULK_SOCKET"])
    with httpx.Client(transport=transport, base_url="http://bulk", timeout=60) as bulk:
        body = rpc_body(V1, "send", {"message": wire_message(V1, BIG)})
        host = hub.web_a.removeprefix("http://")
        over_tls = bulk.post("/agents/secure/jsonrpc/", json=body, headers={
            "A2A-Version": V1, "Host": host, "X-A2AHub-Scheme": "https"})  # fmt: skip
    assert f'resource_metadata="https://{host}/.well-known/oauth-protected-resource' \
        "/agents/secure" in challenge_of(over_tls)  # fmt: skip
