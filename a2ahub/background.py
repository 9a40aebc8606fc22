"""Tasks nobody awaits, held until they end: the event loop keeps only weak references to its
tasks, so one started and forgotten could be collected half-way."""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

T = TypeVar("T", bound="asyncio.Future[Any]")

_held: set[asyncio.Future[Any]] = set()


def keep(task: T) -> T:
    _held.add(task)
    task.add_done_callback(_held.discard)
    return task
