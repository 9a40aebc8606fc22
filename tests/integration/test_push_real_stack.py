"""Push on the distributed hub (PostgreSQL, Redis, Celery workers), seen from a real webhook
receiver on 127.0.0.1: every event arrives in order even when the receiver fails at first,
a worker killed while a delivery is in flight loses nothing (the delivery comes again,
with the same webhook-id, once the dead worker's lease on the queue has run out), and a
receiver that answers again gets its backlog at once, not when each retry falls due."""

from __future__ import annotations

import os
import re
import signal
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

from tests.helpers import eventually
from tests.integration.stack import Hub, hub_of_its_own
from tests.push.receiver import Behaviour, HeldReceiver, Received, Receiver, verified_claims

pytestmark = pytest.mark.integration

LEASE_SECONDS = 3
RETRY_AFTER = 120  # s: what a backlog waits for without the fast path, as after a long outage
BACKLOG_BOUND = 30.0  # s from the receiver's return to its backlog's last delivery (issue #30)
PUSH_ENV = {
    # The receiver runs on loopback, which webhooks may not reach unless allow-listed.
    "OUTBOUND_ALLOWED_HOSTS": "127.0.0.1",
    "PUSH_RETRY_BASE_SECONDS": "0.2",
    # Retries back off from 0.2 s; only a receiver's Retry-After makes one wait that long.
    "PUSH_RETRY_MAX_SECONDS": str(RETRY_AFTER),
    # Long enough for a held request to stay in flight while the other queues are sent.
    "PUSH_TIMEOUT_SECONDS": "30",
    "PUSH_LEASE_SECONDS": str(LEASE_SECONDS),
}
TOKEN = "real-stack-token"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """The session hub's recipe (see conftest.py) with push settings for a local receiver;
    named `hub` so a failing test's report carries the hub's process logs."""
    with hub_of_its_own("a2ahub_push", tmp_path_factory.mktemp("push-hub"), PUSH_ENV) as running:
        yield running


@pytest.fixture
def receiver_for() -> Iterator[Any]:
    started: list[Receiver] = []

    def start(behaviour: Behaviour) -> Receiver:
        started.append(Receiver(behaviour))
        return started[-1]

    yield start
    for receiver in started:
        receiver.down()


