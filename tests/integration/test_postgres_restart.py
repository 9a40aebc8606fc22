"""PostgreSQL restarts for half a second while the hub is under load (issues #16 and #30).

The hub here runs on a PostgreSQL cluster of its own (initdb into a temporary directory, as
the `postgres` user when run as root) and a redis-server of its own, so that restarting the
database touches nobody else. Clients keep sending through both web processes while the
cluster is stopped (fast shutdown: every session ends at once) and started again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.factories.envelopes import NON_BLOCKING, rpc_body
from tests.factories.messages import wire_message
from tests.factories.versions import V1
from tests.helpers import eventually
from tests.integration.servers import (
    PostgresCluster,
    RedisServer,
)
from tests.integration.stack import THREADS_PER_WORKER, Hub, create_database, running_hub

pytestmark = pytest.mark.integration

# How long the database is away: stopped, then started again this much later (a blip: an
# operator's restart, a failover).
DOWN_SECONDS = 0.5
# A request met by the restart answers within this: the pool waits 10 s at most for a
# connection, and the stack's blocking timeout is 30 s.
ANSWER_WITHIN = 12.0
# Every request sent this long after PostgreSQL answers again succeeds: the one
# second (no reconnect backoff, no connection from before the restart handed out), and a
# margin for a busy two-core machine.
SERVED_WITHIN = 1.5
# The load goes on until every kind of request sent since then succeeded through every web
# process, within this.
SERVED_FOR = 20.0
# Two rounds of one-second turns on every worker thread, sent once the web processes serve
# again, end within this (on a busy two-core machine).
TURNS_WITHIN = 8.0
CLIENTS = 6
KINDS = ("inline", "worker", "queued", "stream")


@pytest.fixture(scope="module")
def hub(
    cluster: PostgresCluster, private_redis: RedisServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Hub]:
    """The whole hub on the private cluster and a private Redis. (Named `hub`, as the
    session's is: a failing test's report then carries these processes' logs.)"""
    create_database("hub", cluster.url())
    root = tmp_path_factory.mktemp("postgres-restart")
    with running_hub(cluster.url("hub"), private_redis.url, root) as running:
        yield running


@dataclass
class Outcome:
    """One request of the load: what it was, where it went, and what came back."""

    kind: str
    base: str
    started: float
    seconds: float
    body: dict[str, Any] | None = None  # the JSON-RPC answer (a stream's last frame)
    problem: str = ""  # anything that is not a JSON-RPC answer: a page, a hang, a reset

    @property
    def ok(self) -> bool:
        """Answered as it would be with the database up: the turn completed (or, for a
        send that does not wait, the task was stored)."""
        if self.body is None or "result" not in self.body:
            return False
        result = self.body["result"]
        event = result.get("task") or result.get("statusUpdate") or {}
        state = event.get("status", {}).get("state")
        return self.kind == "queued" or state == "TASK_STATE_COMPLETED"


def request(kind: str, base: str, seconds: str = "0") -> Outcome:
    """One request of `kind`; a worker-mode turn lasts `seconds`."""
    started = time.monotonic()
    outcome = Outcome(kind, base, started, 0.0)
    try:
        with httpx.Client(base_url=base, timeout=ANSWER_WITHIN + 20) as http:
            if kind == "stream":
                outcome.body = stream_answer(http)
            else:
                outcome.body = send_answer(http, kind, seconds)
    except (httpx.HTTPError, ValueError) as exc:
        outcome.problem = f"{type(exc).__name__}: {exc}"
    except AssertionError as exc:
        outcome.problem = str(exc)
    outcome.seconds = time.monotonic() - started
    return outcome


def send_answer(http: httpx.Client, kind: str, seconds: str) -> dict[str, Any]:
    slug, text = ("echo", "hi") if kind == "inline" else ("slow", seconds)
    params: dict[str, Any] = {"message": wire_message(V1, text)}
    if kind == "queued":
        params["configuration"] = NON_BLOCKING[V1]
    response = http.post(
        f"/agents/{slug}/jsonrpc/", json=rpc_body(V1, "send", params), headers={"A2A-Version": V1}
    )
    return json_rpc_answer(response, response.content)


def stream_answer(http: httpx.Client) -> dict[str, Any]:
    """The stream's last frame (its final event, or the error it ends with)."""
    params = {"message": wire_message(V1, "hi")}
    body = rpc_body(V1, "stream", params)
    with http.stream(
        "POST", "/agents/echo/jsonrpc/", json=body, headers={"A2A-Version": V1}
    ) as response:
        content = response.read()
    if not response.headers.get("content-type", "").startswith("text/event-stream"):
        return json_rpc_answer(response, content)
    frames = [
        line[5:].strip() for line in content.decode().splitlines() if line.startswith("data:")
    ]
    assert frames, "a stream without a frame"
    last = httpx.Response(200, content=frames[-1], headers={"content-type": "application/json"})
    return json_rpc_answer(last, last.content)


def json_rpc_answer(response: httpx.Response, content: bytes) -> dict[str, Any]:
    kind = response.headers.get("content-type", "")
    assert response.status_code < 500, f"HTTP {response.status_code} ({kind}): {content[:200]!r}"
    assert kind.startswith("application/json"), f"not JSON ({kind}): {content[:200]!r}"
    body: dict[str, Any] = response.json()
    assert body.get("jsonrpc") == "2.0" and ("result" in body) != ("error" in body), body
    return body


@dataclass
class Load:
    """Clients sending every kind of request through both web processes until stopped."""

    bases: list[str]
    outcomes: list[Outcome] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, client: int) -> None:
        turn = client
        while not self.stopping.is_set():
            base = self.bases[turn // len(KINDS) % len(self.bases)]
            outcome = request(KINDS[turn % len(KINDS)], base)
            with self.lock:
                self.outcomes.append(outcome)
            turn += 1

    def since(self, moment: float) -> list[Outcome]:
        with self.lock:
            return [o for o in self.outcomes if o.started >= moment]

    def recovered(self, moment: float) -> bool:
        """Every kind of request succeeded through every web process since `moment`."""
        done = {(o.kind, o.base) for o in self.since(moment) if o.ok}
        return all((kind, base) in done for kind in KINDS for base in self.bases)

    def sent_between(self, start: float, end: float) -> list[Outcome]:
        """The requests sent from `start` that were answered by `end`."""
        return [o for o in self.since(start) if o.started + o.seconds <= end]


@dataclass
class Restart:
    """What the load met: when the cluster went down and came up, and what followed."""

    load: Load
    down: float
    up: float
    served: list[Outcome]  # sent from SERVED_WITHIN after PostgreSQL answered
    burst: list[Outcome]  # turns for every worker thread, sent once the web processes served


def restart_under_load(hub: Hub, cluster: PostgresCluster) -> Restart:
    """Restart the cluster while the clients send; once they are served again, send turns
    for every worker thread."""
    load = Load([hub.web_a, hub.web_b])
    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        for client in range(CLIENTS):
            pool.submit(load.run, client)
        try:
            assert eventually(lambda: load.recovered(0), timeout=30), "the load never ran"
            down = time.monotonic()
            cluster.stop()
            time.sleep(DOWN_SECONDS)  # the outage itself, not a wait for something to happen
            cluster.start()
            up = time.monotonic()
            served_since = up + SERVED_WITHIN
            eventually(lambda: load.recovered(served_since), timeout=SERVED_WITHIN + SERVED_FOR)
            served = load.sent_between(served_since, time.monotonic())
            burst = turns_for_every_worker_thread(hub)
        finally:
            load.stopping.set()  # each client ends once its request is answered
    return Restart(load, down, up, served, burst)


def turns_for_every_worker_thread(hub: Hub) -> list[Outcome]:
    """Blocking sends of one-second worker turns, two for every worker thread at once: a
    worker holds no more than a turn a thread and one waiting for each (its prefetch), so
    every worker runs some of them."""
    count = 2 * THREADS_PER_WORKER * len(hub.workers)
    bases = [hub.web_a, hub.web_b]
    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(lambda n: request("worker", bases[n % 2], "1"), range(count)))


