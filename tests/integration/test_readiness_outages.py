"""`/readyz` as a load balancer polls it while the services under the hub go away and come
back: it turns 503 naming the part that failed within seconds, and 200 again within seconds
of the part's return, however long the outage was.

The hub here (one web process, one worker, JSON logs) runs on a PostgreSQL cluster and a
redis-server of its own, which the tests stop and start; the machine's own are not touched.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.factories.envelopes import rpc_body
from tests.factories.messages import wire_message
from tests.factories.versions import V1
from tests.integration.servers import (
    PostgresCluster,
    RedisServer,
)
from tests.integration.small_hub import small_hub
from tests.integration.stack import Hub, create_database

pytestmark = pytest.mark.integration

NOTICED_WITHIN = 5.0
BACK_WITHIN = 5.0
# Long enough for every reconnect backoff under the hub to have grown.
OUTAGE_SECONDS = 10.0


@pytest.fixture(scope="module")
def hub(
    cluster: PostgresCluster, private_redis: RedisServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Hub]:
    """(Named `hub`, as the session's is: a failing test's report then carries its logs.)"""
    create_database("hub", cluster.url())
    root = tmp_path_factory.mktemp("readiness")
    with small_hub(cluster.url("hub"), private_redis.url, root, {"LOG_FORMAT": "json"}) as running:
        yield running


@dataclass
class Probe:
    """One `/readyz` answer, and when it came."""

    status: int
    body: dict[str, Any]
    at: float
    request_id: str


def probe(hub: Hub, request_id: str = "") -> Probe:
    headers = {"X-Request-ID": request_id} if request_id else {}
    response = httpx.get(f"{hub.web_a}/readyz", headers=headers, timeout=15)
    return Probe(response.status_code, response.json(), time.monotonic(),
                 response.headers["X-Request-ID"])  # fmt: skip


def poll(hub: Hub, wanted: Callable[[Probe], bool], timeout: float) -> Probe:
    """Probe as a load balancer does, every fifth of a second, until an answer is `wanted`;
    the last answer when none was by `timeout`."""
    deadline = time.monotonic() + timeout
    count = 0
    while True:
        count += 1
        answer = probe(hub, f"readiness-probe-{time.monotonic_ns()}-{count}")
        if wanted(answer) or answer.at > deadline:
            return answer
        time.sleep(0.2)


def ready(answer: Probe) -> bool:
    return answer.status == 200


def failing(part: str) -> Callable[[Probe], bool]:
    return lambda answer: answer.status == 503 and part in answer.body["failing"]


def log_lines(hub: Hub, request_id: str) -> list[dict[str, Any]]:
    """The web process's JSON log lines written for the request `request_id`."""
    [web] = [p for p in hub.processes if p.name == "web"]
    lines = [json.loads(line) for line in web.log.read_text().splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("request_id") == request_id]


def test_readyz_names_redis_while_it_is_away_and_is_ready_soon_after_it_returns(
    hub: Hub, private_redis: RedisServer
) -> None:
    assert ready(poll(hub, ready, timeout=30)), "the hub was not ready to begin with"
    private_redis.stop()
    gone = time.monotonic()
    noticed = poll(hub, failing("redis"), timeout=NOTICED_WITHIN)
    assert noticed.at - gone < NOTICED_WITHIN, noticed.body
    assert noticed.body["parts"]["database"] == "ready"
    assert noticed.body["parts"]["redis"].startswith("not ready")
    # The warning that says why was written for the probe that found it, as JSON.
    written = log_lines(hub, noticed.request_id)
    [why] = [line for line in written if line["level"] == "WARNING"]
    assert why["logger"] == "a2ahub.health" and "redis is not ready" in why["message"]
    # Waiting for Redis is no error of this process's: the 503 is an INFO line.
    assert [line for line in written if line["level"] == "ERROR"] == []

    time.sleep(OUTAGE_SECONDS - (time.monotonic() - gone))  # the outage itself
    private_redis.start()
    back = time.monotonic()
    again = poll(hub, ready, timeout=BACK_WITHIN)
    assert again.at - back < BACK_WITHIN, again.body
    assert again.body["parts"] == {"database": "ready", "redis": "ready", "workers": "ready"}


