"""Numbers made in other processes, read at a web process's `/metrics` as Prometheus reads
them: shared counters that two processes add to at once show their exact sum, and the jobs
waiting in the Celery queue show while no worker takes them.

The hub here (one web process, one worker) has a redis-server of its own, so that its
counters and queue hold nothing but this module's.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.factories.envelopes import NON_BLOCKING, rpc_body
from tests.factories.messages import wire_message
from tests.factories.versions import V1
from tests.helpers import ROOT, eventually
from tests.integration.servers import RedisServer
from tests.integration.small_hub import small_hub
from tests.integration.stack import Hub, create_database, drop_database, postgres_url
from tests.operations.metered import sample

pytestmark = pytest.mark.integration

ATTEMPTS = "a2ahub_push_attempts_total"
WAITING = "a2ahub_jobs_waiting"
# A process that counts webhook attempts as a worker would, in batches, once told to begin.
COUNTING = """
import sys
import django
django.setup()
from a2ahub import metrics
print("ready", flush=True)
sys.stdin.readline()
for _ in range(int(sys.argv[1])):
    metrics.shared_counts(
        "a2ahub_push_attempts", [({"outcome": "delivered"}, 3), ({"outcome": "retry"}, 1)]
    )
    metrics.shared_count("a2ahub_push_attempts", {"outcome": "gone"})
"""
BATCHES = 500


@pytest.fixture(scope="module")
def hub(private_redis: RedisServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """(Named `hub`, as the session's is: a failing test's report then carries its logs.)"""
    name = f"a2ahub_metrics_{uuid.uuid4().hex[:10]}"
    create_database(name)
    try:
        root = tmp_path_factory.mktemp("shared-metrics")
        with small_hub(postgres_url(name), private_redis.url, root) as running:
            yield running
    finally:
        drop_database(name)


def scrape(hub: Hub) -> str:
    response = httpx.get(f"{hub.web_a}/metrics", timeout=10)
    assert response.status_code == 200, response.text
    return response.text


def counting_process(hub: Hub) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", COUNTING, str(BATCHES)], cwd=ROOT, env=hub.env,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_two_processes_counting_at_once_show_as_their_exact_sum(hub: Hub) -> None:
    counting = [counting_process(hub) for _ in range(2)]
    for process in counting:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
    for process in counting:  # both set up: they count at the same time
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    assert [process.wait(timeout=60) for process in counting] == [0, 0]

    text = scrape(hub)
    assert sample(text, ATTEMPTS, outcome="delivered") == 2 * BATCHES * 3
    assert sample(text, ATTEMPTS, outcome="retry") == 2 * BATCHES
    assert sample(text, ATTEMPTS, outcome="gone") == 2 * BATCHES
    assert sample(text, ATTEMPTS, outcome="abandoned") == 0


def send_for_later(hub: Hub) -> None:
    body = rpc_body(V1, "send", {"message": wire_message(V1, "0"),
                                 "configuration": NON_BLOCKING[V1]})  # fmt: skip
    response = httpx.post(f"{hub.web_a}/agents/slow/jsonrpc/", json=body,
                          headers={"A2A-Version": V1}, timeout=30)  # fmt: skip
    assert "result" in response.json(), response.text


def test_jobs_waiting_in_the_celery_queue_show_until_a_worker_takes_them(hub: Hub) -> None:
    assert sample(scrape(hub), WAITING, queue="celery") == 0
    [worker] = hub.workers
    worker.popen.terminate()
    worker.popen.wait(timeout=15)
    for _ in range(5):
        send_for_later(hub)  # a turn of the slow agent: a job for a worker

    assert sample(scrape(hub), WAITING, queue="celery") == 5

    hub.wait_for_worker(hub.replace_worker(worker))
    assert eventually(lambda: sample(scrape(hub), WAITING, queue="celery") == 0, timeout=10)
