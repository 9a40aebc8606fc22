"""Worker jobs: claiming a stored task, running turns on the process's job loop, and the job
message put on the broker.

A process runs every job's turn on one event loop of its own, and each job thread keeps one
database thread its turns call the ORM on (`tasks.runner.run_job`); these tests run jobs on
threads of their own, as Celery worker threads would, with Django's check against the ORM on a
loop left on.
"""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import connections
from django.utils import timezone

from a2ahub import asyncdb, worker
from a2ahub.celery import app
from agents.models import Agent
from tasks import changes, jobs, runner, sql, writer
from tasks.changes import NewTask
from tasks.models import Artifact, Task, TaskState
from tests.factories.agents import make_agent
from tests.factories.messages import user_message
from tests.factories.versions import V1

pytestmark = pytest.mark.django_db(transaction=True)

OWNER = "apikey:jobs"


def queued_task(agent: Agent, text: str = "hello") -> tuple[str, str]:
    """A task stored for a worker, and the token its job holds."""
    token = f"queued:{uuid.uuid4().hex}"
    spec = NewTask(agent_id=agent.pk, owner=OWNER, context_id="ctx",
                   message=user_message(text), protocol_version=V1,
                   execution_mode="worker")  # fmt: skip
    async_to_sync(writer.open)(spec, runner=token)
    return str(spec.id), token