def test_readyz_names_the_database_while_it_is_away_and_is_ready_soon_after_it_returns(
    hub: Hub, cluster: PostgresCluster
) -> None:
    """Once ready again the hub serves at once: an inline send and a worker's send made then
    complete within SEND_WITHIN (the pools of the web process and the worker do not wait out
    a reconnect backoff grown during the outage, nor hand out a connection from before it)."""
    assert ready(poll(hub, ready, timeout=30)), "the hub was not ready to begin with"
    cluster.stop()
    gone = time.monotonic()
    try:
        noticed = poll(hub, failing("database"), timeout=NOTICED_WITHIN)
        assert noticed.at - gone < NOTICED_WITHIN, noticed.body
        assert noticed.body["failing"] == ["database"]
        time.sleep(OUTAGE_SECONDS - (time.monotonic() - gone))  # the outage itself
    finally:
        cluster.start()
    back = time.monotonic()
    again = poll(hub, ready, timeout=BACK_WITHIN)
    assert again.at - back < BACK_WITHIN, again.body

    with ThreadPoolExecutor(max_workers=2) as pool:
        sends = list(pool.map(lambda slug: timed_send(hub, slug), ["echo", "slow"]))
    for state, seconds in sends:
        assert (state, seconds < SEND_WITHIN) == ("TASK_STATE_COMPLETED", True), sends


# The one second for the first request after the database answers, and a margin for a
# busy two-core machine.
SEND_WITHIN = 1.5


def timed_send(hub: Hub, slug: str) -> tuple[str, float]:
    """A blocking send to `slug` (echo: inline; slow: a worker's turn): its task's state, or
    the error's message, and how long it took."""
    body = rpc_body(V1, "send", {"message": wire_message(V1, "0" if slug == "slow" else "hi")})
    started = time.monotonic()
    response = httpx.post(f"{hub.web_a}/agents/{slug}/jsonrpc/", json=body,
                          headers={"A2A-Version": V1}, timeout=30)  # fmt: skip
    seconds = time.monotonic() - started
    answer = response.json()
    if "error" in answer:
        return str(answer["error"]["message"]), seconds
    return str(answer["result"]["task"]["status"]["state"]), seconds


def test_readyz_names_the_workers_while_none_runs_and_is_ready_once_one_does(hub: Hub) -> None:
    assert ready(poll(hub, ready, timeout=30)), "the hub was not ready to begin with"
    [worker] = hub.workers
    worker.popen.terminate()
    worker.popen.wait(timeout=15)
    gone = time.monotonic()
    noticed = poll(hub, failing("workers"), timeout=NOTICED_WITHIN)
    assert noticed.at - gone < NOTICED_WITHIN, noticed.body
    assert noticed.body["failing"] == ["workers"]

    replaced = hub.replace_worker(worker)
    hub.wait_for_worker(replaced)
    back = time.monotonic()
    again = poll(hub, ready, timeout=BACK_WITHIN)
    assert again.at - back < BACK_WITHIN, again.body


def test_readyz_names_a_redis_that_hangs_within_its_timeout(
    hub: Hub, private_redis: RedisServer
) -> None:
    """A Redis that takes connections but answers nothing (stopped, not killed: the kernel
    still accepts) is noticed by the probe's own timeout, not after the client's default."""
    assert ready(poll(hub, ready, timeout=30)), "the hub was not ready to begin with"
    assert private_redis.process is not None
    private_redis.process.send_signal(signal.SIGSTOP)
    gone = time.monotonic()
    try:
        noticed = poll(hub, failing("redis"), timeout=NOTICED_WITHIN)
        assert noticed.at - gone < NOTICED_WITHIN, noticed.body
        assert noticed.body["parts"]["redis"] == "not ready: TimeoutError"
    finally:
        private_redis.process.send_signal(signal.SIGCONT)
    back = time.monotonic()
    again = poll(hub, ready, timeout=BACK_WITHIN)
    assert again.at - back < BACK_WITHIN, again.body
