"""PostgreSQL stops for a while with streams open (issue #30): every stream ends.

The hub runs on a PostgreSQL cluster and a redis-server of its own (as in
`test_postgres_restart.py`). Streams of inline turns (the `writer` agent, slowed down) and of
worker turns (`slow`) are open when the cluster stops, and clients keep opening short
streams (`echo`) through the outage. The outage is longer than a turn's write retries, so
the turns it meets end: an inline turn's stream ends with the failure at once, in the
outage; a worker turn's, as soon as its worker writes the failure after the database is
back.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.factories.envelopes import rpc_body
from tests.factories.messages import wire_message
from tests.factories.versions import V1
from tests.helpers import eventually
from tests.integration.servers import (
    PostgresCluster,
    RedisServer,
)
from tests.integration.stack import Hub, create_database, running_hub

pytestmark = pytest.mark.integration

# How long the database is away: the drill, well past a turn's write retries (5 s),
# so the turns it meets end while it lasts.
DOWN_SECONDS = 20.0
# A stream ends within this of its task's final state being written (the bound).
ENDS_WITHIN = 5.0
# No task is left open this long after the database is back (the bound).
CLOSED_WITHIN = 30.0
# Each writer stream's turn writes a chunk a second: it is writing when the outage starts.
WRITER_DELAY = 1.0
# Worker turns longer than the outage, reporting progress every second.
SLOW_SECONDS = "22"
FINAL_STATES = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED"}


@pytest.fixture(scope="module")
def hub(
    cluster: PostgresCluster, private_redis: RedisServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Hub]:
    """The whole hub on the private cluster and a private Redis (named `hub`, as the
    session's is: a failing test's report then carries these processes' logs)."""
    create_database("hub", cluster.url())
    root = tmp_path_factory.mktemp("postgres-stop")
    with running_hub(cluster.url("hub"), private_redis.url, root) as running:
        running.query(
            "UPDATE agents_agent SET executor_settings = %s WHERE slug = 'writer' RETURNING slug",
            (json.dumps({"delay": WRITER_DELAY}),),
        )
        yield running


@dataclass
class Stream:
    """One client's stream: every frame's JSON-RPC body, and when the stream ended."""

    slug: str
    base: str
    text: str
    frames: list[dict[str, Any]] = field(default_factory=list)
    opened: threading.Event = field(default_factory=threading.Event)  # the first frame came
    ended: float = 0.0  # time.time() when the stream ended
    problem: str = ""  # anything but a stream that ends: an HTTP error, a cut, a hang

    @property
    def task_id(self) -> str:
        for frame in self.frames:
            result = frame.get("result", {})
            if "task" in result:
                return str(result["task"]["id"])
            for kind in ("statusUpdate", "artifactUpdate"):
                if kind in result:
                    return str(result[kind]["taskId"])
        return ""

    @property
    def last_state(self) -> str:
        """The state the last frame gives the task ("" for an error or no frame)."""
        result = self.frames[-1].get("result", {}) if self.frames else {}
        event = result.get("statusUpdate") or result.get("task") or {}
        return str(event.get("status", {}).get("state", ""))

    def run(self) -> None:
        body = rpc_body(V1, "stream", {"message": wire_message(V1, self.text)})
        try:
            # No read timeout: a stream that never ends shows as a thread still running.
            timeout = httpx.Timeout(10.0, read=None)
            with (
                httpx.Client(base_url=self.base, timeout=timeout) as http,
                http.stream(
                    "POST", f"/agents/{self.slug}/jsonrpc/", json=body,
                    headers={"A2A-Version": V1},
                ) as response,
            ):  # fmt: skip
                if not response.headers.get("content-type", "").startswith("text/event-stream"):
                    self.frames.append(json.loads(response.read()))
                for line in response.iter_lines():
                    if line.startswith("data:"):
                        self.frames.append(json.loads(line[5:]))
                        self.opened.set()
        except (httpx.HTTPError, ValueError) as exc:
            self.problem = f"{type(exc).__name__}: {exc}"
        finally:
            self.ended = time.time()
            self.opened.set()


@dataclass
class Stop:
    """What the streams met: when the cluster went down and came up."""

    long: list[Stream]  # open when the cluster stopped
    short: list[Stream]  # opened one after another through the outage
    down: float
    up: float
    unfinished: list[Stream]  # still open well after the database came back


def stop_with_streams_open(hub: Hub, cluster: PostgresCluster) -> Stop:
    bases = [hub.web_a, hub.web_b]
    long = [Stream("writer", base, "the sea") for base in bases]
    long += [Stream("slow", base, SLOW_SECONDS) for base in bases]
    short: list[Stream] = []
    stopping = threading.Event()

    def short_streams(base: str) -> None:
        while not stopping.is_set():
            stream = Stream("echo", base, "hi")
            short.append(stream)
            stream.run()

    # Daemon threads: a stream that never ends must fail the test, not hang it.
    threads = [threading.Thread(target=stream.run, daemon=True) for stream in long]
    for thread in threads:
        thread.start()
    for stream in long:
        assert stream.opened.wait(30), f"the {stream.slug} stream never opened"
    # Each turn is under way (its first write is in): the outage meets it mid-turn.
    time.sleep(WRITER_DELAY)
    loads = [threading.Thread(target=short_streams, args=(b,), daemon=True) for b in bases]
    for thread in loads:
        thread.start()
    down = time.time()
    cluster.stop()
    time.sleep(DOWN_SECONDS)  # the outage itself, not a wait for something to happen
    cluster.start()
    up = time.time()
    stopping.set()
    deadline = time.monotonic() + CLOSED_WITHIN
    for thread in [*threads, *loads]:
        thread.join(max(0.1, deadline - time.monotonic()))
    unfinished = [s for s in [*long, *short] if not s.ended]
    return Stop(long, short, down, up, unfinished)


@pytest.fixture(scope="module")
def stop(hub: Hub, cluster: PostgresCluster) -> Stop:
    """One outage with streams open; each test below reads what it did."""
    return stop_with_streams_open(hub, cluster)


def written_at(hub: Hub, task_id: str) -> tuple[str, float]:
    """The task's state and when its status was last written (seconds since the epoch)."""
    rows = hub.query(
        "SELECT state, extract(epoch FROM status_timestamp) FROM tasks_task WHERE id = %s",
        (task_id,),
    )
    return (str(rows[0][0]), float(rows[0][1])) if rows else ("", 0.0)


def final_write(hub: Hub, task_id: str) -> tuple[str, float]:
    """`written_at` once the task is no longer working (an inline turn's stream ends with
    its failure before the database is back to store it)."""
    deadline = time.monotonic() + CLOSED_WITHIN
    state, written = written_at(hub, task_id)
    while state in ("", "working") and time.monotonic() < deadline:
        time.sleep(0.2)
        state, written = written_at(hub, task_id)
    return state, written


def open_tasks(hub: Hub) -> list[tuple[Any, ...]]:
    return hub.query(
        "SELECT id, state, runner FROM tasks_task "
        "WHERE state IN ('submitted', 'working', 'input-required', 'auth-required')"
    )


def test_every_stream_ends_with_its_tasks_final_state(hub: Hub, stop: Stop) -> None:
    """Every stream ends: those open when the database stopped with their task's final
    state, each within ENDS_WITHIN of it being written (an inline turn's, with its failure
    at once, before the database was back); those opened in the outage with a JSON-RPC
    error or a final state. None is cut or left sending keep-alives."""
    assert stop.unfinished == []
    assert [s for s in [*stop.long, *stop.short] if s.problem] == []
    for stream in stop.long:
        assert stream.last_state in FINAL_STATES, (stream.slug, stream.frames[-1:])
        state, stamped = final_write(hub, stream.task_id)
        assert stream.last_state == f"TASK_STATE_{state.upper()}", (stream.slug, state)
        # A state stamped while the database was away (a turn that gave up on its write) is
        # written once it is back: no earlier than `up`.
        written = max(stamped, stop.up)
        assert stream.ended <= written + ENDS_WITHIN, (stream.slug, stream.ended - written)
    inline = [s for s in stop.long if s.slug == "writer"]
    assert all(s.ended < stop.up for s in inline), [s.ended - stop.up for s in inline]
    for stream in stop.short:
        assert stream.frames, "a stream without a frame"
        last = stream.frames[-1]
        assert "error" in last or stream.last_state in FINAL_STATES, last


def test_turns_the_outage_ended_say_why(hub: Hub, stop: Stop) -> None:
    """The inline turns the outage met failed because the database was unavailable, and
    say so, in the stream and in the task as stored (as does any worker turn it ended; one
    whose write waited out the outage in its connection pool goes on and completes)."""
    failed = [s for s in stop.long if s.last_state == "TASK_STATE_FAILED"]
    assert {s.slug for s in failed} >= {"writer"}, [(s.slug, s.last_state) for s in stop.long]
    for stream in failed:
        message = stream.frames[-1]["result"]["statusUpdate"]["status"]["message"]
        assert "database" in message["parts"][0]["text"], message
        rows = hub.query("SELECT status_message FROM tasks_task WHERE id = %s", (stream.task_id,))
        assert "database" in json.dumps(rows[0][0]), rows


def test_no_task_is_left_open(hub: Hub, stop: Stop) -> None:
    """Every task ends within CLOSED_WITHIN of the database coming back."""
    remaining = max(0.1, stop.up + CLOSED_WITHIN - time.time())
    assert eventually(lambda: open_tasks(hub) == [], timeout=remaining), open_tasks(hub)
