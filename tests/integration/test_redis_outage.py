"""Redis drops every connection and loses its data while streams are open and turns wait in
the Celery queue (issue #16).

The hub here has a redis-server of its own, which the tests kill and start again empty (the
session's hub and the machine's Redis are not touched), and a PostgreSQL database of its own.
Each test leaves the hub working for the next: that is guarantee (d).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from a2ahub.celery import app
from tests.factories.envelopes import NON_BLOCKING, rpc_body
from tests.factories.messages import wire_message
from tests.factories.versions import V1
from tests.helpers import eventually
from tests.integration.servers import RedisServer
from tests.integration.stack import (
    THREADS_PER_WORKER,
    Hub,
    Process,
    create_database,
    drop_database,
    postgres_url,
    running_hub,
)
from tests.streaming.sse import Frame, Stream, open_stream, payload

pytestmark = pytest.mark.integration

# Guarantee (d): how soon after Redis is back the hub must be whole again, after an outage
# long enough for reconnect backoffs to have grown (Celery's own waits 2 s, then 4, 6, ...).
BACK_WITHIN = 5.0
OUTAGE_SECONDS = 13.0
# Longer than any pause between two events of a working slow turn (one a second): a stream
# quiet for this long has stalled.
STALL_SECONDS = 8.0
# Each outage's turns are short; with recovery (TASK_STALE_SECONDS, 3) and a busy machine.
SETTLE_SECONDS = 30.0
# A send answered later than this during the outage counts as hanging.
ANSWER_WITHIN = 10.0


@pytest.fixture(scope="module")
def hub(private_redis: RedisServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """The whole hub on the private Redis. (Named `hub`, as the session's is: a failing
    test's report then carries these processes' logs.)"""
    name = f"a2ahub_redis_{uuid.uuid4().hex[:10]}"
    create_database(name)
    try:
        root = tmp_path_factory.mktemp("redis-outage")
        with running_hub(postgres_url(name), private_redis.url, root) as running:
            yield running
    finally:
        drop_database(name)


@dataclass
class Sent:
    """One send: its message id (to find what it stored), its answer, how long that took."""

    message_id: str
    response: httpx.Response
    seconds: float

    @property
    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = self.response.json()
        return body

    @property
    def task_id(self) -> str:
        return str(self.body["result"]["task"]["id"])


def send(base: str, slug: str, text: str, blocking: bool = True, timeout: float = 45) -> Sent:
    message = wire_message(V1, text)
    params: dict[str, Any] = {"message": message}
    if not blocking:
        params["configuration"] = NON_BLOCKING[V1]
    started = time.monotonic()
    with httpx.Client(base_url=base, timeout=timeout) as http:
        try:
            response = http.post(
                f"/agents/{slug}/jsonrpc/",
                json=rpc_body(V1, "send", params),
                headers={"A2A-Version": V1},
            )
        except httpx.TimeoutException:
            pytest.fail(f"a send to {slug} through {base} had no answer within {timeout}s")
    return Sent(message["messageId"], response, time.monotonic() - started)


def state(hub: Hub, task_id: str) -> str:
    rows = hub.query("SELECT state FROM tasks_task WHERE id = %s", (task_id,))
    return str(rows[0][0]) if rows else ""


def all_completed(hub: Hub, task_ids: list[str]) -> bool:
    rows = hub.query(
        "SELECT count(*) FROM tasks_task WHERE id = ANY(%s::uuid[]) AND state = 'completed'",
        (task_ids,),
    )
    return int(rows[0][0]) == len(task_ids)


def waiting_in_broker(redis: RedisServer, task_ids: list[str]) -> int:
    """How many of these tasks' jobs wait in the Celery queue, in Redis."""
    client = redis.client()
    try:
        jobs = client.lrange("celery", 0, -1)
    finally:
        client.close()
    return sum(1 for job in jobs if any(task_id.encode() in job for task_id in task_ids))


