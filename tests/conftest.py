"""Shared fixtures: personas, agents, and the real-stack switches.

Personas and their rights:
- `operator`: staff superuser; runs the hub from the admin and may see and change everything.
- `developer`: a signed-in user without staff rights; the admin refuses them.
- anonymous (the plain `client` fixture): may read public cards and the catalog, nothing else.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from typing import Any

import asyncpg
import hypothesis
import pytest
from django.conf import settings
from django.contrib.auth import hashers
from django.contrib.auth.models import User
from django.db import connections, transaction
from django.test import Client, TransactionTestCase

from tests.door_client import Door, running
from tests.factories.agents import make_agent
from tests.factories.signed_cards import Site, publishing

STACK_ENV = ("DATABASE_URL", "REDIS_URL")

# Property-based tests: a bounded, repeatable run by default (CI); `make fuzz` runs "deep".
hypothesis.settings.register_profile("ci", max_examples=500, derandomize=True, database=None)
hypothesis.settings.register_profile("deep", max_examples=50_000, database=None)
hypothesis.settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Passwords: see tests/passwords.py. The production hashers stay listed, for the hashes that
# hub processes the tests start make.
settings.PASSWORD_HASHERS = ["tests.passwords.OneIterationPBKDF2", *settings.PASSWORD_HASHERS]
hashers.get_hashers.cache_clear()
hashers.get_hashers_by_algorithm.cache_clear()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow_first(items)
    # Integration tests need the real stack; locally they skip without it, but where the stack
    # is required (CI's main run) a missing service must fail instead of quietly skipping.
    missing = [name for name in STACK_ENV if not os.environ.get(name)]
    if not missing:
        return
    if os.environ.get("A2AHUB_REQUIRE_STACK"):
        raise pytest.UsageError(f"CI needs {', '.join(missing)} for the integration tests")
    skip = pytest.mark.skip(reason=f"needs {', '.join(missing)} (the real stack)")
    for item in items:
        if "integration" in item.keywords:
            item.add_marker(skip)


def slow_first(items: list[pytest.Item]) -> None:
    """Files whose tests start hubs or browsers first, the most tests first within each kind:
    test processes side by side (`make pytest`) take a file each at a time, in this order, and
    end together only if the long files do not come last. A file keeps its tests' order."""
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)

    def cost(tests: list[pytest.Item]) -> tuple[bool, int]:
        slow = any("integration" in t.keywords or "browser" in t.keywords for t in tests)
        return (not slow, -len(tests))

    items[:] = [item for tests in sorted(files.values(), key=cost) for item in tests]


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    django_db_modify_db_settings_parallel_suffix: None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # In-memory SQLite shares one cache between threads and fails a concurrent writer with
    # "database table is locked" instead of waiting; the hub writes from worker threads, so
    # the test database is a file (one per session: several runs may share this tree).
    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3":
        path = tmp_path_factory.mktemp("db") / "test.sqlite3"
        database.setdefault("TEST", {})["NAME"] = str(path)


# Rows a flush deletes and the post_migrate signal then writes again, the same.
KEPT_TABLES = {"django_content_type", "auth_permission"}
django_flush = TransactionTestCase._fixture_teardown


