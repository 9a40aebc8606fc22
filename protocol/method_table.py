"""The map of the A2A API: each wire name, in each version, to the one handler behind it.

A 1.0 entry names the request message its params parse into; a 0.3 or 0.1 entry names the
adapter that turns its params into that same request and the answer back into its JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from importlib import import_module
from typing import Any

from a2a.types import a2a_pb2 as pb


@dataclass(frozen=True)
class Method:
    handler: str
    request: type[Any]
    streaming: bool = False
    adapter: str = ""  # 0.3 and 0.1 only: the converter in protocol.v03 or protocol.v01


V1_METHODS: dict[str, Method] = {
    "SendMessage": Method("protocol.handlers.tasks.send_message", pb.SendMessageRequest),
    "GetTask": Method("protocol.handlers.tasks.get_task", pb.GetTaskRequest),
    "ListTasks": Method("protocol.handlers.tasks.list_tasks", pb.ListTasksRequest),
    "CancelTask": Method("protocol.handlers.tasks.cancel_task", pb.CancelTaskRequest),
    "GetExtendedAgentCard": Method(
        "protocol.handlers.cards.get_extended_card", pb.GetExtendedAgentCardRequest
    ),
    "SendStreamingMessage": Method(
        "protocol.handlers.streams.send_streaming_message", pb.SendMessageRequest, streaming=True
    ),
    "SubscribeToTask": Method(
        "protocol.handlers.streams.subscribe_to_task", pb.SubscribeToTaskRequest, streaming=True
    ),
    "CreateTaskPushNotificationConfig": Method(
        "protocol.handlers.push.create_push_config", pb.TaskPushNotificationConfig
    ),
    "GetTaskPushNotificationConfig": Method(
        "protocol.handlers.push.get_push_config", pb.GetTaskPushNotificationConfigRequest
    ),
    "ListTaskPushNotificationConfigs": Method(
        "protocol.handlers.push.list_push_configs", pb.ListTaskPushNotificationConfigsRequest
    ),
    "DeleteTaskPushNotificationConfig": Method(
        "protocol.handlers.push.delete_push_config", pb.DeleteTaskPushNotificationConfigRequest
    ),
}


def adapted(name: str, adapter: str) -> Method:
    """The 1.0 method `name` under an older wire name, its params read by `adapter`."""
    return replace(V1_METHODS[name], adapter=adapter)


V03_METHODS: dict[str, Method] = {
    "message/send": adapted("SendMessage", "send"),
    "tasks/get": adapted("GetTask", "get"),
    "tasks/cancel": adapted("CancelTask", "cancel"),
    "agent/getAuthenticatedExtendedCard": adapted("GetExtendedAgentCard", "card"),
    "message/stream": adapted("SendStreamingMessage", "send"),
    "tasks/resubscribe": adapted("SubscribeToTask", "subscribe"),
    "tasks/pushNotificationConfig/set": adapted("CreateTaskPushNotificationConfig", "push_set"),
    "tasks/pushNotificationConfig/get": adapted("GetTaskPushNotificationConfig", "push_get"),
    "tasks/pushNotificationConfig/list": adapted("ListTaskPushNotificationConfigs", "push_list"),
    "tasks/pushNotificationConfig/delete": adapted(
        "DeleteTaskPushNotificationConfig", "push_delete"
    ),
}

# The methods of the first A2A guide (pre-0.2), served without a version header beside 0.3.
# `tasks/get`, `tasks/cancel` and `tasks/resubscribe` are 0.3 names too: `protocol.v01`
# tells which a request means.
V01_METHODS: dict[str, Method] = {
    "tasks/send": adapted("SendMessage", "send"),
    "tasks/sendSubscribe": adapted("SendStreamingMessage", "send"),
    "tasks/get": adapted("GetTask", "get"),
    "tasks/cancel": adapted("CancelTask", "cancel"),
    "tasks/resubscribe": adapted("SubscribeToTask", "subscribe"),
    "tasks/pushNotification/set": adapted("CreateTaskPushNotificationConfig", "push_set"),
    "tasks/pushNotification/get": adapted("GetTaskPushNotificationConfig", "push_get"),
}


@cache
def resolve(path: str) -> Any:
    module, _, name = path.rpartition(".")
    return getattr(import_module(module), name)
