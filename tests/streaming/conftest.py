"""Fixtures for the streaming tests: a real hub process (`server.py`), started once per session,
and an HTTP client for it; `sse.py` reads its streams as A2A clients do.

Personas and their rights (on the `private` agent, which requires an API key):
- `caller`: holds a valid key; creates tasks there and may follow its own.
- `stranger`: holds another valid key; none of `caller`'s tasks exist for it.
Every other agent here is open: anyone may send to it and follow the tasks it made anonymously.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.helpers import embedded_env, free_port, wait_for_http
from tests.streaming.server import HEARTBEAT_SECONDS, StreamServer, prepare, start_daphne, stop


@pytest.fixture(scope="session")
def stream_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamServer]:
    root = tmp_path_factory.mktemp("stream-hub")
    env = embedded_env(root / "data") | {"SSE_HEARTBEAT_SECONDS": str(HEARTBEAT_SECONDS)}
    keys = prepare(env)
    port, log = free_port(), root / "daphne.log"
    process = start_daphne(env, port, log)
    base = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_for_http(f"{base}/agents/quick/.well-known/agent-card.json", process)
        except (RuntimeError, TimeoutError) as exc:
            raise RuntimeError(f"{exc}\n{log.read_text(errors='replace')[-3000:]}") from exc
        yield StreamServer(base, keys)
    finally:
        stop(process)


@pytest.fixture
def http(stream_server: StreamServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=stream_server.base, timeout=10) as client:
        yield client
