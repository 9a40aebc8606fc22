"""A2A 0.1 JSON (the first guide's `tasks/send` era) from stored 1.0 JSON: the Task, its
status, messages, parts and artifacts, and the two kinds of stream event.

0.1 names a task by the id its client chose (`Task.client_id`), so whatever writes a task's
id is given it. The shapes have no context id but the Task's `sessionId`, no message or
artifact ids, `type` where later versions say `kind`, and artifacts numbered by `index`.
"""

from __future__ import annotations

from typing import Any

from tasks import v03_json
from tasks.v03_json import present
from tasks.wire import event_ends_stream

# 0.3's names, but for two states 0.1 has not: its guide has an agent that needs credentials
# ask for input (saying what to do in the status message), and a task an agent refused has
# failed.
STATES = v03_json.STATES | {
    "TASK_STATE_AUTH_REQUIRED": "input-required",
    "TASK_STATE_REJECTED": "failed",
}
ROLES = v03_json.ROLES


def task(body: dict[str, Any], client_id: str) -> dict[str, Any]:
    """A 1.0 Task as 0.1's. Empty lists are left out, as the guide's answers leave them; the
    `metadata` of the task, its messages and artifacts is always there, as in its examples."""
    out: dict[str, Any] = {"id": client_id, "sessionId": body.get("contextId", ""),
                           "status": status(body["status"])}  # fmt: skip
    if body.get("artifacts"):
        out["artifacts"] = [artifact(a, index) for index, a in enumerate(body["artifacts"])]
    if body.get("history"):
        out["history"] = [message(m) for m in body["history"]]
    out["metadata"] = body.get("metadata", {})
    return out


def reply_task(body: dict[str, Any], client_id: str) -> dict[str, Any]:
    """An agent's single Message (a later version's answer without a task) as the completed
    Task a 0.1 client expects, the message its status message. No task was stored."""
    done = {"state": "completed", "message": message(body)}
    return {"id": client_id, "sessionId": body.get("contextId", ""), "status": done,
            "metadata": {}}  # fmt: skip


def status(body: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"state": STATES.get(body.get("state", ""), "unknown")}
    if "message" in body:
        out["message"] = message(body["message"])
    return out | present(body, "timestamp")


def message(body: dict[str, Any]) -> dict[str, Any]:
    return {"role": ROLES.get(body.get("role", ""), "agent"),
            "parts": [part(p) for p in body.get("parts", [])],
            "metadata": body.get("metadata", {})}  # fmt: skip


def artifact(body: dict[str, Any], index: int) -> dict[str, Any]:
    out = present(body, "name", "description")
    out["parts"] = [part(p) for p in body.get("parts", [])]
    out["metadata"] = body.get("metadata", {})
    out["index"] = index
    return out


def part(body: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any]
    if "raw" in body or "url" in body:
        file = {"name": body["filename"]} if "filename" in body else {}
        if "mediaType" in body:
            file["mimeType"] = body["mediaType"]
        file |= {"bytes": body["raw"]} if "raw" in body else {"uri": body["url"]}
        out = {"type": "file", "file": file}
    elif "data" in body:
        data = body["data"]
        # 0.1 data is an object; other JSON goes in one, as the SDK's 0.3 conversion does.
        out = {"type": "data", "data": data if isinstance(data, dict) else {"value": data}}
    else:
        out = {"type": "text", "text": body.get("text", "")}
    return out | present(body, "metadata")


class Stream:
    """One stream's events as 0.1 spells them, in order. Stored events name an artifact by
    its id, 0.1 by its place in the task: the places are learned as the stream goes, from
    the task that opens a re-attached stream and from each artifact as it first appears."""

    def __init__(self, client_id: str) -> None:
        self.client_id = client_id
        self.places: dict[str, int] = {}

    def event(self, payload: dict[str, Any]) -> dict[str, Any]:
        if "statusUpdate" in payload:
            update = payload["statusUpdate"]
            return self.status_event(status(update["status"]), event_ends_stream(payload),
                                     update.get("metadata"))  # fmt: skip
        if "artifactUpdate" in payload:
            return self.artifact_event(payload["artifactUpdate"])
        if "task" in payload:
            # 0.1 streams carry no Task: the task a stream opens with says its status. Never
            # final: a stream goes on past it, even when the task waits for input.
            body = payload["task"]
            for index, stored in enumerate(body.get("artifacts", [])):
                self.places.setdefault(stored.get("artifactId", ""), index)
            return self.status_event(status(body["status"]), False)
        reply = reply_task(payload["message"], self.client_id)
        return self.status_event(reply["status"], True)

    def status_event(
        self, body: dict[str, Any], final: bool, metadata: Any = None
    ) -> dict[str, Any]:
        out = {"id": self.client_id, "status": body, "final": final}
        if metadata is not None:
            out["metadata"] = metadata
        return out

    def artifact_event(self, update: dict[str, Any]) -> dict[str, Any]:
        body = update["artifact"]
        index = self.places.setdefault(body.get("artifactId", ""), len(self.places))
        chunk = artifact(body, index)
        chunk["append"] = bool(update.get("append", False))
        chunk["lastChunk"] = bool(update.get("lastChunk", False))
        return {"id": self.client_id, "artifact": chunk, **present(update, "metadata")}
