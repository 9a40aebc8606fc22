"""What queueing one worker job costs: Celery's `apply_async` against one hand-built LPUSH.

    python bench/enqueue.py --redis redis://127.0.0.1:6379/7 -n 5000

Run by hand, from the repository root with the project's Python. It times `-n` submits of the
`run_task` job (no worker takes them; the queue is emptied before and after) each way, from a
thread as a web process's hop does: CPU per submit (`time.process_time`, the whole process)
and wall per submit. The hand-built message is the one the hub sent before 2026-11-27 (a
Celery protocol-2 message written as JSON and pushed with one LPUSH), kept here for the
comparison only. The Redis database given must be the bench's own: it is flushed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--redis", default="redis://127.0.0.1:6379/7", help="the bench's own database")
    p.add_argument("-n", type=int, default=5000, help="submits per way and round")
    p.add_argument("--rounds", type=int, default=3, help="rounds, the ways taking turns")
    return p.parse_args()


def timed(n: int, submit: Callable[[int], None]) -> tuple[float, float]:
    """CPU and wall milliseconds per submit, the submits made one after another on a thread."""

    def run() -> tuple[float, float]:
        cpu, wall = time.process_time(), time.perf_counter()
        for i in range(n):
            submit(i)
        return (time.process_time() - cpu) * 1e3 / n, (time.perf_counter() - wall) * 1e3 / n

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(run).result()


def main() -> None:
    options = parse_args()
    os.environ.update(REDIS_URL=options.redis, DJANGO_SETTINGS_MODULE="a2ahub.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-not-for-any-real-deployment")
    import django

    django.setup()
    import redis
    from django.conf import settings

    from a2ahub.worker import job_message, queue_name
    from tasks.jobs import run_task

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    queue = queue_name()
    client.flushdb()
    args = ("0b6f5c1e-0000-4000-8000-000000000000", "queued:" + "a" * 32, "a2ahub:reply:x:1")

    def lpush(_: int) -> None:
        client.lpush(queue, job_message(run_task, args))  # the hub's own message

    def apply_async(_: int) -> None:
        run_task.apply_async(args=args, headers={"a2ahub_request_id": "req-1"})

    ways = {"hand-built LPUSH": lpush, "apply_async": apply_async}
    for way in ways.values():
        timed(200, way)  # warm-up: connections, the producer pool, imports
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
    for round_ in range(options.rounds):
        order = list(ways) if round_ % 2 == 0 else list(reversed(ways))
        for name in order:
            results[name].append(timed(options.n, ways[name]))
            client.delete(queue)
    client.flushdb()
    report(results, options.n)


def report(results: dict[str, list[tuple[float, float]]], n: int) -> None:
    print(f"| way | CPU ms/submit (median of rounds) | wall ms/submit | rounds (cpu) | n={n} |")
    print("|---|---|---|---|---|")
    medians = {}
    for name, runs in results.items():
        cpu = sorted(r[0] for r in runs)[len(runs) // 2]
        wall = sorted(r[1] for r in runs)[len(runs) // 2]
        medians[name] = (cpu, wall)
        rounds = ", ".join(f"{r[0]:.3f}" for r in runs)
        print(f"| {name} | {cpu:.3f} | {wall:.3f} | {rounds} | |")
    (hand_cpu, hand_wall), (celery_cpu, celery_wall) = medians.values()
    print(
        f"\napply_async / hand-built: CPU {celery_cpu / hand_cpu:.2f}x "
        f"(+{celery_cpu - hand_cpu:.3f} ms), wall {celery_wall / hand_wall:.2f}x "
        f"(+{celery_wall - hand_wall:.3f} ms)"
    )


if __name__ == "__main__":
    main()