@pytest.fixture(scope="session", autouse=True)
def quick_flush() -> Iterator[None]:
    """A transactional test (each test through the A2A door is one) ends by emptying the
    tables. Django's flush truncates every table, then writes the content types and
    permissions again: 1-2 s a test on a busy PostgreSQL (new files for each table), where
    deleting the rows takes milliseconds."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(TransactionTestCase, "_fixture_teardown", empty_tables)
        yield


def empty_tables(case: TransactionTestCase) -> None:
    if case.available_apps is not None or case.serialized_rollback:
        django_flush(case)  # (what those need; no test here sets them)
        return
    for alias in case._databases_names(include_mirrors=False):
        connection = connections[alias]
        # In one transaction: the foreign keys are checked at its end, when all rows are gone.
        with transaction.atomic(using=alias), connection.cursor() as cursor:
            for table in flushed_tables(alias):
                cursor.execute(f"DELETE FROM {connection.ops.quote_name(table)}")


@functools.cache
def flushed_tables(alias: str) -> list[str]:
    names = connections[alias].introspection.django_table_names(only_existing=True)
    return [name for name in names if name not in KEPT_TABLES]


@pytest.fixture(scope="session", autouse=True)
def quiet_maintenance_at_the_end(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """The hub's maintenance thread (heartbeats, recovery) stops before the test database is
    dropped: it would hold a connection to it, and then fail on the dropped database."""
    yield
    from push import engine
    from tasks.runner import close_job_connections, stop_maintenance

    stop_maintenance()
    close_job_connections()
    engine.stop()  # its connection too
    # Connections that other threads of this process still hold (the job loops' threads of
    # earlier tests: thread-local, out of this thread's reach) would keep the test database
    # from being dropped ("being accessed by other users"): they end here, at the very end.
    connection = connections["default"]
    if connection.vendor == "postgresql":
        with django_db_blocker.unblock(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )


@pytest.fixture(autouse=True)
def push_engine_at_rest() -> Iterator[None]:
    """A test that sent webhooks through this process's delivery engine ends once the engine
    has written what it sent: its last batch racing the test database's flush deadlocked it
    (and left the test's rows for the next test)."""
    yield
    from push import engine

    assert engine.wait_idle(30), "the in-process push engine did not come to rest"
    # Stopped, not left running into the next tests: it would hear other hubs' wake-ups on
    # the shared Redis and claim from a database a test without one may not reach, logging
    # each failure from its thread while the test runs.
    engine.stop()


@pytest.fixture(autouse=True)
def maintenance_of_this_test_only() -> Iterator[None]:
    """A turn run in this process starts its maintenance thread (heartbeats and, embedded,
    the periodic jobs); it ends with the test that started it, rather than reach the database
    during a later test that has none. The job loop's database connections are closed too."""
    yield
    from tasks.runner import close_job_connections, stop_maintenance

    stop_maintenance()
    close_job_connections()


@pytest.fixture(autouse=True)
def audit_counts_of_this_test_only(settings: Any) -> Iterator[None]:
    """Calls counted for the audit log reach the database when a test flushes them, never
    from this process's heartbeat thread (a test that imported the ASGI app started one) in the
    middle of another test; none are left for the next test, or for the exit."""
    from agents.audit import forget_uses

    settings.AUDIT_FLUSH_SECONDS = 10**9
    forget_uses()
    yield
    forget_uses()


@pytest.fixture(autouse=True)
def fresh_agent_cache() -> None:
    # Rolled-back test transactions send no signals, so each test starts with no cached agent.
    from a2ahub.signing import forget_current_signer
    from agents.lookup import forget_agents
    from protocol.limits import forget_counts

    forget_agents()
    forget_counts()
    forget_current_signer()  # the signing key of an earlier test's database


@pytest.fixture
def operator(db: None) -> User:
    return User.objects.create_superuser("op", "op@example.com", "operator-pass-123")


@pytest.fixture
def developer(db: None) -> User:
    return User.objects.create_user("dev", "dev@example.com", "developer-pass-123")


@pytest.fixture
def operator_client(operator: User) -> Client:
    client = Client()
    client.force_login(operator)
    return client


@pytest.fixture
def agent_factory(db: None) -> Any:
    """`make_agent` (tests/factories/agents.py) for tests that take it as a fixture."""
    return make_agent


# The methods by which asyncpg's connections (the event loop's, `a2ahub.asyncdb`) run a
# statement.
QUERY_METHODS = ("execute", "executemany", "fetch", "fetchrow", "fetchval", "fetchmany")


@pytest.fixture
def loop_statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements the event loop's connections run, as they run them."""
    seen: list[str] = []
    for name in QUERY_METHODS:
        monkeypatch.setattr(
            asyncpg.Connection, name, counted(getattr(asyncpg.Connection, name), seen)
        )
    return seen


def counted(method: Callable[..., Any], seen: list[str]) -> Callable[..., Any]:
    @functools.wraps(method)
    async def run(self: asyncpg.Connection, query: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(query)
        return await method(self, query, *args, **kwargs)

    return run


@pytest.fixture
def door(transactional_db: None) -> Iterator[Door]:
    """A client of the A2A doors through the ASGI application production serves, on an event
    loop of this test's own (tests/door_client.py). The door writes on connections of its
    own (asyncpg's, or a thread's), which a test's transaction would hide both ways: the test
    is transactional."""
    with running():
        yield Door()


@pytest.fixture
def publisher(settings: Any) -> Iterator[Site]:
    """A publisher's 127.0.0.1 site, serving its JWKS, which the hub may call (signed cards)."""
    with publishing(settings) as served:
        yield served
