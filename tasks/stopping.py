"""The turns this process runs, by task id, and how a turn is stopped wherever it runs.

The runner adds each turn it starts and removes it when it ends; a cancel stops it here, or
over the bus in the process that runs it (which hears `CONTROL_CHANNEL`).
"""

from __future__ import annotations

import threading
from typing import Any

from asgiref.sync import sync_to_async

from a2ahub import bus

CONTROL_CHANNEL = "a2ahub:control:stop"

# The runner's `Run` of each turn: its loop, and `stop()` to call on that loop.
RUNNING: dict[str, Any] = {}
running_lock = threading.Lock()


def request_stop(task_id: str) -> bool:
    """Stop the turn of a task if this process runs it (any thread may call this)."""
    with running_lock:
        run = RUNNING.get(task_id)
    if run is None:
        return False
    run.loop.call_soon_threadsafe(run.stop)
    return True


async def stop_everywhere(task_id: str) -> None:
    """Stop the task's turn wherever it runs. A stop request lost to a Redis that is away
    does no harm: the cancel is stored already, and a turn running elsewhere meets it at its
    next write, which the terminal state refuses, and ends there. (Published off the loop:
    the loop of a sync caller's `async_to_sync` ends with the call.)"""
    if not request_stop(task_id):
        await sync_to_async(bus.get().publish, thread_sensitive=False)(CONTROL_CHANNEL, task_id)


def running_here() -> list[str]:
    """The tasks whose turns this process runs."""
    with running_lock:
        return list(RUNNING)
