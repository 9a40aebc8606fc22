"""A user's message: as protobuf (what the lifecycle stores and the SDK's clients send) and as
the JSON either protocol version puts on the wire."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from a2a.types import a2a_pb2 as pb

from tests.factories.versions import V1


def user_message(
    text: str = "hello",
    *,
    parts: Sequence[pb.Part] = (),
    message_id: str = "",
    task_id: str = "",
    context_id: str = "",
) -> pb.Message:
    """One text part (or `parts` instead); a fresh message id unless one is named."""
    message = pb.Message(
        message_id=message_id or uuid.uuid4().hex,
        role=pb.ROLE_USER,
        task_id=task_id,
        context_id=context_id,
    )
    if parts:
        message.parts.extend(parts)
    else:
        message.parts.add(text=text)
    return message


def text_part(version: str, text: str) -> dict[str, Any]:
    return {"text": text} if version == V1 else {"kind": "text", "text": text}


def wire_message(
    version: str, text: str, message_id: str = "", task_id: str = ""
) -> dict[str, Any]:
    """A user's message as `version` spells it; a fresh message id unless one is named."""
    message: dict[str, Any] = {"messageId": message_id or f"msg-{uuid.uuid4().hex}"}
    if version == V1:
        message |= {"role": "ROLE_USER", "parts": [text_part(version, text)]}
    else:
        message |= {"kind": "message", "role": "user", "parts": [text_part(version, text)]}
    if task_id:
        message["taskId"] = task_id
    return message
