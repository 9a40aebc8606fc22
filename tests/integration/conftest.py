"""The session's distributed hub (see `stack.py`), started once and torn down reliably.

When a test that used it fails, the tail of every hub process's log is added to its report.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.stack import Hub, hub_of_its_own


@pytest.fixture(scope="session")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """Two web processes and two workers sharing one database and one Redis."""
    with hub_of_its_own("a2ahub_it", tmp_path_factory.mktemp("hub")) as running:
        yield running


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    report = yield
    hub = getattr(item, "funcargs", {}).get("hub")
    if report.failed and isinstance(hub, Hub):
        report.sections.append(("hub process logs", hub.report()))
    return report
