"""The session's distributed hub (see `stack.py`), started once and torn down reliably.

When a test that used it fails, the tail of every hub process's log is added to its report.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from tests.integration.stack import (
    Hub,
    claim_redis_database,
    create_database,
    drop_database,
    postgres_url,
    release_redis_database,
    running_hub,
)


@pytest.fixture(scope="session")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """Two web processes and two workers sharing one database and one Redis."""
    name = f"a2ahub_it_{uuid.uuid4().hex[:10]}"
    root = tmp_path_factory.mktemp("hub")
    with ExitStack() as cleanup:  # undone in reverse: processes, database, Redis claim
        redis_url = claim_redis_database(name)
        cleanup.callback(release_redis_database, redis_url, name)
        create_database(name)
        cleanup.callback(drop_database, name)
        yield cleanup.enter_context(running_hub(postgres_url(name), redis_url, root))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    report = yield
    hub = getattr(item, "funcargs", {}).get("hub")
    if report.failed and isinstance(hub, Hub):
        report.sections.append(("hub process logs", hub.report()))
    return report
