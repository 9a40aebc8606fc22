"""The map of the A2A API: each wire name, in each version, to the one handler behind it.

A 1.0 entry names the request message its params parse into; a 0.3 entry names the adapter
that turns its params into that same request and the answer back into 0.3 JSON.
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
    adapter: str = ""  # 0.3 only: the converter in agents.v03


V1_METHODS: dict[str, Method] = {
    "SendMessage": Method("tasks.methods.send_message", pb.SendMessageRequest),
    "GetTask": Method("tasks.methods.get_task", pb.GetTaskRequest),
    "ListTasks": Method("tasks.methods.list_tasks", pb.ListTasksRequest),
    "CancelTask": Method("tasks.methods.cancel_task", pb.CancelTaskRequest),
    "GetExtendedAgentCard": Method(
        "agents.methods.get_extended_card", pb.GetExtendedAgentCardRequest
    ),
    "SendStreamingMessage": Method(
        "tasks.streams.send_streaming_message", pb.SendMessageRequest, streaming=True
    ),
    "SubscribeToTask": Method(
        "tasks.streams.subscribe_to_task", pb.SubscribeToTaskRequest, streaming=True
    ),
    "CreateTaskPushNotificationConfig": Method(
        "push.methods.create_push_config", pb.TaskPushNotificationConfig
    ),
    "GetTaskPushNotificationConfig": Method(
        "push.methods.get_push_config", pb.GetTaskPushNotificationConfigRequest
    ),
    "ListTaskPushNotificationConfigs": Method(
        "push.methods.list_push_configs", pb.ListTaskPushNotificationConfigsRequest
    ),
    "DeleteTaskPushNotificationConfig": Method(
        "push.methods.delete_push_config", pb.DeleteTaskPushNotificationConfigRequest
    ),
}

V03_METHODS: dict[str, Method] = {
    "message/send": Method("tasks.methods.send_message", pb.SendMessageRequest, adapter="send"),
    "tasks/get": Method("tasks.methods.get_task", pb.GetTaskRequest, adapter="get"),
    "tasks/cancel": Method("tasks.methods.cancel_task", pb.CancelTaskRequest, adapter="cancel"),
    "agent/getAuthenticatedExtendedCard": Method(
        "agents.methods.get_extended_card", pb.GetExtendedAgentCardRequest, adapter="card"
    ),
    "message/stream": Method(
        "tasks.streams.send_streaming_message", pb.SendMessageRequest, True, adapter="send"
    ),
    "tasks/resubscribe": Method(
        "tasks.streams.subscribe_to_task", pb.SubscribeToTaskRequest, True, adapter="subscribe"
    ),
    "tasks/pushNotificationConfig/set": Method(
        "push.methods.create_push_config", pb.TaskPushNotificationConfig, adapter="push_set"
    ),
    "tasks/pushNotificationConfig/get": Method(
        "push.methods.get_push_config", pb.GetTaskPushNotificationConfigRequest, adapter="push_get"
    ),
    "tasks/pushNotificationConfig/list": Method(
        "push.methods.list_push_configs",
        pb.ListTaskPushNotificationConfigsRequest,
        adapter="push_list",
    ),
    "tasks/pushNotificationConfig/delete": Method(
        "push.methods.delete_push_config",
        pb.DeleteTaskPushNotificationConfigRequest,
        adapter="push_delete",
    ),
}


@cache
def resolve(path: str) -> Any:
    module, _, name = path.rpartition(".")
    return getattr(import_module(module), name)