def workers_that_ran(hub: Hub, outcomes: list[Outcome]) -> set[str]:
    task_ids = [o.body["result"]["task"]["id"] for o in outcomes if o.ok and o.body]
    runners = {hub.runner_of(task_id) for task_id in task_ids}
    return {p.name for p in hub.workers if any(r.endswith(f":{p.pid}") for r in runners)}


def half_written_tasks(hub: Hub) -> list[tuple[Any, ...]]:
    """Tasks without their first message or first event, or whose events are not exactly
    1..last_sequence."""
    return hub.query(
        """
        SELECT t.id, t.state, t.last_sequence FROM tasks_task t
        WHERE NOT EXISTS (SELECT 1 FROM tasks_message m
                          WHERE m.task_id = t.id AND m.position = 0 AND m.role = 'user')
           OR NOT EXISTS (SELECT 1 FROM tasks_taskevent e
                          WHERE e.task_id = t.id AND e.sequence = 1 AND e.kind = 'task')
           OR t.last_sequence <> (SELECT count(*) FROM tasks_taskevent e WHERE e.task_id = t.id)
           OR t.last_sequence <> (SELECT coalesce(max(sequence), 0) FROM tasks_taskevent e
                                  WHERE e.task_id = t.id)
        """
    )


def open_tasks(hub: Hub) -> list[tuple[Any, ...]]:
    return hub.query(
        "SELECT id, state, runner FROM tasks_task WHERE state IN ('submitted', 'working')"
    )