def ends_task(frame: Frame) -> bool:
    status = payload(frame.result, V1).get("status", {}) if "result" in frame.body else {}
    return status.get("state") in {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED"}


def read_until_closed(stream: Stream) -> list[Frame]:
    """Every frame until the hub closes the stream; a stream that goes quiet instead fails
    the test (a client could not tell it from a slow agent)."""
    try:
        return stream.rest()
    except httpx.ReadTimeout:
        pytest.fail(f"the stream stalled: nothing for {STALL_SECONDS}s, and it was not closed")


def test_a_stream_in_flight_finishes_or_resumes_with_every_event_exactly_once(
    hub: Hub, private_redis: RedisServer
) -> None:
    """(a) A stream in flight when Redis drops its connections and its data either finishes,
    or is closed and resumed with SubscribeToTask and Last-Event-ID; either way the client
    has seen every stored event once: ids 1..N, no gap, no duplicate, the task completed.
    Redis comes back only once the turn has ended, so its last events, the final one too,
    were published to nobody."""
    with httpx.Client(base_url=hub.web_a, timeout=STALL_SECONDS) as http:
        params = {"message": wire_message(V1, "2")}
        with open_stream(http, "slow", V1, "stream", params) as stream:
            seen = stream.take(2)  # the task, working
            task_id = payload(seen[0].result, V1)["id"]
            private_redis.stop()
            assert eventually(lambda: state(hub, task_id) == "completed", timeout=20)
            private_redis.start()
            seen += read_until_closed(stream)
        events = [f for f in seen if f.id is not None]
        if not ends_task(events[-1]):
            resume = {"id": task_id}
            last = events[-1].id
            with open_stream(http, "slow", V1, "subscribe", resume, last_event_id=last) as again:
                snapshot, *rest = read_until_closed(again)
            assert snapshot.id is None and "task" in snapshot.result
            events += rest

    [(last_sequence, final_state)] = hub.query(
        "SELECT last_sequence, state FROM tasks_task WHERE id = %s", (task_id,)
    )
    assert [f.id for f in events] == list(range(1, last_sequence + 1))
    assert final_state == "completed" and ends_task(events[-1])


def test_turns_queued_when_redis_loses_its_data_still_complete(
    hub: Hub, private_redis: RedisServer
) -> None:
    """(b) Turns stored and queued in the Celery broker when Redis loses its data still
    complete: recovery finds the turns whose jobs were lost and queues them again."""
    # Three turns for every worker thread: two rounds wait, some of them in Redis's list.
    count = 3 * THREADS_PER_WORKER * len(hub.workers)
    through = bases(hub)
    with ThreadPoolExecutor(max_workers=8) as pool:
        sends = list(
            pool.map(lambda n: send(through[n % 2], "slow", "2", blocking=False), range(count))
        )
    task_ids = [sent.task_id for sent in sends]
    assert eventually(lambda: waiting_in_broker(private_redis, task_ids) > 0, timeout=10)

    private_redis.restart()  # and the jobs that waited there are gone

    assert eventually(lambda: all_completed(hub, task_ids), timeout=SETTLE_SECONDS), [
        state(hub, task_id) for task_id in task_ids
    ]


def sends_of_every_kind(hub: Hub) -> list[Sent]:
    """Blocking and non-blocking, worker and inline, through both web processes, at once."""
    kinds = [("slow", "0.5", True), ("slow", "0.5", False), ("echo", "hi", True),
             ("echo", "hi", False)]  # fmt: skip
    calls = [(base, *kind) for base in bases(hub) for kind in kinds]
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(lambda c: send(c[0], c[1], c[2], c[3], ANSWER_WITHIN), calls))


@dataclass
class Opened:
    """A stream opened while Redis is away: its message id and the frames read so far."""

    message_id: str
    stream: Stream
    frames: list[Frame]
    seconds: float


def open_stream_now(streams: ExitStack, base: str, slug: str, text: str) -> Opened:
    """Open a stream (closed with `streams`) and read its first frame."""
    http = streams.enter_context(httpx.Client(base_url=base, timeout=STALL_SECONDS))
    message = wire_message(V1, text)
    started = time.monotonic()
    stream = streams.enter_context(open_stream(http, slug, V1, "stream", {"message": message}))
    first = stream.take(1)
    return Opened(message["messageId"], stream, first, time.monotonic() - started)


def message_rows(hub: Hub, message_id: str) -> list[tuple[Any, ...]]:
    return hub.query("SELECT task_id FROM tasks_message WHERE message_id = %s", (message_id,))


def assert_stored_whole_or_not_at_all(hub: Hub, sent: Sent) -> str | None:
    """The task a send answered with is stored with its first message and event; a refused
    send stored nothing. The task's id, when there is one."""
    assert sent.response.headers["content-type"].startswith("application/json"), sent.response
    body = sent.body
    assert body.get("jsonrpc") == "2.0" and ("result" in body) != ("error" in body), body
    if "error" in body:
        assert message_rows(hub, sent.message_id) == [], f"a refused send stored: {body}"
        return None
    task_id = sent.task_id
    assert message_rows(hub, sent.message_id) == [(uuid.UUID(task_id),)], body
    first = hub.query(
        "SELECT kind FROM tasks_taskevent WHERE task_id = %s AND sequence = 1", (task_id,)
    )
    assert first == [("task",)], f"task {task_id} has no first event"
    return task_id


