"""The protocol versions the hub serves, and each version's wire name for each method."""

from __future__ import annotations

V1 = "1.0"
V03 = "0.3"
VERSIONS = [V1, V03]

METHODS = {
    V1: {
        "send": "SendMessage",
        "stream": "SendStreamingMessage",
        "subscribe": "SubscribeToTask",
        "get": "GetTask",
        "list": "ListTasks",
        "cancel": "CancelTask",
        "card": "GetExtendedAgentCard",
        "create_config": "CreateTaskPushNotificationConfig",
        "get_config": "GetTaskPushNotificationConfig",
        "list_configs": "ListTaskPushNotificationConfigs",
        "delete_config": "DeleteTaskPushNotificationConfig",
    },
    V03: {
        "send": "message/send",
        "stream": "message/stream",
        "subscribe": "tasks/resubscribe",
        "get": "tasks/get",
        "cancel": "tasks/cancel",
        "card": "agent/getAuthenticatedExtendedCard",
        "create_config": "tasks/pushNotificationConfig/set",
        "get_config": "tasks/pushNotificationConfig/get",
        "list_configs": "tasks/pushNotificationConfig/list",
        "delete_config": "tasks/pushNotificationConfig/delete",
    },
}
