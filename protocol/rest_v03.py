"""The 0.3 HTTP+JSON shapes: the 0.3 protobuf JSON (`a2a_v0_3.proto`) the 0.3 REST paths
(`/v1/...`) carry, turned into the 1.0 requests the handlers take and back, through the
SDK's 0.3 converters. The 0.3 JSON-RPC adapter (`protocol.v03`) validates what is left."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from a2a.compat.v0_3 import a2a_v0_3_pb2 as pb03
from a2a.compat.v0_3 import conversions
from a2a.compat.v0_3 import proto_utils as v03_proto
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP
from google.protobuf.json_format import MessageToDict, ParseDict, ParseError
from google.protobuf.message import Message as ProtoMessage

from a2ahub.errors import A2AError, invalid_params
from protocol.door import failed_field
from protocol.v03 import PARAMS_IN
from tasks.wire import ENDING_STATES, PB_TO_STATE


def parsed(body: dict[str, Any], message: ProtoMessage) -> Any:
    try:
        return ParseDict(body, message, ignore_unknown_fields=True)
    except ParseError as exc:
        raise invalid_params(failed_field(str(exc)), str(exc)) from None


def converted(field: str, convert: Callable[[], Any]) -> Any:
    """The SDK's 0.3 converters refuse what they cannot read with ValueError (a part with
    no content, say): that is the client's mistake, named as such."""
    try:
        return convert()
    except (ValueError, TypeError, KeyError) as exc:
        raise invalid_params(field, str(exc) or type(exc).__name__) from None


def send_in(body: dict[str, Any]) -> pb.SendMessageRequest:
    request = parsed(body, pb03.SendMessageRequest())
    if not request.HasField("request"):
        raise invalid_params("request", "a message is required")
    params = converted("request", lambda: v03_proto.FromProto.message_send_params(request))
    sent = PARAMS_IN["send"](params.model_dump(mode="json", by_alias=True, exclude_none=True))
    if asks_no_history(body):
        # 0.3's proto has no presence for historyLength: 0 came back from it as "not given".
        sent.configuration.history_length = 0
    return sent


def asks_no_history(body: dict[str, Any]) -> bool:
    configuration = body.get("configuration")
    if not isinstance(configuration, dict):
        return False
    asked = configuration.get("historyLength", configuration.get("history_length"))
    return asked in (0, "0") and asked is not False


def push_set_in(body: dict[str, Any], task_id: str) -> pb.TaskPushNotificationConfig:
    if is_bare_config(body):
        body = {"config": body}
    request = parsed(body, pb03.CreateTaskPushNotificationConfigRequest())
    # The task is the path's; a body's `parent` may be missing or name another.
    request.parent = f"tasks/{task_id}"
    compat = converted(
        "config", lambda: v03_proto.FromProto.task_push_notification_config_request(request)
    )
    return converted("config", lambda: conversions.to_core_task_push_notification_config(compat))


def is_bare_config(body: dict[str, Any]) -> bool:
    """Whether a create's body is the TaskPushNotificationConfig itself: the 0.3 proto's HTTP
    rule says `body: "config"`, which the JavaScript SDK follows, while the Python SDK sends
    the whole request (`{"config": {...}}`). The two share no field."""
    return "config" not in body and bool(BARE_CONFIG_FIELDS & body.keys())


BARE_CONFIG_FIELDS = frozenset({"name", "pushNotificationConfig", "push_notification_config"})


def send_out(result: pb.Task | pb.Message) -> dict[str, Any]:
    if isinstance(result, pb.Task):
        compat: Any = conversions.to_compat_task(result)
    else:
        compat = conversions.to_compat_message(result)
    return MessageToDict(v03_proto.ToProto.task_or_message(compat))


def task_out(task: pb.Task) -> dict[str, Any]:
    return MessageToDict(v03_proto.ToProto.task(conversions.to_compat_task(task)))


def push_config_out(config: pb.TaskPushNotificationConfig) -> dict[str, Any]:
    compat = conversions.to_compat_task_push_notification_config(config)
    return MessageToDict(v03_proto.ToProto.task_push_notification_config(compat))


def push_list_out(result: pb.ListTaskPushNotificationConfigsResponse) -> dict[str, Any]:
    configs = [push_config_out(config) for config in result.configs]
    # The 0.3 ListTaskPushNotificationConfigResponse's JSON, which leaves out an empty list.
    return {"configs": configs} if configs else {}


def stream_event_out(event: dict[str, Any]) -> dict[str, Any]:
    """A stored 1.0 StreamResponse as the 0.3 protobuf StreamResponse."""
    response = ParseDict(event, pb.StreamResponse())
    which = response.WhichOneof("payload")
    compat: Any
    if which == "task":
        compat = conversions.to_compat_task(response.task)
    elif which == "message":
        compat = conversions.to_compat_message(response.message)
    elif which == "artifact_update":
        compat = conversions.to_compat_task_artifact_update_event(response.artifact_update)
    else:
        compat = conversions.to_compat_task_status_update_event(response.status_update)
        # A 0.3 stream also ends on an interrupted task, so its last event says so.
        compat.final = PB_TO_STATE.get(response.status_update.status.state) in ENDING_STATES
    return MessageToDict(v03_proto.ToProto.stream_response(compat))


def error_fields(error: A2AError) -> dict[str, Any]:
    """What the 0.3 REST clients read of an error, beside the `google.rpc.Status`: the
    Python SDK maps `type` back to the error class of that name, the JavaScript SDK maps a
    numeric top-level `code` (the JSON-RPC one, -32001 for a task not found) with its
    `message`."""
    fields: dict[str, Any] = {
        "code": JSON_RPC_ERROR_CODE_MAP.get(type(error), -32603),
        "message": error.message,
    }
    if type(error) in JSON_RPC_ERROR_CODE_MAP:
        fields["type"] = type(error).__name__
    return fields
