"""0.3 JSON straight from stored 1.0 JSON, for the shapes a stream sends most.

Every stored event is 1.0 JSON; a 0.3 stream needs each in the 0.3 shape. The official SDK's
way there (parse into protobuf, convert to its 0.3 models, dump them) costs about 40 us an
event, which on a five-chunk stream was a tenth of its CPU. Status updates, artifact updates
and tasks whose parts are text or files are mapped here directly, key by key; anything else
(data parts, which go through protobuf's Struct, or a field this table does not know) answers
None and the caller takes the SDK's way. A test holds both ways equal.
"""

from __future__ import annotations

from typing import Any

from tasks.models import TaskState

# 1.0 names a state TASK_STATE_INPUT_REQUIRED where 0.3 (and the hub) says input-required.
STATES = {f"TASK_STATE_{s.value.upper().replace('-', '_')}": s.value for s in TaskState}
ROLES = {"ROLE_USER": "user", "ROLE_AGENT": "agent"}
MESSAGE_KEYS = {"messageId", "role", "parts", "taskId", "contextId", "referenceTaskIds",
                "extensions", "metadata"}  # fmt: skip
ARTIFACT_KEYS = {"artifactId", "name", "description", "parts", "extensions", "metadata"}
STATUS_KEYS = {"state", "timestamp", "message"}
TASK_KEYS = {"id", "contextId", "status", "history", "artifacts", "metadata"}
FILE_KEYS = {"raw", "url", "filename", "mediaType", "metadata"}


class Unmapped(Exception):
    """A shape this module leaves to the SDK."""


def event(payload: dict[str, Any], final: bool) -> dict[str, Any] | None:
    """A stored 1.0 StreamResponse payload as 0.3 JSON; None when the SDK must do it."""
    try:
        if "statusUpdate" in payload:
            return status_update(payload["statusUpdate"], final)
        if "artifactUpdate" in payload:
            return artifact_update(payload["artifactUpdate"])
        if "task" in payload:
            return task(payload["task"])
    except (Unmapped, KeyError, TypeError, AttributeError):
        pass
    return None


def known(body: dict[str, Any], keys: set[str]) -> dict[str, Any]:
    if not body.keys() <= keys:
        raise Unmapped(body.keys() - keys)
    return body


def present(body: dict[str, Any], *keys: str) -> dict[str, Any]:
    """The members `keys` of `body` that it has: what 1.0 left out, 0.3 leaves out too."""
    return {key: body[key] for key in keys if key in body}


def status_update(update: dict[str, Any], final: bool) -> dict[str, Any]:
    known(update, {"taskId", "contextId", "status", "metadata"})
    out = {"contextId": update["contextId"], "final": final, "kind": "status-update",
           "status": status(update["status"]), "taskId": update["taskId"]}  # fmt: skip
    return out | present(update, "metadata")


def artifact_update(update: dict[str, Any]) -> dict[str, Any]:
    known(update, {"taskId", "contextId", "artifact", "append", "lastChunk", "metadata"})
    out = {"append": bool(update.get("append", False)),
           "artifact": artifact(update["artifact"]), "contextId": update["contextId"],
           "kind": "artifact-update", "lastChunk": bool(update.get("lastChunk", False)),
           "taskId": update["taskId"]}  # fmt: skip
    return out | present(update, "metadata")


def task(body: dict[str, Any]) -> dict[str, Any]:
    known(body, TASK_KEYS)
    out: dict[str, Any] = {"contextId": body["contextId"], "id": body["id"], "kind": "task",
                           "status": status(body["status"])}  # fmt: skip
    if "history" in body:
        out["history"] = [message(m) for m in body["history"]]
    if "artifacts" in body:
        out["artifacts"] = [artifact(a) for a in body["artifacts"]]
    return out | present(body, "metadata")


def status(body: dict[str, Any]) -> dict[str, Any]:
    known(body, STATUS_KEYS)
    out: dict[str, Any] = {"state": STATES[body["state"]], **present(body, "timestamp")}
    if "message" in body:
        out["message"] = message(body["message"])
    return out


def message(body: dict[str, Any]) -> dict[str, Any]:
    known(body, MESSAGE_KEYS)
    out = {"kind": "message", "messageId": body["messageId"], "role": ROLES[body["role"]],
           "parts": [part(p) for p in body["parts"]]}  # fmt: skip
    return out | present(body, "contextId", "taskId", "referenceTaskIds", "extensions", "metadata")


def artifact(body: dict[str, Any]) -> dict[str, Any]:
    known(body, ARTIFACT_KEYS)
    out = {"artifactId": body["artifactId"], "parts": [part(p) for p in body["parts"]]}
    return out | present(body, "name", "description", "extensions", "metadata")


def part(body: dict[str, Any]) -> dict[str, Any]:
    if "text" in body:
        known(body, {"text", "metadata", "mediaType"})
        if "mediaType" in body:
            raise Unmapped("mediaType")
        out: dict[str, Any] = {"kind": "text", "text": body["text"]}
    elif "raw" in body or "url" in body:
        known(body, FILE_KEYS)
        file = {"bytes": body["raw"]} if "raw" in body else {"uri": body["url"]}
        if "mediaType" in body:
            file["mimeType"] = body["mediaType"]
        if "filename" in body:
            file["name"] = body["filename"]
        out = {"file": file, "kind": "file"}
    else:
        raise Unmapped("part")
    return out | present(body, "metadata")
