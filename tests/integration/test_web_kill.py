"""A web process killed (SIGKILL) while it holds open streams: each client re-attaches through
another web process with `Last-Event-ID` and misses nothing, sees nothing twice.

The doomed process is an extra daphne started for this test, so the session's two stay up for
later tests. The slow agent runs on a Celery worker, so its turns go on while the process that
took the streams is gone; the events written meanwhile wait in the database for the clients.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field

import httpx
import pytest

from tests.factories.messages import wire_message
from tests.factories.versions import VERSIONS
from tests.helpers import eventually
from tests.integration.stack import Hub, Process
from tests.protocol.answers import state_of
from tests.streaming.sse import (
    Frame,
    Stream,
    chunks_in,
    kind_of,
    open_stream,
    payload,
    stored_events,
    stored_ids,
)

pytestmark = pytest.mark.integration

# Long enough that every task still works when its clients come back (a subscribe to a
# finished task is refused), short enough for a quick test.
WORK_SECONDS = 10
SENDS_PER_VERSION = 2
SEEN_BEFORE_KILL = 3  # the task, working, the first progress message


@dataclass
class Client:
    """One stream's client: what it read before its web process died, and after."""

    version: str
    task_id: str
    stream: Stream
    before: list[Frame] = field(default_factory=list)
    after: list[Frame] = field(default_factory=list)

    def last_seen(self) -> int:
        return stored_ids(self.before)[-1]

    def events(self) -> list[tuple[int, dict[str, object]]]:
        return stored_events(self.before + self.after)


@pytest.fixture
def doomed(hub: Hub) -> Iterator[tuple[Process, str]]:
    """A third web process of the session's hub, for this test to kill."""
    with hub.extra_web("web-doomed") as started:
        yield started


def open_clients(held: ExitStack, http: httpx.Client) -> list[Client]:
    """Per version and task: the streamed send, and a subscriber from the first event on."""
    clients = []
    for version in VERSIONS:
        for _ in range(SENDS_PER_VERSION):
            params = {"message": wire_message(version, str(WORK_SECONDS))}
            sent = held.enter_context(open_stream(http, "slow", version, "stream", params))
            first = sent.take(1)
            task_id = payload(first[0].result, version)["id"]
            clients.append(Client(version, task_id, sent, first))
            subscribed = held.enter_context(
                open_stream(http, "slow", version, "subscribe", {"id": task_id}, last_event_id=0)
            )
            clients.append(Client(version, task_id, subscribed))
    return clients


def kill(process: Process) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.popen.wait(timeout=10)


def reattach(held: ExitStack, http: httpx.Client, clients: list[Client]) -> None:
    """Every client subscribes again at once (each task must still be working), then reads
    its stream to the end."""
    resumed = [
        held.enter_context(
            open_stream(
                http, "slow", c.version, "subscribe", {"id": c.task_id}, last_event_id=c.last_seen()
            )
        )
        for c in clients
    ]
    for client, stream in zip(clients, resumed, strict=True):
        client.after = stream.rest()


def last_stored(hub: Hub, task_id: str) -> int:
    [(last,)] = hub.query("SELECT last_sequence FROM tasks_task WHERE id = %s", (task_id,))
    return int(last)


def went_on_without_them(hub: Hub, clients: list[Client]) -> bool:
    """Each task has stored two events or more since its clients last heard of it."""
    return all(last_stored(hub, c.task_id) >= c.last_seen() + 2 for c in clients)


def assert_every_event_once(hub: Hub, client: Client) -> None:
    snapshot, *resumed = client.after
    assert snapshot.id is None and kind_of(snapshot.result, client.version) == "task"
    assert all(f.id is not None for f in resumed), "only the snapshot may come without an id"
    last = last_stored(hub, client.task_id)
    seen = stored_ids(client.before + resumed)
    assert seen == list(range(1, last + 1)), f"{client.version} {client.task_id}: {seen}"
    final = payload(resumed[-1].result, client.version)
    assert state_of(final) == "completed"
    artifact = chunks_in(client.before + resumed, client.version)
    assert artifact == f"Worked for {WORK_SECONDS} seconds."  # once, not twice


def test_clients_of_a_killed_web_process_resume_elsewhere_and_see_every_event_once(
    hub: Hub, doomed: tuple[Process, str]
) -> None:
    """Guarantee: a stream cut by its web process dying can be taken up through another web
    process with Last-Event-ID: the client gets every stored event of its task exactly once,
    in order (ids 1..N, no gap, no duplicate), through the final state."""
    process, base = doomed
    with (
        ExitStack() as held,
        httpx.Client(base_url=base, timeout=15) as dying,
        httpx.Client(base_url=hub.web_b, timeout=15) as web_b,
    ):
        clients = open_clients(held, dying)
        for client in clients:
            client.before += client.stream.through(SEEN_BEFORE_KILL)

        kill(process)
        for client in clients:
            rest, cut = client.stream.until_cut()
            assert cut, f"the stream of {client.task_id} ended before its process died"
            client.before += rest
        # The turns go on meanwhile: clients come back to events stored while they were away.
        assert eventually(lambda: went_on_without_them(hub, clients), timeout=WORK_SECONDS / 2)
        reattach(held, web_b, clients)

    for client in clients:
        assert_every_event_once(hub, client)
    # The streamed send and the subscriber of one task ended up with the same events.
    by_task: dict[str, list[object]] = {}
    for client in clients:
        by_task.setdefault(client.task_id, []).append(client.events())
    assert all(a == b for a, b in by_task.values()), "two clients of one task saw different events"
