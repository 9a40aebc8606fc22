"""The map of the A2A API: each wire name, in each version, to the one handler behind it.

A 1.0 entry names the request message its params parse into; a 0.3 or 0.1 entry names the
adapter that turns its params into that same request and the answer back into its JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
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

V03_METHODS: dict[str, Method] = {
    "message/send": Method(
        "protocol.handlers.tasks.send_message", pb.SendMessageRequest, adapter="send"
    ),
    "tasks/get": Method("protocol.handlers.tasks.get_task", pb.GetTaskRequest, adapter="get"),
    "tasks/cancel": Method(
        "protocol.handlers.tasks.cancel_task", pb.CancelTaskRequest, adapter="cancel"
    ),
    "agent/getAuthenticatedExtendedCard": Method(
        "protocol.handlers.cards.get_extended_card", pb.GetExtendedAgentCardRequest, adapter="card"
    ),
    "message/stream": Method(
        "protocol.handlers.streams.send_streaming_message",
        pb.SendMessageRequest,
        True,
        adapter="send",
    ),
    "tasks/resubscribe": Method(
        "protocol.handlers.streams.subscribe_to_task",
        pb.SubscribeToTaskRequest,
        True,
        adapter="subscribe",
    ),
    "tasks/pushNotificationConfig/set": Method(
        "protocol.handlers.push.create_push_config",
        pb.TaskPushNotificationConfig,
        adapter="push_set",
    ),
    "tasks/pushNotificationConfig/get": Method(
        "protocol.handlers.push.get_push_config",
        pb.GetTaskPushNotificationConfigRequest,
        adapter="push_get",
    ),
    "tasks/pushNotificationConfig/list": Method(
        "protocol.handlers.push.list_push_configs",
        pb.ListTaskPushNotificationConfigsRequest,
        adapter="push_list",
    ),
    "tasks/pushNotificationConfig/delete": Method(
        "protocol.handlers.push.delete_push_config",
        pb.DeleteTaskPushNotificationConfigRequest,
        adapter="push_delete",
    ),
}

# The methods of the first A2A guide (pre-0.2), served without a version header beside 0.3.
# `tasks/get`, `tasks/cancel` and `tasks/resubscribe` are 0.3 names too: `protocol.v01`
# tells which a request means.
V01_METHODS: dict[str, Method] = {
    "tasks/send": Method(
        "protocol.handlers.tasks.send_message", pb.SendMessageRequest, adapter="send"
    ),
    "tasks/sendSubscribe": Method(
        "protocol.handlers.streams.send_streaming_message",
        pb.SendMessageRequest,
        True,
        adapter="send",
    ),
    "tasks/get": Method("protocol.handlers.tasks.get_task", pb.GetTaskRequest, adapter="get"),
    "tasks/cancel": Method(
        "protocol.handlers.tasks.cancel_task", pb.CancelTaskRequest, adapter="cancel"
    ),
    "tasks/resubscribe": Method(
        "protocol.handlers.streams.subscribe_to_task",
        pb.SubscribeToTaskRequest,
        True,
        adapter="subscribe",
    ),
    "tasks/pushNotification/set": Method(
        "protocol.handlers.push.create_push_config",
        pb.TaskPushNotificationConfig,
        adapter="push_set",
    ),
    "tasks/pushNotification/get": Method(
        "protocol.handlers.push.get_push_config",
        pb.GetTaskPushNotificationConfigRequest,
        adapter="push_get",
    ),
}


@cache
def resolve(path: str) -> Any:
    module, _, name = path.rpartition(".")
    return getattr(import_module(module), name)
