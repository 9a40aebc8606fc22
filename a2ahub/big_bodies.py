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
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any, ParamSpec, TypeVar

from django.conf import settings
from google.protobuf.descriptor import FieldDescriptor
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


# Fields a message may have before it counts as big whatever its bytes: past this, walking
# it costs more than the thread hop it is walked to avoid.
MAX_FIELDS = 2000


def size_of(result: object) -> int:
    """About the bytes of a protobuf message (0 for anything else), counted only until they
    pass `A2A_THREAD_BODY_BYTES`: enough for `is_big`. protobuf's own `ByteSize()` writes
    the whole message to count it, which for a 10 MB body holds the event loop as long as
    serializing it would."""
    return size_of_all([result]) if isinstance(result, ProtoMessage) else 0


def size_of_all(messages: Iterable[ProtoMessage]) -> int:
    """`size_of` for several messages together (an artifact's parts, say)."""
    limit = settings.A2A_THREAD_BODY_BYTES
    pending = list(messages)
    size, fields = 0, len(pending)
    while pending:
        for field, value in pending.pop().ListFields():
            shape = shape_of(field)
            if shape == SINGLE:
                size += weight(value)
            elif shape == MESSAGE:
                pending.append(value)
            else:
                fields += len(value)
                if fields > MAX_FIELDS:
                    break
                size += gathered(shape, value, pending)
            fields += 1
            size += 2  # its tag and length
            if size > limit or fields > MAX_FIELDS:
                return max(size, limit + 1)
        if fields > MAX_FIELDS:
            return max(size, limit + 1)
    return size


def gathered(shape: int, value: Any, pending: list[ProtoMessage]) -> int:
    """The bytes of a repeated field's or a map's scalars; its messages go to `pending`."""
    if shape == SCALARS:
        return sum(weight(v) for v in value)
    if shape == MESSAGES:
        pending.extend(value)
        return 0
    keys = sum(weight(key) for key in value)  # a map (a Struct's fields, OAuth scopes)
    if shape == MESSAGE_MAP:
        pending.extend(value.values())
        return keys
    return keys + sum(weight(v) for v in value.values())


def weight(value: object) -> int:
    return len(value) if isinstance(value, str | bytes) else 8


SINGLE, MESSAGE, SCALARS, MESSAGES, SCALAR_MAP, MESSAGE_MAP = range(6)


@cache
def shape_of(field: FieldDescriptor) -> int:
    if field.type != FieldDescriptor.TYPE_MESSAGE:
        return SCALARS if field.is_repeated else SINGLE
    if not field.is_repeated:
        return MESSAGE
    if not field.message_type.GetOptions().map_entry:
        return MESSAGES
    value = field.message_type.fields_by_name["value"]
    return MESSAGE_MAP if value.type == FieldDescriptor.TYPE_MESSAGE else SCALAR_MAP
