"""The pre-0.2 adapter (the first A2A guide's `tasks/send` and friends): 0.1 params in, the
1.0 requests of the one set of handlers, 0.1 JSON out (`tasks.v01_json`).

A 0.1 client names each task itself (`params.id`): the handlers look its tasks up by that
id (`Task.client_id`, unique per caller and agent) and every answer says it again. These
requests come without `A2A-Version`, like 0.3's. `tasks/get`, `tasks/cancel` and
`tasks/resubscribe` are 0.3 names too; such a request is taken as 0.1 when it is in the old
form (a `sessionId`, or parts with `type`), or else when the caller has no task with that id
from the hub but has one it named so itself (`names_client_task`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from a2a.types import a2a_pb2 as pb

from a2ahub.errors import A2AError, error_object, invalid_params
from a2ahub.numerals import INT32_MAX
from protocol import file_bytes
from protocol.method_table import V01_METHODS, V03_METHODS, Method
from protocol.sse import Framing, frame
from push.configs import DEFAULT_ID
from tasks import v01_json
from tasks.models import Task
from tasks.wire import V01, V03, to_json

ROLES = {"user": pb.ROLE_USER, "agent": pb.ROLE_AGENT}
MAX_ID = Task._meta.get_field("client_id").max_length or 200
MAX_SESSION = Task._meta.get_field("context_id").max_length or 200


# -- which version a request without A2A-Version speaks --------------------------------------


def version_of(method: str, params: dict[str, Any], version: str) -> str:
    """0.1 for the methods only the guide has, and for the names it shares with 0.3 when the
    request is in the old form; otherwise `version` as the header said."""
    if version != V03 or method not in V01_METHODS:
        return version
    if method not in V03_METHODS or in_old_form(params):
        return V01
    return version


def in_old_form(params: dict[str, Any]) -> bool:
    message = params.get("message")
    parts = message.get("parts") if isinstance(message, dict) else None
    typed = isinstance(parts, list) and any(isinstance(p, dict) and "type" in p for p in parts)
    return "sessionId" in params or typed


def names_client_task(method: str, version: str) -> bool:
    """Whether a request that found no task may be a 0.1 one naming the task by its own id:
    a 0.3 request to a method the guide names alike. Tried after the hub's ids, so a 0.3
    request costs nothing more, and a task the hub named keeps its name for 0.3 callers."""
    return version == V03 and method in V01_METHODS


# -- params in ----------------------------------------------------------------------------------


def task_id_of(params: dict[str, Any]) -> str:
    value = params.get("id")
    if not isinstance(value, str) or not value:
        raise invalid_params("id", "must be the task's id, a non-empty string")
    if len(value) > MAX_ID:
        raise invalid_params("id", f"must be at most {MAX_ID} characters")
    return value


def history_length_of(params: dict[str, Any]) -> int:
    """0.1's default is no history at all."""
    value = params.get("historyLength")
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT32_MAX:
        raise invalid_params("historyLength", f"must be a whole number from 0 to {INT32_MAX}")
    return value