def assert_streamed_whole_or_not_at_all(hub: Hub, opened: Opened) -> None:
    """A stream refused stored nothing; a stream that began ran to its task's end, every
    stored event once."""
    first = opened.frames[0]
    if "error" in first.body:
        assert message_rows(hub, opened.message_id) == [], f"a refused stream stored: {first}"
        return
    task_id = payload(first.result, V1)["id"]
    [(last_sequence, final_state)] = hub.query(
        "SELECT last_sequence, state FROM tasks_task WHERE id = %s", (task_id,)
    )
    assert [f.id for f in opened.frames] == list(range(1, last_sequence + 1)), opened.frames
    assert final_state == "completed"


def test_sends_during_the_outage_answer_with_the_stored_task_or_store_nothing(
    hub: Hub, private_redis: RedisServer
) -> None:
    """(c) While Redis is away, a send answers with the task it stored (whose turn then
    completes once Redis is back) or refuses and stores nothing; never an HTML error page,
    never a hang. A stream opened meanwhile is refused, or runs to its end once Redis is
    back (a worker-mode one hears the worker through the subscription made again)."""
    private_redis.stop()
    with ExitStack() as streams:
        try:
            opened = [
                open_stream_now(streams, hub.web_a, "slow", "0.5"),
                open_stream_now(streams, hub.web_b, "echo", "hi"),
            ]
            sends = sends_of_every_kind(hub)
        finally:
            private_redis.start()
        for each in opened:
            each.frames += read_until_closed(each.stream)

    for sent in sends:
        assert sent.seconds < ANSWER_WITHIN, f"answered after {sent.seconds:.1f}s: {sent.body}"
    for each in opened:
        assert each.seconds < ANSWER_WITHIN, f"first frame after {each.seconds:.1f}s"
        assert_streamed_whole_or_not_at_all(hub, each)
    stored = [t for t in (assert_stored_whole_or_not_at_all(hub, s) for s in sends) if t]
    assert eventually(lambda: all_completed(hub, stored), timeout=SETTLE_SECONDS), [
        state(hub, task_id) for task_id in stored
    ]


def blocking_worker_send_completes(base: str, timeout: float) -> bool:
    body = send(base, "slow", "0", timeout=timeout).body
    return bool(body.get("result", {}).get("task", {}).get("status", {}).get("state")
                == "TASK_STATE_COMPLETED")  # fmt: skip


def stream_completes(base: str, slug: str, text: str, timeout: float) -> bool:
    with httpx.Client(base_url=base, timeout=timeout) as http:
        params = {"message": wire_message(V1, text)}
        with open_stream(http, slug, V1, "stream", params) as stream:
            frames = stream.rest()
    ids = [f.id for f in frames]
    return ids == list(range(1, len(frames) + 1)) and ends_task(frames[-1])


def works_through(base: str, deadline: float) -> bool:
    """A blocking worker send, a worker-mode stream and an inline one, each tried again
    until it works or the deadline passes."""
    checks = [
        lambda left: blocking_worker_send_completes(base, left),
        lambda left: stream_completes(base, "slow", "0", left),
        lambda left: stream_completes(base, "echo", "hi", left),
    ]

    def passes(check: Any) -> bool:
        left = deadline - time.monotonic()
        try:
            return left > 0 and bool(check(left))
        except (httpx.HTTPError, AssertionError):
            return False  # not yet: an error or a timeout is tried again

    return all(
        eventually(lambda c=check: passes(c), timeout=max(0, deadline - time.monotonic()))
        for check in checks
    )


def test_the_hub_is_whole_again_within_seconds_of_redis_coming_back(
    hub: Hub, private_redis: RedisServer
) -> None:
    """(d) Once Redis is back, empty, the hub works again within BACK_WITHIN seconds
    (not after a reconnect backoff that grew while Redis was away): through each web
    process a blocking send to a worker-mode agent completes, streams of a worker-mode
    and an inline agent run to their end, and beat's recovery job runs again."""
    private_redis.stop()
    time.sleep(OUTAGE_SECONDS)  # the outage itself, not a wait for something to happen
    recoveries = recoveries_run(hub)
    private_redis.start()
    back = time.monotonic()
    deadline = back + BACK_WITHIN

    with ThreadPoolExecutor(max_workers=2) as pool:
        whole = list(pool.map(lambda base: works_through(base, deadline), bases(hub)))
    recovering = eventually(lambda: recoveries_run(hub) > recoveries, deadline - time.monotonic())

    took = time.monotonic() - back
    assert whole == [True, True], f"not whole {BACK_WITHIN}s after Redis came back"
    assert recovering, f"no recovery job ran within {BACK_WITHIN}s of Redis coming back"
    assert took < BACK_WITHIN


