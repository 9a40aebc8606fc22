"""`runhub` keeps what it starts running, and a dead process's turns are recovered in seconds.

One `manage.py runhub --workers 2` for the module, as an operator runs it: daphne, rungrpc,
two Celery workers and beat, on a Redis of the module's own (stopped and started again empty)
and a database of its own, with the production timings (TASK_HEARTBEAT_SECONDS 2: a process silent
for three beats is gone). The tests kill its children with SIGKILL, as a crash would, and find
them, as an operator would, in the hub's own process list.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import psycopg
import pytest

from tests.factories.envelopes import NON_BLOCKING, rpc_body
from tests.factories.messages import wire_message
from tests.factories.versions import V1
from tests.helpers import eventually, free_port, wait_for_http
from tests.integration.servers import RedisServer
from tests.integration.stack import (
    Hub,
    create_database,
    drop_database,
    hub_env,
    postgres_url,
    prepare_database,
)
from tests.streaming.sse import open_stream, payload

# The first test also waits for the module's migrate, seed and runhub start.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

BEAT = 2.0  # TASK_HEARTBEAT_SECONDS's default
WORKERS = 2
THREADS = 2  # each worker's; so two turns run and two more wait in its prefetch
# The bound for recovery ("within ~10 s"), with room for a busy machine.
RECOVERED_WITHIN = 15.0
# A child's restart: 1 s of backoff, then a Django process's start on a busy machine.
RESTARTED_WITHIN = 30.0
# The inline turn the web process dies in: six chunks this far apart.
WRITER_DELAY = 3.0


@pytest.fixture(scope="module")
def hub(private_redis: RedisServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """runhub on the private Redis and a database of its own. (Named `hub`, as the session's
    is: a failing test's report then carries runhub's log.)"""
    name = f"a2ahub_runhub_{uuid.uuid4().hex[:10]}"
    root = tmp_path_factory.mktemp("runhub")
    env = hub_env(postgres_url(name), private_redis.url, root / "data")
    for production_timing in ("TASK_HEARTBEAT_SECONDS", "TASK_STALE_SECONDS"):
        env.pop(production_timing)
    env["CELERY_CONCURRENCY"] = str(THREADS)
    create_database(name)
    running = Hub(env, env["DATABASE_URL"], root)
    try:
        prepare_database(env)
        execute(running, "UPDATE agents_agent SET executor_settings = %s WHERE slug = 'writer'",
                (json.dumps({"delay": WRITER_DELAY}),))  # fmt: skip
        port = free_port()
        command = [sys.executable, "manage.py", "runhub", "--port", str(port)]
        runhub = running.spawn("runhub", [*command, "--workers", str(WORKERS)])
        running.web_a = f"http://127.0.0.1:{port}"
        wait_for_http(f"{running.web_a}/healthz", runhub.popen, timeout=60)
        assert eventually(lambda: len(listed(private_redis, "worker")) == WORKERS, timeout=60)
        assert eventually(lambda: len(listed(private_redis, "beat")) == 1, timeout=30)
        # Distributed, runhub serves gRPC from a process of its own, listed as alive.
        assert eventually(lambda: len(listed(private_redis, "grpc")) == 1, timeout=30)
        yield running
    finally:
        running.stop()
        drop_database(name)


def execute(hub: Hub, sql: str, params: tuple[object, ...]) -> None:
    url = hub.database_url.replace("postgres://", "postgresql://", 1)
    with psycopg.connect(url, connect_timeout=10, autocommit=True) as connection:
        connection.execute(sql, params)


def listed(redis: RedisServer, kind: str) -> list[int]:
    """The pids of the hub's live processes of a kind, from its own process list (a process
    is listed until it missed three beats)."""
    client = redis.client()
    try:
        ids = client.zrangebyscore("a2ahub:processes", time.time() - 3 * BEAT, "+inf")
    finally:
        client.close()
    names = [i.decode() if isinstance(i, bytes) else str(i) for i in ids]
    return [int(name.rsplit(":", 1)[1]) for name in names if name.startswith(f"{kind}:")]


def held_tokens(redis: RedisServer, worker_pid: int) -> list[str]:
    """The turns (tokens) a worker holds, as its last beat said."""
    client = redis.client()
    try:
        [key] = client.keys(f"a2ahub:held:worker:*:{worker_pid}")
        jobs = json.loads(client.get(key) or b"[]")
    finally:
        client.close()
    return [args[1] for name, args in jobs if name == "tasks.run_task"]


def send(hub: Hub, slug: str, text: str) -> str:
    """A non-blocking send; the id of the task it stored."""
    params: dict[str, Any] = {"message": wire_message(V1, text), "configuration": NON_BLOCKING[V1]}
    response = httpx.post(
        f"{hub.web_a}/agents/{slug}/jsonrpc/", json=rpc_body(V1, "send", params),
        headers={"A2A-Version": V1}, timeout=30,
    )  # fmt: skip
    return str(response.json()["result"]["task"]["id"])


def cancel(hub: Hub, task_ids: list[str]) -> None:
    """End turns a test leaves running, so runhub stops at once after the module."""
    for task_id in task_ids:
        httpx.post(
            f"{hub.web_a}/agents/slow/jsonrpc/", json=rpc_body(V1, "cancel", {"id": task_id}),
            headers={"A2A-Version": V1}, timeout=30,
        )  # fmt: skip


def row(hub: Hub, task_id: str) -> tuple[str, str]:
    [(state, runner)] = hub.query("SELECT state, runner FROM tasks_task WHERE id = %s", (task_id,))
    return str(state), str(runner or "")


def queued(hub: Hub, task_id: str) -> bool:
    return row(hub, task_id)[1].startswith("queued:")


def kill(pid: int) -> float:
    os.kill(pid, signal.SIGKILL)
    return time.monotonic()


def refused(path: str) -> bool:
    """Whether nothing takes connections on the Unix socket: a killed process has closed it
    only once all its threads have exited, some time after the one whose pid it was."""
    with socket.socket(socket.AF_UNIX) as probe:
        try:
            probe.connect(path)
        except (ConnectionRefusedError, FileNotFoundError):
            return True
    return False


def test_the_turns_a_killed_worker_held_are_queued_again_and_its_running_ones_failed_in_seconds(
    hub: Hub, private_redis: RedisServer
) -> None:
    """Every worker thread busy, every prefetch slot full: a worker is killed. Its running
    turns are failed within ~10 s, and the turns it had taken but not started run on the
    worker runhub starts in its place as soon as that one is up, not after
    TASK_STALE_SECONDS."""
    # Long enough that no turn ends while a busy machine is still filling the workers: the
    # test cancels them all at the end.
    turns = [send(hub, "slow", "60") for _ in range(2 * WORKERS * THREADS)]
    assert eventually(lambda: sum(queued(hub, t) for t in turns) == WORKERS * THREADS, 20)
    runners = {int(row(hub, t)[1].rsplit(":", 1)[1]) for t in turns if not queued(hub, t)}

    def victim_beside_a_full_worker() -> int | None:
        """A worker holding turns it has not started, beside one holding as many turns as it
        can. (A periodic job the beat queued may take a slot: a worker left with one would
        take a turn queued again behind its own 60 s turns, and older turns left in the queue
        would go to the new worker before the held ones.)"""
        held = {pid: len(held_tokens(private_redis, pid)) for pid in runners}
        return next((pid for pid in runners if held[pid] > THREADS
                     and all(held[o] == 2 * THREADS for o in runners - {pid})), None)  # fmt: skip

    # Waiting, not measured: each worker takes its prefetch as soon as a busy machine lets it.
    assert eventually(lambda: victim_beside_a_full_worker() is not None, timeout=30)
    victim = victim_beside_a_full_worker()
    assert victim is not None
    tokens = {row(hub, t)[1]: t for t in turns if queued(hub, t)}
    waiting = {
        tokens[token]: token for token in held_tokens(private_redis, victim) if token in tokens
    }
    running = [t for t in turns if row(hub, t)[1].endswith(f":{victim}")]
    assert len(running) == THREADS and waiting, (running, waiting)

    workers = listed(private_redis, "worker")
    killed = kill(victim)
    try:
        assert eventually(lambda: all(row(hub, t)[0] == "failed" for t in running),
                          timeout=RECOVERED_WITHIN), [row(hub, t) for t in running]  # fmt: skip
        failed_after = time.monotonic() - killed

        # No worker is idle until runhub's replacement for the victim is up (the other one
        # is as busy as the victim was); from then on the held turns are queued again at once.
        assert eventually(lambda: set(listed(private_redis, "worker")) - set(workers),
                          timeout=RESTARTED_WITHIN)  # fmt: skip
        idle = time.monotonic()
        # Running: claimed by a live worker (a claimed turn is "working" from its first write,
        # a moment later on a busy machine).
        assert eventually(lambda: all(row(hub, t)[0] == "working" and not queued(hub, t)
                                      for t in waiting),
                          timeout=RECOVERED_WITHIN), [row(hub, t) for t in waiting]  # fmt: skip
        print(f"running turns failed {failed_after:.1f} s after the kill; the held ones ran "
              f"{time.monotonic() - idle:.1f} s after a worker was free")  # fmt: skip
        assert victim not in listed(private_redis, "worker")
    finally:
        cancel(hub, turns)


def test_daphne_killed_under_runhub_is_started_again_and_beat_keeps_recovering(
    hub: Hub, private_redis: RedisServer
) -> None:
    """The web process dies with an inline turn: runhub starts it again on its port, and
    beat and the workers, still running, fail the turn that died with it within seconds."""
    [web] = listed(private_redis, "web")
    [beat] = listed(private_redis, "beat")
    with httpx.Client(base_url=hub.web_a, timeout=15) as http:
        params = {"message": wire_message(V1, "supervision")}
        with open_stream(http, "writer", V1, "stream", params) as stream:
            task_id = payload(stream.take(2)[0].result, V1)["id"]  # the task, working
            killed = kill(web)
            _, cut = stream.until_cut()
    assert cut

    assert eventually(lambda: row(hub, task_id)[0] == "failed", timeout=RECOVERED_WITHIN)
    print(f"the inline turn was failed {time.monotonic() - killed:.1f} s after the kill")
    assert eventually(lambda: answers(f"{hub.web_a}/healthz"), timeout=RESTARTED_WITHIN)
    assert listed(private_redis, "beat") == [beat]
    assert eventually(lambda: any(p != web for p in listed(private_redis, "web")), timeout=10)


def test_runhub_serves_big_bodies_from_its_bulk_process_and_starts_it_again_when_it_dies(
    hub: Hub, private_redis: RedisServer
) -> None:
    """runhub starts the bulk process beside daphne (`protocol.bulk`). A send with a body
    past A2A_THREAD_BODY_BYTES completes, whether the bulk process serves it or, killed, the
    web process does meanwhile; runhub starts the bulk process again."""
    assert eventually(lambda: len(listed(private_redis, "bulk")) == 1, timeout=RESTARTED_WITHIN)
    [bulk] = listed(private_redis, "bulk")
    big = "runhub bulk " * 30_000  # 330 kB

    def completed(task_id: str) -> bool:
        return row(hub, task_id)[0] == "completed"

    first = send(hub, "echo", big)
    kill(bulk)
    # Dead, not dying: a request handed over between the signal and the exit would be written
    # to the sockets of a process being torn down, which answers nothing (the web process
    # answers -32603).
    assert eventually(lambda: refused(hub.env["A2A_BULK_SOCKET"]), timeout=10)
    second = send(hub, "echo", big)
    assert eventually(lambda: bool(set(listed(private_redis, "bulk")) - {bulk}), RESTARTED_WITHIN)
    third = send(hub, "echo", big)
    assert eventually(lambda: all(completed(t) for t in (first, second, third)), timeout=10)
    # Each stored whole: the message's one text part is the text sent.
    stored = hub.query("SELECT parts->0->>'text' FROM tasks_message WHERE role = 'user' "
                       "AND task_id = ANY(%s::uuid[])", ([first, second, third],))  # fmt: skip
    assert [text for (text,) in stored] == [big] * 3


def answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_a_worker_killed_during_a_redis_outage_is_started_again_and_its_queue_drains(
    hub: Hub, private_redis: RedisServer
) -> None:
    """Redis is SIGKILLed; meanwhile sends are stored (their jobs wait in the web process)
    and both workers die. Redis comes back empty: runhub has started the workers again, and
    every turn completes."""
    workers = listed(private_redis, "worker")
    private_redis.stop()
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            turns = list(pool.map(lambda _: send(hub, "slow", "0.5"), range(4)))
        for pid in workers:
            kill(pid)
    finally:
        private_redis.start()
    back = time.monotonic()

    def completed() -> bool:
        return all(row(hub, t)[0] == "completed" for t in turns)

    assert eventually(completed, timeout=RESTARTED_WITHIN), [row(hub, t) for t in turns]
    print(f"the queue drained {time.monotonic() - back:.1f} s after Redis came back")

    def restarted() -> bool:
        # One started worker may drain the queue before the other has beaten once.
        pids = listed(private_redis, "worker")
        return len(pids) == WORKERS and not set(pids) & set(workers)

    assert eventually(restarted, timeout=RESTARTED_WITHIN), listed(private_redis, "worker")
    assert hub.processes[0].alive()  # runhub itself
