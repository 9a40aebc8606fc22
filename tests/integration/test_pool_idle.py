"""DATABASE_POOL_IDLE_SECONDS: a web process gives back the PostgreSQL connections a burst
made it open (its ORM pool's and its event loop's) once they have been idle that long, rather
than keep them from the other processes sharing max_connections."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.factories.envelopes import rpc_body
from tests.factories.messages import wire_message
from tests.factories.versions import V1
from tests.helpers import eventually
from tests.integration.stack import Hub, Process

pytestmark = pytest.mark.integration

SENDS, CONCURRENCY = 200, 16


def connections_of(process: Process) -> int:
    """The process's TCP connections to PostgreSQL, as `ss` lists them."""
    listing = subprocess.run(["ss", "-Htnp", "state", "established", "( dport = :5432 )"],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    return len(re.findall(rf"pid={process.pid},", listing))


@pytest.fixture
def web(hub: Hub) -> Iterator[tuple[Process, str]]:
    with hub.extra_web("web-idle", {"DATABASE_POOL_IDLE_SECONDS": "1"}) as started:
        yield started


def test_a_web_process_gives_back_the_connections_of_a_burst_once_idle(
    web: tuple[Process, str],
) -> None:
    process, base = web
    body = rpc_body(V1, "send", {"message": wire_message(V1, "burst")})

    def send(_: int) -> str:
        answer = httpx.post(f"{base}/agents/echo/jsonrpc/", json=body,
                            headers={"A2A-Version": V1}, timeout=60)  # fmt: skip
        return str(answer.json()["result"]["task"]["status"]["state"])

    with ThreadPoolExecutor(CONCURRENCY) as pool:
        states = list(pool.map(send, range(SENDS)))
        opened = connections_of(process)
    assert set(states) == {"TASK_STATE_COMPLETED"}
    assert opened >= 2, opened
    assert eventually(lambda: connections_of(process) == 0, timeout=30), connections_of(process)
