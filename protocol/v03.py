"""The A2A 0.3 adapter: 0.3 params in (validated by the SDK's 0.3 models), 1.0 requests to
the one set of handlers, 0.3 JSON out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pydantic
from a2a.compat.v0_3 import conversions
from a2a.compat.v0_3 import types as v03
from a2a.types import a2a_pb2 as pb

from a2ahub.errors import invalid_params
from a2ahub.numerals import INT32_MAX
from agents import cards
from protocol import file_bytes
from tasks.wire import V03, dump_v03, send_result_json, task_json


def validated(model: type[pydantic.BaseModel], params: dict[str, Any]) -> Any:
    try:
        return model.model_validate(params)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "params"
        raise invalid_params(where, first["msg"]) from None


def send_in(params: dict[str, Any]) -> pb.SendMessageRequest:
    parsed = validated(v03.MessageSendParams, params)
    file_bytes.check_v03_parts(parsed.message.parts)
    if parsed.configuration is not None:
        history_length_in_range(parsed.configuration.history_length, "configuration.historyLength")
    request = conversions.to_core_send_message_request(v03.SendMessageRequest(id=0, params=parsed))
    config = parsed.configuration
    # Here historyLength 0 means "no history" in both versions (the SDK reads 0.3's 0 as "all").
    if config is not None and config.history_length is not None:
        request.configuration.history_length = config.history_length
    return request


def get_in(params: dict[str, Any]) -> pb.GetTaskRequest:
    parsed = validated(v03.TaskQueryParams, params)
    history_length_in_range(parsed.history_length, "historyLength")
    request = pb.GetTaskRequest(id=parsed.id)
    if parsed.history_length is not None:
        request.history_length = parsed.history_length
    return request


def history_length_in_range(value: int | None, where: str) -> None:
    """protobuf's field is an int32: a larger number is refused here, not by the conversion
    (ValueError, -32603). A negative one is the handlers' to refuse, as in 1.0."""
    if value is not None and value > INT32_MAX:
        raise invalid_params(where, f"must be a whole number up to {INT32_MAX}")


def cancel_in(params: dict[str, Any]) -> pb.CancelTaskRequest:
    return pb.CancelTaskRequest(id=validated(v03.TaskIdParams, params).id)


def subscribe_in(params: dict[str, Any]) -> pb.SubscribeToTaskRequest:
    return pb.SubscribeToTaskRequest(id=validated(v03.TaskIdParams, params).id)


def push_set_in(params: dict[str, Any]) -> pb.TaskPushNotificationConfig:
    parsed = validated(v03.TaskPushNotificationConfig, params)
    return conversions.to_core_task_push_notification_config(parsed)


def push_get_in(params: dict[str, Any]) -> pb.GetTaskPushNotificationConfigRequest:
    if "pushNotificationConfigId" in params:
        named = validated(v03.GetTaskPushNotificationConfigParams, params)
        return pb.GetTaskPushNotificationConfigRequest(
            task_id=named.id, id=named.push_notification_config_id or ""
        )
    return pb.GetTaskPushNotificationConfigRequest(task_id=validated(v03.TaskIdParams, params).id)


def push_delete_in(params: dict[str, Any]) -> pb.DeleteTaskPushNotificationConfigRequest:
    parsed = validated(v03.DeleteTaskPushNotificationConfigParams, params)
    return pb.DeleteTaskPushNotificationConfigRequest(
        task_id=parsed.id, id=parsed.push_notification_config_id
    )


def push_config_out(config: pb.TaskPushNotificationConfig) -> dict[str, Any]:
    return dump_v03(conversions.to_compat_task_push_notification_config(config))


def card_in(params: dict[str, Any]) -> pb.GetExtendedAgentCardRequest:
    return pb.GetExtendedAgentCardRequest()


def card_out(card: pb.AgentCard) -> dict[str, Any]:
    return cards.card_document(card, cards.UNION)


PARAMS_IN: dict[str, Callable[[dict[str, Any]], Any]] = {
    "send": send_in,
    "get": get_in,
    "cancel": cancel_in,
    "card": card_in,
    "subscribe": subscribe_in,
    "push_set": push_set_in,
    "push_get": push_get_in,
    "push_list": lambda params: pb.ListTaskPushNotificationConfigsRequest(
        task_id=validated(v03.ListTaskPushNotificationConfigParams, params).id
    ),
    "push_delete": push_delete_in,
}

RESULT_OUT: dict[str, Callable[[Any], Any]] = {
    "send": lambda result: send_result_json(result, V03),
    "get": lambda task: task_json(task, V03),
    "cancel": lambda task: task_json(task, V03),
    "card": card_out,
    "push_set": push_config_out,
    "push_get": push_config_out,
    "push_list": lambda result: [push_config_out(c) for c in result.configs],
    "push_delete": lambda result: None,
}

__all__ = ["PARAMS_IN", "RESULT_OUT", "dump_v03"]
