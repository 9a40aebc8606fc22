"""Reading what the hub answered, in either version: results, errors and their ErrorInfo,
tasks and their texts; and the events it stored for a task."""

from __future__ import annotations

from typing import Any

from tasks.models import TaskEvent
from tests.factories.versions import V1

TERMINAL = {"completed", "canceled", "failed", "rejected"}


def result_of(response: Any) -> Any:
    assert response.status_code == 200, response.content
    body = response.json()
    assert "error" not in body, body
    return body["result"]


def error_of(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.content
    body = response.json()
    assert "result" not in body, body
    return body["error"]


def task_of(result: dict[str, Any], version: str) -> dict[str, Any]:
    """The Task in a send result: wrapped in 1.0 (`{"task": ...}`), bare with `kind` in 0.3."""
    if version == V1:
        assert set(result) == {"task"}, result
        return result["task"]
    assert result["kind"] == "task", result
    return result


def state_of(task: dict[str, Any]) -> str:
    """A Task's or a status update's state in the 0.3 spelling, whichever version sent it."""
    state: str = task["status"]["state"]
    return state.removeprefix("TASK_STATE_").lower().replace("_", "-")


def is_terminal(task: dict[str, Any]) -> bool:
    return state_of(task) in TERMINAL


def texts(item: dict[str, Any] | None) -> list[str]:
    """The text parts of a message or artifact of either version."""
    return [part["text"] for part in (item or {}).get("parts", []) if "text" in part]


def artifact_texts(task: dict[str, Any]) -> list[str]:
    return [text for artifact in task.get("artifacts", []) for text in texts(artifact)]


def error_info(error: dict[str, Any]) -> dict[str, Any]:
    """The google.rpc.ErrorInfo a 1.0 error carries first in its `data` list."""
    assert isinstance(error.get("data"), list) and error["data"], error
    info: dict[str, Any] = error["data"][0]
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo", info
    assert info["domain"] == "a2a-protocol.org", info
    return info


def field_of(error: dict[str, Any], version: str) -> str:
    """The one field an invalid-params error names: in the 1.0 ErrorInfo, in 0.3's `data`."""
    metadata = error_info(error)["metadata"] if version == V1 else error["data"]
    assert set(metadata) == {"field"}, error
    return str(metadata["field"])


def event_log(task_id: str) -> list[tuple[int, str, str]]:
    """(sequence, kind, state or "") of every stored event of the task, in order."""
    rows = TaskEvent.objects.filter(task_id=task_id).order_by("sequence")
    return [(e.sequence, e.kind, _state_in(e.payload)) for e in rows]


def _state_in(payload: dict[str, Any]) -> str:
    return str(payload.get("statusUpdate", {}).get("status", {}).get("state", ""))
