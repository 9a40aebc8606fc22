"""The push notification config methods (create, get, list, delete) on 1.0 requests."""

from __future__ import annotations

import asyncio

from a2a.types import a2a_pb2 as pb
from asgiref.sync import sync_to_async
from google.protobuf import empty_pb2

from a2ahub import outbound
from a2ahub.errors import PushNotificationNotSupportedError, TaskNotFoundError
from protocol.calls import Call
from protocol.handlers.owned import owned_task, shown
from push.configs import check_config, create_config, public_view
from push.models import PushNotificationConfig

PAGE_SIZE = 100


def require_push(call: Call) -> None:
    if not call.agent.push_notifications:
        raise PushNotificationNotSupportedError("This agent does not send push notifications.")


async def create_push_config(
    call: Call, request: pb.TaskPushNotificationConfig
) -> pb.TaskPushNotificationConfig:
    require_push(call)
    await check_off_loop(request)

    def create() -> pb.TaskPushNotificationConfig:
        return public_view(create_config(owned_task(call, request.task_id), request, call.version))

    return await sync_to_async(create)()


async def get_push_config(
    call: Call, request: pb.GetTaskPushNotificationConfigRequest
) -> pb.TaskPushNotificationConfig:
    require_push(call)

    def get() -> pb.TaskPushNotificationConfig:
        configs = PushNotificationConfig.objects.filter(task=owned_task(call, request.task_id))
        # 0.3 clients may ask for "the" config of a task without naming it.
        row = configs.filter(config_id=request.id).first() if request.id else configs.first()
        if row is None:
            raise TaskNotFoundError(
                f"Task {shown(request.task_id)} has no push config {shown(request.id)}."
            )
        return public_view(row)

    return await sync_to_async(get)()


async def list_push_configs(
    call: Call, request: pb.ListTaskPushNotificationConfigsRequest
) -> pb.ListTaskPushNotificationConfigsResponse:
    require_push(call)

    def listed() -> pb.ListTaskPushNotificationConfigsResponse:
        task = owned_task(call, request.task_id)
        rows = PushNotificationConfig.objects.filter(task=task)[:PAGE_SIZE]
        return pb.ListTaskPushNotificationConfigsResponse(configs=[public_view(r) for r in rows])

    return await sync_to_async(listed)()


async def delete_push_config(
    call: Call, request: pb.DeleteTaskPushNotificationConfigRequest
) -> empty_pb2.Empty:
    """Deleting is idempotent: a config that is already gone is not an error."""
    require_push(call)

    def delete() -> None:
        task = owned_task(call, request.task_id)
        PushNotificationConfig.objects.filter(task=task, config_id=request.id).delete()

    await sync_to_async(delete)()
    return empty_pb2.Empty()


async def inline_push_config(
    call: Call, request: pb.SendMessageRequest
) -> pb.TaskPushNotificationConfig | None:
    if not request.configuration.HasField("task_push_notification_config"):
        return None
    config = request.configuration.task_push_notification_config
    require_push(call)
    await check_off_loop(config)
    return config


async def check_off_loop(config: pb.TaskPushNotificationConfig) -> None:
    """`check_config`, on a thread when its URL check looks the host up (DNS): every other
    request of the process waits while the loop does."""
    if outbound.looks_up(config.url):
        await asyncio.to_thread(check_config, config)
    else:
        check_config(config)
