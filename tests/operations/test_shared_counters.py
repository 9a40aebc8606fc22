"""Counters that any process adds to (`metrics.shared_count`), shown whole at `/metrics`: in
memory when embedded, in Redis when distributed; and the jobs waiting for a worker. (Two
processes counting at once, and the Celery queue, are in tests/integration/.)"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest
from pytest_django.fixtures import Settings

from a2ahub import metrics, worker
from tests.door_client import Door
from tests.helpers import eventually, free_port
from tests.operations.metered import sample

pytestmark = pytest.mark.django_db

ATTEMPTS = "a2ahub_push_attempts_total"


def scrape(door: Door) -> str:
    response = door.get("/metrics")
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def embedded(settings: Settings) -> None:
    settings.REDIS_URL = ""


@pytest.fixture
def distributed(settings: Settings) -> None:
    if not settings.REDIS_URL:
        pytest.skip("needs Redis (REDIS_URL)")


def outcome() -> str:
    """A label value no other test (or hub sharing this Redis) counts under."""
    return f"test-{uuid.uuid4().hex[:8]}"


def count_from_threads(label: str, threads: int, batches: int) -> None:
    def count() -> None:
        for _ in range(batches):
            metrics.shared_counts("a2ahub_push_attempts", [({"outcome": label}, 2)])
            metrics.shared_count("a2ahub_push_attempts", {"outcome": label})

    running = [threading.Thread(target=count) for _ in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join()


def test_embedded_counts_from_every_thread_are_shown_exactly(door: Door, embedded: None) -> None:
    label = outcome()
    count_from_threads(label, threads=4, batches=250)
    assert sample(scrape(door), ATTEMPTS, outcome=label) == 4 * 250 * 3


def test_distributed_counts_are_kept_in_redis_and_shown_exactly(
    door: Door, distributed: None
) -> None:
    label = outcome()
    count_from_threads(label, threads=4, batches=50)
    assert sample(scrape(door), ATTEMPTS, outcome=label) == 4 * 50 * 3


def test_a_count_with_other_labels_than_declared_is_refused() -> None:
    with pytest.raises(ValueError, match="takes the labels"):
        metrics.shared_count("a2ahub_push_attempts", {"state": "delivered"})


def test_while_redis_is_away_counting_does_not_fail_and_metrics_still_answer(
    door: Door, settings: Settings
) -> None:
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    metrics.shared_count("a2ahub_push_attempts", {"outcome": "delivered"})
    text = scrape(door)
    assert "a2ahub_requests" in text
    assert "a2ahub_jobs_waiting" not in text


@pytest.fixture
def held_pool(embedded: None) -> Iterator[threading.Event]:
    """The in-process pool with every thread held by a job until the event is set."""
    release = threading.Event()
    started = threading.Semaphore(0)

    def hold() -> None:
        started.release()
        release.wait(10)

    pool = worker.in_process_pool()
    for _ in range(pool._max_workers):
        pool.submit(hold)
    for _ in range(pool._max_workers):
        assert started.acquire(timeout=10)
    try:
        yield release
    finally:
        release.set()


def test_embedded_jobs_waiting_are_the_in_process_pools_backlog(
    door: Door, held_pool: threading.Event
) -> None:
    for _ in range(3):
        worker.submit(lambda: None)
    assert sample(scrape(door), "a2ahub_jobs_waiting", queue="in-process") == 3
    held_pool.set()
    assert eventually(lambda: sample(scrape(door), "a2ahub_jobs_waiting", queue="in-process") == 0)