def object_at(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise invalid_params(where, "must be an object")
    return value


def member(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def string_at(parent: dict[str, Any], key: str, where: str, required: bool = False) -> str:
    value = parent.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value):
        raise invalid_params(member(where, key), "must be a string")
    return value


def add_metadata(target: Any, parent: dict[str, Any], where: str) -> None:
    if parent.get("metadata") is not None:
        target.metadata.update(object_at(parent["metadata"], member(where, "metadata")))


def part_in(value: Any, where: str) -> pb.Part:
    body = object_at(value, where)
    part = pb.Part()
    kind = body.get("type")
    if kind == "text":
        if not isinstance(body.get("text"), str):
            raise invalid_params(f"{where}.text", "must be a string")
        part.text = body["text"]
    elif kind == "file":
        file_in(part, object_at(body.get("file"), f"{where}.file"), f"{where}.file")
    elif kind == "data":
        part.data.struct_value.update(object_at(body.get("data"), f"{where}.data"))
    else:
        raise invalid_params(f"{where}.type", 'must be "text", "file" or "data"')
    add_metadata(part, body, where)
    return part


def file_in(part: pb.Part, file: dict[str, Any], where: str) -> None:
    # The guide's own examples spell the content `data`: taken as `bytes` when nothing else.
    key = "data" if file.get("bytes") is None and file.get("uri") is None else "bytes"
    content = [k for k in (key, "uri") if file.get(k) is not None]
    if len(content) != 1:
        raise invalid_params(where, 'needs exactly one of "bytes" or "uri"')
    if content[0] == "uri":
        part.url = string_at(file, "uri", where, required=True)
    else:
        data = file_bytes.strictly(string_at(file, key, where), url_safe=False, padded=True)
        if data is None:
            raise invalid_params(f"{where}.{key}", file_bytes.NOT_BASE64)
        part.raw = data
    part.filename = string_at(file, "name", where)
    part.media_type = string_at(file, "mimeType", where)


def message_in(value: Any) -> pb.Message:
    body = object_at(value, "message")
    role = body.get("role")
    if not isinstance(role, str) or role not in ROLES:
        raise invalid_params("message.role", 'must be "user" or "agent"')
    # The guide's first example names the parts `data`: taken as them when there are no parts.
    key = "data" if "parts" not in body and isinstance(body.get("data"), list) else "parts"
    parts = body.get(key)
    if not isinstance(parts, list) or not parts:
        raise invalid_params(f"message.{key}", "must hold at least one part")
    # 0.1 messages have no id; the hub's records need one.
    message = pb.Message(message_id=uuid.uuid4().hex, role=ROLES[role])
    message.parts.extend(part_in(p, f"message.{key}[{i}]") for i, p in enumerate(parts))
    add_metadata(message, body, "message")
    return message


def push_config_in(value: Any, where: str, task_id: str) -> pb.TaskPushNotificationConfig:
    """0.1 has one webhook a task: setting it again replaces it."""
    body = object_at(value, where)
    config = pb.TaskPushNotificationConfig(
        task_id=task_id, id=DEFAULT_ID, url=string_at(body, "url", where, required=True),
        token=string_at(body, "token", where),
    )  # fmt: skip
    if body.get("authentication") is not None:
        auth = object_at(body["authentication"], f"{where}.authentication")
        schemes = auth.get("schemes", [])
        if not isinstance(schemes, list) or not all(isinstance(s, str) for s in schemes):
            raise invalid_params(f"{where}.authentication.schemes", "must be a list of strings")
        # One scheme in 1.0, as the SDK's 0.3 conversion takes it: the first.
        config.authentication.scheme = schemes[0] if schemes else ""
        credentials = string_at(auth, "credentials", f"{where}.authentication")
        config.authentication.credentials = credentials
    return config


def send_in(params: dict[str, Any]) -> pb.SendMessageRequest:
    task_id = task_id_of(params)
    message = message_in(params.get("message"))
    message.task_id = task_id
    message.context_id = string_at(params, "sessionId", "")
    if len(message.context_id) > MAX_SESSION:
        raise invalid_params("sessionId", f"must be at most {MAX_SESSION} characters")
    request = pb.SendMessageRequest(message=message)
    request.configuration.history_length = history_length_of(params)
    modes = params.get("acceptedOutputModes") or []
    if not isinstance(modes, list) or not all(isinstance(m, str) for m in modes):
        raise invalid_params("acceptedOutputModes", "must be a list of media types")
    request.configuration.accepted_output_modes.extend(modes)
    if params.get("pushNotification") is not None:
        config = push_config_in(params["pushNotification"], "pushNotification", task_id)
        request.configuration.task_push_notification_config.CopyFrom(config)
    add_metadata(request, params, "")
    return request


def get_in(params: dict[str, Any]) -> pb.GetTaskRequest:
    return pb.GetTaskRequest(id=task_id_of(params), history_length=history_length_of(params))


def push_set_in(params: dict[str, Any]) -> pb.TaskPushNotificationConfig:
    config = params.get("pushNotificationConfig")
    return push_config_in(config, "pushNotificationConfig", task_id_of(params))


PARAMS_IN: dict[str, Callable[[dict[str, Any]], Any]] = {
    "send": send_in,
    "get": get_in,
    "cancel": lambda params: pb.CancelTaskRequest(id=task_id_of(params)),
    "subscribe": lambda params: pb.SubscribeToTaskRequest(id=task_id_of(params)),
    "push_set": push_set_in,
    "push_get": lambda params: pb.GetTaskPushNotificationConfigRequest(
        task_id=task_id_of(params), id=DEFAULT_ID
    ),
}


# -- results out --------------------------------------------------------------------------------


def send_out(result: pb.Task | pb.Message, client_id: str) -> dict[str, Any]:
    if isinstance(result, pb.Message):
        return v01_json.reply_task(to_json(result), client_id)
    return v01_json.task(to_json(result), client_id)


def push_config_out(config: pb.TaskPushNotificationConfig, client_id: str) -> dict[str, Any]:
    """The webhook without its token or credentials: they are never shown again."""
    shown: dict[str, Any] = {"url": config.url}
    if config.authentication.scheme:
        shown["authentication"] = {"schemes": [config.authentication.scheme]}
    return {"id": client_id, "pushNotificationConfig": shown}


RESULT_OUT: dict[str, Callable[[Any, str], Any]] = {
    "send": send_out,
    "get": lambda task, client_id: v01_json.task(to_json(task), client_id),
    "cancel": lambda task, client_id: v01_json.task(to_json(task), client_id),
    "push_set": push_config_out,
    "push_get": push_config_out,
}


def render(method: Method, result: Any, params: dict[str, Any]) -> Any:
    """The answer under the id the request named (the params were checked on the way in)."""
    return RESULT_OUT[method.adapter](result, params["id"])


def framing(request_id: Any, params: dict[str, Any]) -> Framing:
    """A stream's frames: JSON-RPC responses holding 0.1 events, under the request's id."""
    stream = v01_json.Stream(params["id"])

    def error(exc: A2AError) -> bytes:
        return frame(request_id, None, {"error": error_object(exc, V01)})

    return Framing(
        event=lambda sequence, event: frame(request_id, sequence, {"result": stream.event(event)}),
        error=error,
    )
