"""Stored stream events (a 1.0 StreamResponse as its protobuf JSON) as protobuf messages, for
the gRPC door.

json_format's ParseDict walks every field through its generic parser: 85 to 170 µs for one
event, most of a streamed turn's CPU in the gRPC process after the database's. The events the
hub stores are the JSON of a few message types, so each type gets a plan, made once from its
descriptor, of what each JSON member sets; a member or value outside the plan (a proto field
name, a null, a second member of a oneof, a type json_format would convert or refuse) sends
the whole event through ParseDict, so the answer is always ParseDict's.
"""

from __future__ import annotations

import base64
import datetime
import re
from collections.abc import Callable
from typing import Any

from a2a.types import a2a_pb2 as pb
from google.protobuf import struct_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.json_format import ParseDict

Step = Callable[[Any, Any], None]


class Unplanned(Exception):
    """A member the plan does not cover: ParseDict decides."""


def stream_response(event: dict[str, Any]) -> pb.StreamResponse:
    """The event's message, exactly as `ParseDict(event, StreamResponse(),
    ignore_unknown_fields=True)` makes it (and raising its ParseError where it does)."""
    try:
        return planned(event)
    except Exception:  # Unplanned, or a value upb refuses (a lone surrogate, say)
        return ParseDict(event, pb.StreamResponse(), ignore_unknown_fields=True)


def planned(event: dict[str, Any]) -> pb.StreamResponse:
    """The event's message by the plans alone (raising for anything they leave out)."""
    response = pb.StreamResponse()
    fill(response, event, plan_of(pb.StreamResponse.DESCRIPTOR))
    return response


def fill(message: Any, members: Any, plan: dict[str, Step]) -> None:
    if type(members) is not dict:
        raise Unplanned
    for key, value in members.items():
        step = plan.get(key)
        if step is None:
            raise Unplanned
        step(message, value)


PLANS: dict[str, dict[str, Step]] = {}


def plan_of(descriptor: Descriptor) -> dict[str, Step]:
    plan = PLANS.get(descriptor.full_name)
    if plan is None:
        plan = PLANS[descriptor.full_name] = {}  # before the fields: messages may nest
        for field in descriptor.fields:
            plan[field.json_name] = step_for(field)
    return plan


def step_for(field: FieldDescriptor) -> Step:
    name = field.name
    if field.is_repeated:
        return repeated_step(field)
    if field.message_type is not None:
        step = message_step(field)
    elif field.type == FieldDescriptor.TYPE_STRING:
        step = typed_step(name, str)
    elif field.type == FieldDescriptor.TYPE_BOOL:
        step = typed_step(name, bool)
    elif field.type == FieldDescriptor.TYPE_BYTES:
        step = bytes_step(name)
    elif field.type == FieldDescriptor.TYPE_ENUM:
        step = enum_step(field)
    else:
        step = unplanned
    if field.containing_oneof is None:
        return step
    return oneof_step(field.containing_oneof.name, step)


def unplanned(message: Any, value: Any) -> None:
    raise Unplanned


def typed_step(name: str, kind: type) -> Step:
    def step(message: Any, value: Any) -> None:
        if type(value) is not kind:
            raise Unplanned
        setattr(message, name, value)

    return step


def bytes_step(name: str) -> Step:
    def step(message: Any, value: Any) -> None:
        if type(value) is not str:
            raise Unplanned
        # As json_format reads bytes: base64 of either alphabet, padding optional.
        encoded = value.encode()
        setattr(message, name, base64.urlsafe_b64decode(encoded + b"=" * (4 - len(encoded) % 4)))

    return step


def enum_step(field: FieldDescriptor) -> Step:
    numbers = {value.name: value.number for value in field.enum_type.values}
    name = field.name

    def step(message: Any, value: Any) -> None:
        if type(value) is not str or value not in numbers:
            raise Unplanned
        setattr(message, name, numbers[value])

    return step


def oneof_step(oneof: str, inner: Step) -> Step:
    def step(message: Any, value: Any) -> None:
        if message.WhichOneof(oneof) is not None:
            raise Unplanned  # ParseDict refuses a second member of a oneof
        inner(message, value)

    return step


def message_step(field: FieldDescriptor) -> Step:
    kind = field.message_type.full_name
    if kind in WELL_KNOWN:
        return WELL_KNOWN[kind](field.name)
    if kind.startswith("google.protobuf."):
        return unplanned
    name, descriptor = field.name, field.message_type

    def nested(message: Any, value: Any) -> None:
        held = getattr(message, name)
        held.SetInParent()
        fill(held, value, plan_of(descriptor))

    return nested


def held_step(name: str, kind: type, put: Callable[[Any, Any], None]) -> Step:
    """A well-known message filled in place from a JSON value of one type: present even when
    the value is empty, as ParseDict makes it."""

    def step(message: Any, value: Any) -> None:
        if type(value) is not kind:
            raise Unplanned
        held = getattr(message, name)
        held.SetInParent()
        put(held, value)

    return step


def struct_step(name: str) -> Step:
    return held_step(name, dict, lambda held, value: held.update(value))


def value_step(name: str) -> Step:
    def step(message: Any, value: Any) -> None:
        holder = struct_pb2.Struct()
        holder.update({"v": value})  # any JSON value, as ParseDict reads it into a Value
        getattr(message, name).CopyFrom(holder.fields["v"])

    return step


def timestamp_step(name: str) -> Step:
    return held_step(name, str, set_timestamp)


WELL_KNOWN: dict[str, Callable[[str], Step]] = {
    "google.protobuf.Struct": struct_step,
    "google.protobuf.Value": value_step,
    "google.protobuf.Timestamp": timestamp_step,
}


# The form Timestamp.ToJsonString writes (UTC, 0 to 9 digits of a second): read without
# FromJsonString's strptime, a third of a status update's parse.
UTC_STAMP = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?Z")
EPOCH = datetime.datetime(1970, 1, 1)


def set_timestamp(held: Any, value: str) -> None:
    match = UTC_STAMP.fullmatch(value)
    if match is None:
        held.FromJsonString(value)  # an offset, say
        return
    year, month, day, hour, minute, second, fraction = match.groups()
    since = datetime.datetime(int(year), int(month), int(day), int(hour), int(minute),
                              int(second)) - EPOCH  # fmt: skip
    held.seconds = since.days * 86400 + since.seconds
    held.nanos = int(fraction.ljust(9, "0")) if fraction else 0


def repeated_step(field: FieldDescriptor) -> Step:
    name = field.name
    if field.message_type is None:
        if field.type != FieldDescriptor.TYPE_STRING:
            return unplanned

        def strings(message: Any, value: Any) -> None:
            if type(value) is not list or any(type(item) is not str for item in value):
                raise Unplanned
            getattr(message, name).extend(value)

        return strings
    if field.message_type.full_name.startswith("google.protobuf."):
        return unplanned
    descriptor = field.message_type

    def messages(message: Any, value: Any) -> None:
        if type(value) is not list:
            raise Unplanned
        held = getattr(message, name)
        plan = plan_of(descriptor)
        for item in value:
            fill(held.add(), item, plan)

    return messages
