"""LOOP_HOLD_LOG_MS, a diagnosis aid: a web process logs each callback that held its event loop
longer than that, naming the task that did (the requests of the process waited meanwhile);
without the setting it logs none."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.factories.envelopes import rpc_body
from tests.factories.messages import wire_message
from tests.factories.versions import V1
from tests.integration.stack import Hub, Process

pytestmark = pytest.mark.integration

# Read, checked and answered on the loop (under A2A_THREAD_BODY_BYTES): a hold of milliseconds.
TEXT = "held " * 30_000


def holds_in(process: Process) -> list[str]:
    lines = process.log.read_text(errors="replace").splitlines()
    return [line for line in lines if "Executing <" in line and " took " in line]


@pytest.fixture
def web_processes(hub: Hub) -> Iterator[dict[str, tuple[Process, str]]]:
    """Two more web processes of the hub: one with the setting, one without."""
    with (
        hub.extra_web("web-watched", {"LOOP_HOLD_LOG_MS": "1"}) as watched,
        hub.extra_web("web-plain") as plain,
    ):
        yield {"watched": watched, "plain": plain}


def test_a_web_process_names_what_held_its_loop_longer_than_the_setting(
    web_processes: dict[str, tuple[Process, str]],
) -> None:
    body = rpc_body(V1, "send", {"message": wire_message(V1, TEXT)})
    for _, base in web_processes.values():
        answer = httpx.post(f"{base}/agents/echo/jsonrpc/", json=body,
                            headers={"A2A-Version": V1}, timeout=60)  # fmt: skip
        assert answer.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"

    watched, plain = web_processes["watched"][0], web_processes["plain"][0]
    assert holds_in(watched), watched.describe()
    assert all("WARNING asyncio" in line for line in holds_in(watched))
    assert holds_in(plain) == []