@pytest.fixture(scope="module")
def restart(hub: Hub, cluster: PostgresCluster) -> Restart:
    """One restart under load; each test below reads what it did."""
    return restart_under_load(hub, cluster)


def test_requests_met_by_the_restart_end_quickly_with_a_json_rpc_error(restart: Restart) -> None:
    """Requests sent while PostgreSQL restarts get a JSON-RPC answer (never an HTML page or a
    cut connection) within ANSWER_WITHIN seconds (never a hang to the blocking timeout), and
    any error says that the database is away."""
    outcomes = restart.load.outcomes + restart.burst
    assert [o for o in outcomes if o.problem] == []
    assert [o for o in outcomes if o.seconds > ANSWER_WITHIN] == []
    # In flight at some moment of the outage: sent during it, or before it and answered
    # after it went down (each client may be waiting on a request it sent before).
    met = [o for o in restart.load.outcomes
           if o.started < restart.up and o.started + o.seconds > restart.down]  # fmt: skip
    assert met, "no request was in flight while the database was away"
    # A turn whose write is retried past the restart succeeds; one that fails says why.
    errors = [o.body["error"]["message"] for o in met if o.body and "error" in o.body]
    assert all("database is unavailable" in message for message in errors), errors


def test_no_task_is_left_half_written_or_open(hub: Hub, restart: Restart) -> None:
    """Every task that exists has its first message and its first event, and its events are
    1..last_sequence; every one ends (turns whose job could not claim them are run later)."""
    assert half_written_tasks(hub) == []
    assert eventually(lambda: open_tasks(hub) == [], timeout=15), open_tasks(hub)


def test_a_turn_the_restart_failed_says_the_database_was_unavailable(
    hub: Hub, restart: Restart
) -> None:
    """A running turn rides out the blip (its writes are retried) or fails saying the database
    was unavailable; none is failed by recovery as if its process had died."""
    assert eventually(lambda: open_tasks(hub) == [], timeout=15), open_tasks(hub)
    failed = hub.query("SELECT id, last_error FROM tasks_task WHERE state = 'failed'")
    assert [row for row in failed if "database was unavailable" not in row[1]] == []


def test_every_web_process_and_worker_serves_again_within_a_second(
    hub: Hub, restart: Restart
) -> None:
    """Once PostgreSQL answers again, every request sent more than SERVED_WITHIN seconds later
    succeeds, of every kind and through every web process, and every worker runs turns
    again."""
    assert [o for o in restart.served if not o.ok] == []
    kinds = {(o.kind, o.base) for o in restart.served}
    assert kinds == {(kind, base) for kind in KINDS for base in restart.load.bases}
    assert [o for o in restart.burst if not o.ok or o.seconds > TURNS_WITHIN] == []
    assert workers_that_ran(hub, restart.burst) == {p.name for p in hub.workers}


def test_each_process_logs_the_outage_once_as_it_begins_and_once_as_it_ends(
    hub: Hub, restart: Restart
) -> None:
    """However many requests met the restart, a process that met it logs it as one outage:
    one line as it begins, one as it ends (with how long it lasted). Some web process met it
    (a half-second blip can fall between one process's statements: its pool replaces the
    connections the restart closed without a failed attempt, so it has nothing to log)."""
    logged = []
    for process in hub.processes:
        lines = process.log.read_text(errors="replace").splitlines()
        began = [line for line in lines if " The database is unavailable " in line]
        ended = [line for line in lines if " The database answers again after " in line]
        assert len(began) == len(ended) <= 1, (process.name, began, ended)
        if began:
            logged.append(process.name)
    assert [name for name in logged if name.startswith("web")], logged
