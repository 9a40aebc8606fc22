"""A hub of one web process and one Celery worker, for tests that stop the services or the
worker under it: lighter to start than the session's two of each with beat."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from tests.helpers import wait_for_http
from tests.integration.stack import (
    Hub,
    claim_redis_database,
    create_database,
    drop_database,
    hub_env,
    postgres_url,
    prepare_database,
    release_redis_database,
)


@contextmanager
def small_hub(
    database_url: str, redis_url: str, root: Path, settings: dict[str, str] | None = None
) -> Iterator[Hub]:
    """Migrated, seeded and started for the block on an empty database and a Redis of the
    caller's; `hub.web_a` is its web process. Every process is stopped after the block."""
    env = hub_env(database_url, redis_url, root / "data") | (settings or {})
    running = Hub(env, env["DATABASE_URL"], root)
    try:
        prepare_database(env)
        web, running.web_a = running.start_web("web")
        worker = running.start_worker("worker1")
        try:
            wait_for_http(f"{running.web_a}/healthz", web.popen)
            running.wait_for_worker(worker)
        except (RuntimeError, TimeoutError) as exc:
            raise RuntimeError(f"the hub did not start: {exc}\n{running.report()}") from exc
        yield running
    finally:
        running.stop()


@contextmanager
def own_small_hub(prefix: str, root: Path, settings: dict[str, str] | None = None) -> Iterator[Hub]:
    """`small_hub` on a PostgreSQL database and a Redis database of its own, both made for the
    block and given back after it."""
    name = f"a2ahub_{prefix}_{uuid.uuid4().hex[:10]}"
    with ExitStack() as cleanup:
        redis_url = claim_redis_database(name)
        cleanup.callback(release_redis_database, redis_url, name)
        create_database(name)
        cleanup.callback(drop_database, name)
        yield cleanup.enter_context(small_hub(postgres_url(name), redis_url, root, settings))
