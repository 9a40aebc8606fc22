"""Large request bodies off the event loop.

Reading a request into protobuf or pydantic, writing what it makes into rows and reading
them back, and writing its answer, take time in proportion to its size: for a body of a few
megabytes, whole seconds in which no other request of the process gets an answer. A request
whose body is over `A2A_THREAD_BODY_BYTES` has that work done on a thread (the doors' parse
and answer, the task writer's plan and outcome), so the loop keeps serving; smaller ones
(nearly all) stay on the loop, where a thread hop would cost more than the work.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from django.conf import settings
from google.protobuf.message import Message as ProtoMessage

P = ParamSpec("P")
R = TypeVar("R")


def is_big(size: int) -> bool:
    return size > settings.A2A_THREAD_BODY_BYTES


async def off_loop(size: int, work: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """`work(*args, **kwargs)`, on a thread when `size` (the body's bytes) makes it big."""
    if not is_big(size):
        return work(*args, **kwargs)
    return await asyncio.to_thread(work, *args, **kwargs)


def size_of(result: object) -> int:
    """The bytes of a handler's result, as protobuf counts them (in C, without writing them);
    0 for anything else."""
    return result.ByteSize() if isinstance(result, ProtoMessage) else 0