def send_with_webhook(hub: Hub, url: str) -> str:
    """A blocking 1.0 send to the conformance agent (working, an artifact, completed) with an
    inline push config; the task's id."""
    message = {"messageId": f"tck-stream-001-{uuid.uuid4().hex}", "role": "ROLE_USER",
               "parts": [{"text": "push, please"}]}  # fmt: skip
    params = {
        "message": message,
        "configuration": {"taskPushNotificationConfig": {"url": url, "token": TOKEN}},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
    response = httpx.post(
        f"{hub.web_a}/agents/tck/jsonrpc/", json=body, headers={"A2A-Version": "1.0"}, timeout=30
    )
    answer = response.json()
    assert "result" in answer, answer
    return str(answer["result"]["task"]["id"])


def query(hub: Hub, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    url = hub.database_url.replace("postgres://", "postgresql://", 1)
    with psycopg.connect(url, connect_timeout=10) as connection:
        return list(connection.execute(sql, args).fetchall())


def deliveries(hub: Hub, task_id: str) -> list[tuple[str, int, str, int]]:
    """(id, sequence, state, attempts) of every delivery of the task, in sequence order."""
    rows = query(
        hub,
        "SELECT d.id, d.sequence, d.state, d.attempts FROM push_delivery d "
        "JOIN push_pushnotificationconfig c ON c.id = d.config_id "
        "WHERE c.task_id = %s ORDER BY d.sequence",
        uuid.UUID(task_id),
    )
    return [(str(i), int(s), str(st), int(a)) for i, s, st, a in rows]


def wait_until_all_delivered(hub: Hub, task_id: str, timeout: float) -> list[Any]:
    deadline = time.monotonic() + timeout
    while True:
        rows = deliveries(hub, task_id)
        if rows and all(state == "delivered" for _, _, state, _ in rows):
            return rows
        assert time.monotonic() < deadline, f"not all delivered within {timeout}s: {rows}"
        time.sleep(0.2)


def sequences(hub: Hub, task_id: str, requests: list[Received]) -> list[int]:
    by_id = {delivery_id: sequence for delivery_id, sequence, _, _ in deliveries(hub, task_id)}
    return [by_id[r.header("webhook-id")] for r in requests]


def test_every_event_arrives_in_order_at_a_flaky_receiver(hub: Hub, receiver_for: Any) -> None:
    receiver = receiver_for(Behaviour(fail_first=3, fail_status=503))

    task_id = send_with_webhook(hub, receiver.url)
    rows = wait_until_all_delivered(hub, task_id, 30)

    got = receiver.wait_for(len(rows))
    assert len(rows) >= 4  # the task, working, the artifact, completed
    assert sequences(hub, task_id, got) == list(range(1, len(rows) + 1))
    assert [r.status for r in receiver.requests[:4]] == [503, 503, 503, 200]
    assert len({r.header("webhook-id") for r in receiver.requests[:4]}) == 1
    assert rows[0][3] == 4  # attempts of the first delivery
    assert all(r.header("X-A2A-Notification-Token") == TOKEN for r in got)
    attempts = query(
        hub, "SELECT status_code FROM push_deliveryattempt WHERE delivery_id = %s "
        "ORDER BY started_at", uuid.UUID(rows[0][0]),
    )  # fmt: skip
    assert [code for (code,) in attempts] == [503, 503, 503, 200]


def test_a_worker_killed_mid_delivery_does_not_lose_the_delivery(
    hub: Hub, receiver_for: Any
) -> None:
    # The first request is answered only after 6 s: the workers die while it is in flight.
    receiver = receiver_for(Behaviour(delay=6.0, slow_first=1))

    task_id = send_with_webhook(hub, receiver.url)
    (in_flight,) = receiver.wait_for(1, accepted=False, timeout=20)
    # Every worker dies before any replacement starts: one left alive while another starts
    # (seconds, on a busy machine) could outlive the 6 s and deliver the first one itself.
    killed = hub.workers
    for worker in killed:
        os.kill(worker.pid, signal.SIGKILL)
    for worker in killed:
        worker.popen.wait(timeout=10)
    for replacement in [hub.replace_worker(worker) for worker in killed]:
        hub.wait_for_worker(replacement)

    rows = wait_until_all_delivered(hub, task_id, LEASE_SECONDS + 30)

    later = receiver.requests[1:]
    webhook_ids = [r.header("webhook-id") for r in later]
    assert in_flight.header("webhook-id") in webhook_ids, "the killed delivery never came again"
    assert sequences(hub, task_id, later) == list(range(1, len(rows) + 1))
    assert in_flight.body == later[0].body
    assert rows[0][3] >= 2  # the attempt that died with its worker, and the one that succeeded


REST_SENDS = {
    "1.0": (
        "/agents/tck/rest/message:send",
        {"A2A-Version": "1.0"},
        lambda url, mid: {
            "message": {"messageId": mid, "role": "ROLE_USER", "parts": [{"text": "rest"}]},
            "configuration": {"taskPushNotificationConfig": {"url": url, "token": TOKEN}},
        },
    ),
    "0.3": (
        "/agents/tck/rest/v1/message:send",
        {},
        lambda url, mid: {
            "request": {"messageId": mid, "role": "ROLE_USER", "content": [{"text": "rest"}]},
            "configuration": {"pushNotification": {"url": url, "token": TOKEN}},
        },
    ),
}


@pytest.mark.parametrize("version", ["1.0", "0.3"])
def test_a_webhook_set_over_http_json_arrives_signed_and_in_order(
    hub: Hub, receiver_for: Any, version: str
) -> None:
    """The HTTP+JSON binding (both versions) takes an inline push config as JSON-RPC does:
    every event of the task reaches the receiver once, in order, signed with the hub's keys,
    in the shape of the version that set it up."""
    receiver = receiver_for(Behaviour())
    path, headers, body = REST_SENDS[version]
    message_id = f"tck-stream-001-{uuid.uuid4().hex}"
    response = httpx.post(
        f"{hub.web_a}{path}", json=body(receiver.url, message_id), headers=headers, timeout=30
    )
    assert response.status_code == 200, response.text
    task_id = response.json()["task"]["id"]

    rows = wait_until_all_delivered(hub, task_id, 30)
    got = receiver.wait_for(len(rows))
    jwks = httpx.get(f"{hub.web_b}/.well-known/jwks.json", timeout=10).json()

    assert len(rows) >= 4 and sequences(hub, task_id, got) == list(range(1, len(rows) + 1))
    for request in got:
        claims = verified_claims(request.header("A2A-Push-Signature"), request.body, jwks)
        assert claims["task_id"] == task_id
    if version == "1.0":
        assert "task" in got[0].json() and "statusUpdate" in got[-1].json()
    else:
        assert {r.json()["kind"] for r in got} == {"task"}


ATTEMPTS_LINE = re.compile(r'^a2ahub_push_attempts_total\{outcome="(\w+)"\} ([0-9.e+]+)$', re.M)


def attempts_counted(hub: Hub) -> dict[str, int]:
    text = httpx.get(f"{hub.web_a}/metrics", timeout=10).text
    return {outcome: int(float(n)) for outcome, n in ATTEMPTS_LINE.findall(text)}


def test_a_receiver_that_does_not_answer_holds_only_its_own_queue(
    hub: Hub, receiver_for: Any
) -> None:
    """Many configs at once on the workers' engines: while one receiver holds its first
    delivery unanswered, every other receiver gets all of its events; the attempts counter
    at /metrics moves by exactly the attempts made."""
    before = attempts_counted(hub)
    slow = HeldReceiver()
    fast = [receiver_for(Behaviour()) for _ in range(8)]
    try:
        slow_task = send_with_webhook(hub, slow.url)
        slow.wait_for(1, accepted=False, timeout=20)
        fast_tasks = [send_with_webhook(hub, receiver.url) for receiver in fast]
        for task_id, receiver in zip(fast_tasks, fast, strict=True):
            rows = wait_until_all_delivered(hub, task_id, 30)
            got = receiver.wait_for(len(rows))
            assert sequences(hub, task_id, got) == list(range(1, len(rows) + 1))
        assert len(slow.requests) == 1 and not slow.answer_all.is_set()

        slow.answer_all.set()
        rows = wait_until_all_delivered(hub, slow_task, 30)
        got = slow.wait_for(len(rows))
    finally:
        slow.answer_all.set()
        slow.down()

    assert sequences(hub, slow_task, got) == list(range(1, len(rows) + 1))
    made = query(
        hub, "SELECT count(*) FROM push_deliveryattempt a JOIN push_delivery d "
        "ON d.id = a.delivery_id JOIN push_pushnotificationconfig c ON c.id = d.config_id "
        "WHERE c.task_id = ANY(%s)", [uuid.UUID(t) for t in [slow_task, *fast_tasks]],
    )[0][0]  # fmt: skip

    def moved() -> dict[str, int]:
        after = attempts_counted(hub)
        return {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}

    assert eventually(lambda: moved() == {"delivered": made}), (moved(), made)


class Unavailable(Receiver):
    """503 until its behaviour changes, asking every config but `/probe` to retry RETRY_AFTER s
    later: the wait a long outage's backoff reaches, without a long outage. The probe retries
    on the short schedule, so it is the first to find the receiver back."""

    def __init__(self) -> None:
        super().__init__(Behaviour(fail_first=10**9, fail_status=503,
                                   fail_headers={"Retry-After": str(RETRY_AFTER)}))  # fmt: skip

    def answer(
        self, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], float]:
        status, extra, delay = super().answer(path, headers, body)
        return status, {} if path.endswith("/probe") else extra, delay


def waiting_for_long(hub: Hub, task_id: str) -> bool:
    """Every delivery of the task waits for a retry more than a minute away."""
    rows = query(
        hub, "SELECT count(*) FILTER (WHERE d.next_attempt_at > now() + interval '60 s'), "
        "count(*) FROM push_delivery d JOIN push_pushnotificationconfig c ON c.id = d.config_id "
        "WHERE c.task_id = %s AND d.state = 'pending'", uuid.UUID(task_id),
    )  # fmt: skip
    waiting, pending = rows[0]
    return bool(pending) and waiting == pending


def test_a_receiver_that_answers_again_gets_its_backlog_at_once_in_order_once(hub: Hub) -> None:
    """Issue #30: a success after failures makes the receiver's other waiting deliveries due
    at once: the backlog arrives within BACKLOG_BOUND of the receiver's return, although each
    queue was told to wait RETRY_AFTER s; each config's events in order, each once."""
    receiver = Unavailable()
    try:
        backlog = [send_with_webhook(hub, f"{receiver.url}/{n}") for n in range(4)]
        probe = send_with_webhook(hub, f"{receiver.url}/probe")
        assert eventually(lambda: all(waiting_for_long(hub, t) for t in backlog), 30, 0.2)

        back = time.monotonic()
        receiver.behaviour = Behaviour()
        tasks = [*backlog, probe]
        rows = {t: wait_until_all_delivered(hub, t, BACKLOG_BOUND) for t in tasks}
        took = time.monotonic() - back
        accepted = receiver.accepted()
    finally:
        receiver.down()

    assert took < BACKLOG_BOUND
    assert all(r.at >= back for r in accepted)
    for n, task_id in zip([*map(str, range(4)), "probe"], tasks, strict=True):
        got = [r for r in accepted if r.path.endswith(f"/{n}")]
        assert sequences(hub, task_id, got) == list(range(1, len(rows[task_id]) + 1))
