"""Where jobs run: Celery workers when REDIS_URL is set, a thread pool in this process when not.

Either way a job is called with the same arguments; in-process jobs with a countdown wait on
a timer, as a Celery ETA would.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

from django.conf import settings


@cache
def in_process_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(
        max_workers=settings.CELERY_WORKER_CONCURRENCY, thread_name_prefix="a2ahub-worker"
    )


def submit(job: Any, *args: Any, countdown: float = 0) -> None:
    if settings.REDIS_URL:
        job.apply_async(args=args, countdown=countdown or None)
        return
    if countdown > 0:
        timer = threading.Timer(countdown, lambda: in_process_pool().submit(job, *args))
        timer.daemon = True
        timer.start()
        return
    in_process_pool().submit(job, *args)