def test_a_redis_outage_is_one_log_line_when_it_begins_and_one_when_it_ends(
    hub: Hub, private_redis: RedisServer
) -> None:
    """Each hub process logs a Redis outage once as it begins and once as it ends, with how
    long it lasted, however many publishes, subscriptions, heartbeats, reconnects and
    periodic jobs failed meanwhile (each several times a second); none logs an error or a
    traceback for it."""
    # Every process has met Redis again since the outages of the tests before (one that uses
    # it only for its heartbeat, the gRPC process, may not have yet), so each outage line
    # written from here on is this outage's.
    assert eventually(lambda: all(over_for(p) for p in hub.processes if p.alive()),
                      timeout=BACK_WITHIN)  # fmt: skip
    before = {p.name: p.log.stat().st_size for p in hub.processes if p.alive()}
    private_redis.stop()
    time.sleep(LOGGED_OUTAGE_SECONDS)  # the outage itself, not a wait for something to happen
    private_redis.start()

    address = f"Redis at 127.0.0.1:{private_redis.port}"
    ended = {name: ([f"{address} is unavailable"], [f"{address} answers again after"])
             for name in before}  # fmt: skip
    assert eventually(lambda: outages_in(hub, before) == ended, timeout=BACK_WITHIN), outages_in(
        hub, before
    )
    for process in [p for p in hub.processes if p.name in before]:
        written = logged_since(process, before[process.name])
        assert [line for line in written if " ERROR " in line or "Traceback" in line] == [], (
            process.name
        )


# Long enough for every process to have met it many times (heartbeats every half second).
LOGGED_OUTAGE_SECONDS = 3.0


def logged_since(process: Process, offset: int) -> list[str]:
    with process.log.open("rb") as log:
        log.seek(offset)
        return log.read().decode(errors="replace").splitlines()


def over_for(process: Process) -> bool:
    """Whether the last outage the process logged (if any) has ended."""
    lines = [line for line in logged_since(process, 0) if " a2ahub.outages " in line]
    return not lines or " answers again " in lines[-1]


def outages_in(hub: Hub, since: dict[str, int]) -> dict[str, tuple[list[str], list[str]]]:
    """Each process's outage lines written since its offset in `since` (all processes alive
    when `since` was taken), as (began, ended) with the service and the first words."""
    found = {}
    for process in hub.processes:
        if process.name not in since:
            continue
        lines = [line.split(" a2ahub.outages ", 1)[1]
                 for line in logged_since(process, since[process.name])
                 if " a2ahub.outages " in line]  # fmt: skip
        began = [line.split(" (", 1)[0] for line in lines if " is unavailable " in line]
        ended = [
            line.split(" after ", 1)[0] + " after" for line in lines if " answers again " in line
        ]
        found[process.name] = (began, ended)
    return found


def recoveries_run(hub: Hub) -> int:
    """How many recovery jobs beat has run (one every heartbeat)."""
    return sum(
        1
        for process in hub.processes
        if process.name == "beat"
        for line in process.log.read_text(errors="replace").splitlines()
        if "periodic job tasks.recover_stale_tasks ran in beat" in line
    )


def bases(hub: Hub) -> list[str]:
    return [hub.web_a, hub.web_b]


def test_a_worker_holding_a_job_for_later_lives_through_redis_going_away(
    hub: Hub, private_redis: RedisServer
) -> None:
    """A worker that holds a job waiting for its countdown (kombu keeps it unacknowledged)
    while Redis drops its connection stays up, and takes jobs again once Redis is back: it
    does not end with an unrecoverable error."""
    job_id = str(uuid.uuid4())
    with app.connection_for_write(private_redis.url) as connection:
        app.send_task("registry.check_registrations", task_id=job_id, countdown=600,
                      connection=connection)  # fmt: skip
    received = f"[{job_id}] received"
    assert eventually(lambda: any(received in read(w) for w in hub.workers), timeout=10)
    holder = next(w for w in hub.workers if received in read(w))

    private_redis.stop()
    time.sleep(1.0)  # the outage itself, not a wait for something to happen
    private_redis.start()

    reconnected = lambda: "Connected to" in read(holder).rsplit(received, 1)[1]  # noqa: E731
    assert eventually(lambda: reconnected() or not holder.alive(), timeout=BACK_WITHIN)
    assert holder.alive(), read(holder)[-3000:]
    assert "Unrecoverable error" not in read(holder)
    works = [works_through(base, time.monotonic() + BACK_WITHIN) for base in bases(hub)]
    assert works == [True, True]


def read(process: Process) -> str:
    return process.log.read_text(errors="replace")
