"""A task's history as a Chat Completions conversation, and a tool's answer as text.

User messages become `user` turns and agent messages `assistant` turns, in order. Text parts
are text; image files (inline bytes or a URL) are image inputs; data parts are their JSON;
other files are named, not sent.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from a2a.types import a2a_pb2 as pb
from google.protobuf.json_format import MessageToDict


def part_content(part: pb.Part) -> dict[str, Any] | None:
    which = part.WhichOneof("content")
    media = part.media_type or ""
    if which == "text":
        return {"type": "text", "text": part.text}
    if which == "data":
        data = MessageToDict(part.data)
        return {"type": "text", "text": json.dumps(data, ensure_ascii=False)}
    if which in ("raw", "url") and media.startswith("image/"):
        if which == "url":
            url = part.url
        else:
            url = f"data:{media};base64,{base64.b64encode(part.raw).decode()}"
        return {"type": "image_url", "image_url": {"url": url}}
    if which in ("raw", "url"):
        name = part.filename or (part.url if which == "url" else "") or "unnamed"
        return {"type": "text", "text": f"[file {name} ({media or 'unknown type'}), not shown]"}
    return None


def chat_message(message: pb.Message) -> dict[str, Any] | None:
    contents = [c for c in map(part_content, message.parts) if c is not None]
    if not contents:
        return None
    if message.role == pb.ROLE_AGENT:
        # Assistant turns take text only.
        text = "\n".join(c["text"] for c in contents if c["type"] == "text")
        return {"role": "assistant", "content": text}
    if all(c["type"] == "text" for c in contents):
        return {"role": "user", "content": "\n".join(c["text"] for c in contents)}
    return {"role": "user", "content": contents}


def conversation(instructions: str, history: list[pb.Message]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if instructions:
        messages.append({"role": "system", "content": instructions})
    for message in history:
        turn = chat_message(message)
        if turn is not None:
            messages.append(turn)
    return messages


def answer_text(answer: pb.Task | pb.Message) -> str:
    """What a hosted agent answered, as the text the model reads."""
    if isinstance(answer, pb.Message):
        return parts_text(answer.parts)
    pieces = [parts_text(artifact.parts) for artifact in answer.artifacts]
    state = pb.TaskState.Name(answer.status.state).removeprefix("TASK_STATE_").lower()
    status = parts_text(answer.status.message.parts) if answer.status.HasField("message") else ""
    text = "\n".join(p for p in pieces if p)
    if state != "completed" or not text:
        text = f"{text}\n(task {state}{': ' + status if status else ''})".strip()
    return text


def parts_text(parts: Any) -> str:
    found = []
    for part in parts:
        content = part_content(part)
        if content is not None and content["type"] == "text":
            found.append(content["text"])
        elif content is not None:
            found.append(f"[image {part.filename or ''}]".replace(" ]", "]"))
    return "\n".join(found)
