"""Which hub processes are alive: each web process, Celery worker and beat says so every
`TASK_HEARTBEAT_SECONDS` from a thread of its own, and anyone may list the live ones.

Distributed, a beat is a Redis key per process that expires after three missed beats, plus a
sorted set of process ids by their last beat, so listing them reads one bounded range rather
than scanning Redis's keys; a worker's beat also says which jobs it holds (`holding`), so
recovery can tell a job waiting for a live worker's thread from one that died with its worker.
Embedded, the one process keeps its beat in memory. Apps above add work to every beat
(`on_beat`), such as counting what the process did since the last one.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import redis
from django.conf import settings

from a2ahub import outages, redis_clients

logger = logging.getLogger(__name__)

KEY_PREFIX = "a2ahub:process:"
HELD_PREFIX = "a2ahub:held:"
INDEX = "a2ahub:processes"
MISSED_BEATS = 3  # a process silent for this many beats is gone
LIST_CAP = 500  # more processes than this are not listed (one dashboard would not show them)

IDENTITY = f"{socket.gethostname()}:{os.getpid()}"

# Called on the beating thread after each beat; a failing one is logged and skipped.
on_beat: list[Callable[[], object]] = []
# What this process holds, written with each beat (a Celery worker: the jobs it took from the
# broker and has not finished, `a2ahub.celery`); a list of JSON values.
holding: Callable[[], list[object]] | None = None


@dataclass(frozen=True)
class Beat:
    id: str
    kind: str  # "web", "bulk" (`protocol.bulk`), "worker" or "beat"
    host: str
    pid: int
    started_at: float  # Unix time
    beat_at: float


_local: dict[str, Beat] = {}  # embedded: this process's own beat
_lock = threading.Lock()
_started: dict[str, threading.Thread] = {}
_stopping = threading.Event()


def interval() -> float:
    return float(settings.TASK_HEARTBEAT_SECONDS)


def expiry() -> float:
    return MISSED_BEATS * interval()


def start(kind: str) -> None:
    """Beat for this process from now on, as `kind` (once per process; later calls do
    nothing). The first beat is written before this returns, so the process is listed at once."""
    with _lock:
        if kind in _started and _started[kind].is_alive():
            return
        started_at = time.time()
        record(kind, started_at)
        thread = threading.Thread(
            target=beat_forever, args=(kind, started_at), name=f"a2ahub-beat-{kind}", daemon=True
        )
        _started[kind] = thread
    thread.start()


def stop() -> None:
    """End every beating thread of this process (tests; a process that shuts down simply stops
    beating and expires)."""
    _stopping.set()
    for thread in list(_started.values()):
        thread.join(timeout=5)
    _started.clear()
    _stopping.clear()


def beat_forever(kind: str, started_at: float) -> None:
    # Read once: a process's settings do not change, and a test's override_settings swaps
    # them under this thread in a way a read can catch half done (it would end the thread).
    every = interval()
    while not _stopping.wait(every):
        try:
            record(kind, started_at)
        except Exception:
            # This thread must outlive a Redis restart, or the process would look dead for
            # the rest of its life.
            logger.exception("process heartbeat failed")
        for hook in list(on_beat):
            try:
                hook()
            except Exception as exc:
                if not outages.note(exc):  # an outage: the hook runs again next beat
                    logger.exception("a process heartbeat hook failed")


def record(kind: str, started_at: float) -> None:
    now = time.time()
    pid = os.getpid()
    beat = Beat(f"{kind}:{IDENTITY}", kind, socket.gethostname(), pid, started_at, now)
    if not settings.REDIS_URL:
        _local[beat.id] = beat
        return
    ttl = max(1, round(expiry() + 0.5))
    outage = outages.redis_at(settings.REDIS_URL)
    try:
        with redis_clients.shared_client().pipeline(transaction=False) as pipe:
            pipe.set(KEY_PREFIX + beat.id, json.dumps(asdict(beat)), ex=ttl)
            if holding is not None:
                pipe.set(HELD_PREFIX + beat.id, json.dumps(holding()), ex=ttl)
            pipe.zadd(INDEX, {beat.id: now})
            pipe.zremrangebyscore(INDEX, "-inf", now - expiry())
            pipe.expire(INDEX, ttl * 10)
            pipe.execute()
    except redis.RedisError as exc:
        outage.failed(f"could not record this process's heartbeat: {outages.describe(exc)}")
    else:
        outage.answered()


def live() -> list[Beat]:
    """The processes heard from within the last three beats, web processes first, each kind
    by host and pid; at most LIST_CAP of them."""
    since = time.time() - expiry()
    if not settings.REDIS_URL:
        beats = [beat for beat in _local.values() if beat.beat_at >= since]
    else:
        beats = read_redis(since)
    order = {"web": 0, "worker": 1, "beat": 2}
    return sorted(beats, key=lambda b: (order.get(b.kind, 3), b.host, b.pid))


def held() -> list[object]:
    """What the live processes hold, as each said at its last beat (embedded: nothing, since
    the one process's jobs die with it)."""
    if not settings.REDIS_URL:
        return []
    values = live_values(HELD_PREFIX, time.time() - expiry())
    return [item for raw in values if raw is not None for item in json.loads(raw)]


def live_values(prefix: str, since: float) -> list[bytes | str | None]:
    """The value under `prefix` of each process heard from since `since` (None where it
    expired between the two reads)."""
    client = redis_clients.shared_client()
    ids = client.zrangebyscore(INDEX, since, "+inf", start=0, num=LIST_CAP)
    keys = [prefix + (i.decode() if isinstance(i, bytes) else str(i)) for i in ids]
    return client.mget(keys) if keys else []


def read_redis(since: float) -> list[Beat]:
    beats = []
    for raw in live_values(KEY_PREFIX, since):
        if raw is None:
            continue  # expired between the two reads
        try:
            beats.append(Beat(**json.loads(raw)))
        except (TypeError, ValueError):
            continue  # written by a process of another version
    return beats
