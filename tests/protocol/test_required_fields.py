"""A request misses a REQUIRED field for `protocol.required_fields` exactly when it does for
the SDK's `validate_proto_required_fields`, and is refused with the SDK's error: every request
type of the 1.0 service, whole, empty, and with each field anywhere in it cleared."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import InvalidParamsError
from a2a.utils.proto_utils import validate_proto_required_fields
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message as ProtoMessage
from google.protobuf.message_factory import GetMessageClass

from protocol import required_fields

SERVICE = pb.DESCRIPTOR.services_by_name["A2AService"]
REQUEST_TYPES = sorted({m.input_type.full_name: m.input_type for m in SERVICE.methods}.items())
SCALARS = {FieldDescriptor.TYPE_STRING: "x", FieldDescriptor.TYPE_BYTES: b"x",
           FieldDescriptor.TYPE_BOOL: True, FieldDescriptor.TYPE_DOUBLE: 1.5,
           FieldDescriptor.TYPE_FLOAT: 1.5}  # fmt: skip


def filled(message: Any, depth: int = 0) -> Any:
    """Every field of `message` set (a oneof's last member wins), nested messages too."""
    for field in message.DESCRIPTOR.fields:
        if field.message_type is not None:
            fill_message_field(message, field, depth)
        elif field.is_repeated:
            getattr(message, field.name).append(scalar(field))
        else:
            setattr(message, field.name, scalar(field))
    return message


def fill_message_field(message: Any, field: FieldDescriptor, depth: int) -> None:
    kind = field.message_type
    held = getattr(message, field.name)
    if kind.GetOptions().map_entry:
        value_field = kind.fields_by_name["value"]
        if value_field.message_type is None:
            held["k"] = scalar(value_field)
        elif depth < 4:
            filled(held["k"], depth + 1)
    elif kind.full_name == "google.protobuf.Struct":
        held.update({"k": "v"})
    elif kind.full_name.startswith("google.protobuf."):
        held.SetInParent()
    elif depth < 4:
        filled(held.add() if field.is_repeated else held, depth + 1)


def scalar(field: FieldDescriptor) -> Any:
    if field.type == FieldDescriptor.TYPE_ENUM:
        return field.enum_type.values[-1].number
    return SCALARS.get(field.type, 1)


def places(message: Any) -> Iterator[tuple[Any, str]]:
    """(message, field name) for every set field, nested ones included."""
    for field, value in message.ListFields():
        yield message, field.name
        if field.message_type is None or field.message_type.full_name.startswith("google."):
            continue
        if field.message_type.GetOptions().map_entry:
            continue
        for item in value if field.is_repeated else [value]:
            yield from places(item)


def variants() -> Iterator[tuple[str, ProtoMessage]]:
    for name, descriptor in REQUEST_TYPES:
        whole = filled(GetMessageClass(descriptor)())
        yield f"{name} whole", whole
        yield f"{name} empty", GetMessageClass(descriptor)()
        for index in range(len(list(places(whole)))):
            copy = type(whole)()
            copy.CopyFrom(whole)
            holder, field = list(places(copy))[index]
            holder.ClearField(field)
            yield f"{name} without #{index} ({field})", copy


def sdk_error(message: ProtoMessage) -> Any:
    try:
        validate_proto_required_fields(message)
    except InvalidParamsError as exc:
        return exc.data
    return None


@pytest.mark.parametrize("message", [v for _, v in variants()], ids=[n for n, _ in variants()])
def test_a_request_misses_a_required_field_exactly_when_the_sdk_says_so(
    message: ProtoMessage,
) -> None:
    expected = sdk_error(message)
    assert required_fields.misses_one(message, message.DESCRIPTOR) == (expected is not None)
    if expected is None:
        required_fields.check(message)
    else:
        with pytest.raises(InvalidParamsError) as refused:
            required_fields.check(message)
        assert refused.value.data == expected


def test_the_whole_requests_miss_nothing_and_some_cleared_fields_are_required() -> None:
    outcomes = [sdk_error(message) is None for _, message in variants()]
    assert True in outcomes and False in outcomes
