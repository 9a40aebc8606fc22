"""A handler's result as 1.0 JSON, the same for every binding that speaks 1.0."""

from __future__ import annotations

from typing import Any

from a2a.types import a2a_pb2 as pb

from agents import cards
from protocol.method_table import Method
from tasks.wire import V1, send_result_json, to_json


def v1_result(method: Method, result: Any) -> Any:
    if method.handler == "protocol.handlers.tasks.send_message":
        return send_result_json(result, V1)
    if method.handler == "protocol.handlers.cards.get_extended_card":
        return cards.card_document(result, cards.V1_0)
    if isinstance(result, pb.ListTasksResponse):
        # nextPageToken and totalSize are required even when empty or zero.
        listed = to_json(result)
        listed.setdefault("tasks", [])
        listed.setdefault("nextPageToken", "")
        listed.setdefault("totalSize", 0)
        listed.setdefault("pageSize", result.page_size)
        return listed
    if result is None:
        return {}
    return to_json(result)
