"""The session's distributed hub (see `stack.py`), started once and torn down reliably; and for
a module whose tests stop or restart them, a Redis server and a PostgreSQL cluster of its own.

When a test that used a hub fails, the tail of every hub process's log is added to its report.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.servers import (
    PostgresCluster,
    RedisServer,
    cluster_unavailable,
    postgres_cluster,
)
from tests.integration.stack import Hub, hub_of_its_own


@pytest.fixture(scope="session")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """Two web processes and two workers sharing one database and one Redis."""
    with hub_of_its_own("a2ahub_it", tmp_path_factory.mktemp("hub")) as running:
        yield running


@pytest.fixture(scope="module")
def private_redis() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def cluster() -> Iterator[PostgresCluster]:
    if reason := cluster_unavailable():
        pytest.skip(reason)
    with postgres_cluster() as running:
        yield running


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    report = yield
    hub = getattr(item, "funcargs", {}).get("hub")
    if report.failed and isinstance(hub, Hub):
        report.sections.append(("hub process logs", hub.report()))
    return report