@pytest.fixture(autouse=True)
def async_safety_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Django refuses the ORM on a running loop, as in a worker process (no unsafe flag)."""
    monkeypatch.delenv("DJANGO_ALLOW_ASYNC_UNSAFE", raising=False)


@pytest.fixture
def worker_thread() -> Iterator[Callable[[Callable[[], Any]], threading.Thread]]:
    """Start work on a thread of its own; its event loop is closed when the test ends."""
    threads: list[threading.Thread] = []

    def start(work: Callable[[], Any]) -> threading.Thread:
        def run() -> None:
            try:
                work()
            finally:
                # The thread's database thread, kept from job to job, goes with it.
                runner.job_database_thread().submit(connections.close_all).result()
                connections.close_all()

        thread = threading.Thread(target=run)
        thread.start()
        threads.append(thread)
        return thread

    yield start
    for thread in threads:
        thread.join(timeout=10)


def wait_for_state(task_id: str, state: TaskState, timeout: float = 5) -> None:
    deadline = time.monotonic() + timeout
    while Task.objects.get(id=task_id).state != state:
        assert time.monotonic() < deadline, f"task {task_id} never reached {state}"
        time.sleep(0.05)


def test_only_the_job_holding_the_token_claims_the_task_and_only_once(db: None) -> None:
    task_id, token = queued_task(make_agent("claimed"))

    assert sql.claim_task(task_id, "queued:someone-else", "me", timezone.now()) is None
    claimed = sql.claim_task(task_id, token, "me", timezone.now())
    assert claimed is not None
    assert sql.claim_task(task_id, token, "me", timezone.now()) is None
    assert Task.objects.get(id=task_id).runner == "me"


def test_a_claim_reads_the_tasks_messages_in_order(db: None) -> None:
    agent = make_agent("interviewer", executor_kind="interview")
    task_id, _ = queued_task(agent)
    question = changes.StatusChange(TaskState.INPUT_REQUIRED, user_message("q"))
    async_to_sync(writer.record)(uuid.UUID(task_id), TaskState.SUBMITTED, [question])
    async_to_sync(writer.add_user_message)(uuid.UUID(task_id), OWNER, user_message("answer"))
    token = "queued:follow-up"
    Task.objects.filter(id=task_id).update(runner=token)

    claimed = sql.claim_task(task_id, token, "me", timezone.now())

    assert claimed is not None
    assert [m.parts[0]["text"] for m in claimed.messages] == ["hello", "q", "answer"]
    assert claimed.task["state"] == TaskState.WORKING
    assert claimed.task["agent_id"] == agent.pk


def test_a_worker_thread_runs_one_job_after_another_on_the_process_job_loop(
    worker_thread: Callable[[Callable[[], Any]], threading.Thread],
) -> None:
    agent = make_agent("echoed")
    first, second = queued_task(agent, "one"), queued_task(agent, "two")
    loops: list[Any] = []

    def two_jobs() -> None:
        for task_id, token in (first, second):
            jobs.run_task(task_id, token)
            loops.append(runner.job_loop())

    worker_thread(two_jobs).join(timeout=10)

    assert len(loops) == 2 and loops[0] is loops[1]
    for (task_id, _), text in ((first, "one"), (second, "two")):
        assert Task.objects.get(id=task_id).state == TaskState.COMPLETED
        assert Artifact.objects.get(task_id=task_id).parts == [{"text": text}]


@pytest.mark.skipif(not asyncdb.on_postgresql(), reason="the job loop writes with asyncpg")
def test_worker_threads_running_jobs_at_once_share_the_job_loops_few_connections(
    worker_thread: Callable[[Callable[[], Any]], threading.Thread],
    loop_statements: list[str],
    settings: Any,
) -> None:
    settings.WORKER_DB_CONNECTIONS = 2
    agent = make_agent("stepper", executor_kind="slow", executor_settings={"step": 0.02})
    queued = [queued_task(agent, "0.2") for _ in range(8)]  # ten steps each

    threads = [worker_thread(partial(jobs.run_task, *job)) for job in queued]
    for thread in threads:
        thread.join(timeout=30)

    assert [Task.objects.get(id=task_id).state for task_id, _ in queued] == [
        TaskState.COMPLETED
    ] * 8
    assert any("INSERT" in statement for statement in loop_statements)  # written on the loop
    pool = asyncio.run_coroutine_threadsafe(asyncdb.pool(), runner.job_loop()).result(5)
    assert 1 <= pool.get_size() <= 2  # eight jobs at once


def test_a_cancel_stops_a_turn_running_on_a_worker_thread(
    worker_thread: Callable[[Callable[[], Any]], threading.Thread],
) -> None:
    agent = make_agent("slowpoke", executor_kind="slow", executor_settings={"step": 0.1})
    task_id, token = queued_task(agent, "30")
    job = worker_thread(lambda: jobs.run_task(task_id, token))
    wait_for_state(task_id, TaskState.WORKING)

    async_to_sync(writer.cancel)(uuid.UUID(task_id), OWNER)
    job.join(timeout=10)

    assert not job.is_alive()
    assert Task.objects.get(id=task_id).state == TaskState.CANCELED
    assert not Artifact.objects.filter(task_id=task_id).exists()


def test_a_queued_job_is_the_message_celery_itself_would_queue(db: None) -> None:
    args = ("a-task", "queued:token", "a2ahub:reply:web:1")
    with app.connection_for_write() as connection:
        # The in-memory queue is the process's: it may hold what earlier tests sent.
        connection.default_channel.queue_purge("celery")
    jobs.run_task.apply_async(args=args)  # the test settings' broker keeps it in memory
    with app.connection_for_write() as connection:
        celery_made = connection.default_channel._get("celery")

    ours = json.loads(worker.job_message(jobs.run_task, args))

    assert {k: v for k, v in ours.items() if k not in {"headers", "properties"}} == {
        k: v for k, v in celery_made.items() if k not in {"headers", "properties"}
    }
    assert json.loads(base64.b64decode(ours["body"]))[0] == list(args)
    assert set(ours["headers"]) == set(celery_made["headers"])
    assert set(ours["properties"]) == set(celery_made["properties"])
    same = {"lang", "task", "retries", "timelimit", "argsrepr", "ignore_result"}
    assert {k: ours["headers"][k] for k in same} == {k: celery_made["headers"][k] for k in same}
    assert ours["properties"]["delivery_info"] == celery_made["properties"]["delivery_info"]


def test_a_worker_process_starts_without_letting_the_orm_run_on_its_loops() -> None:
    # A process of its own: what a Celery worker process runs as it starts (its app's
    # worker_init receivers, Celery's Django fixup's among them), then its environment.
    started = subprocess.run(
        [sys.executable, "-c", WORKER_START], capture_output=True, text=True, timeout=60
    )

    assert started.returncode == 0, started.stderr
    assert started.stdout.split() == ["flag:", "False"]


WORKER_START = """
import os
from celery import signals
from a2ahub.celery import app
signals.worker_init.send(sender=app)
print("flag:", "DJANGO_ALLOW_ASYNC_UNSAFE" in os.environ)
"""
