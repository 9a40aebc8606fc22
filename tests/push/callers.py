"""A caller of the push config methods and of sends with an inline config, through the hub's
ASGI app in either version; and what the hub stored of the deliveries it made."""

from __future__ import annotations

import json
from typing import Any

from push.models import Delivery
from tests.door_client import Door
from tests.factories.envelopes import request_headers, rpc_body, url
from tests.factories.push import send_params
from tests.factories.versions import V1
from tests.push.receiver import Received


class Caller:
    """One client holding one API key, speaking JSON-RPC to the hosted agents."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.client = Door()

    def call(self, slug: str, version: str, op: str, params: dict[str, Any]) -> dict[str, Any]:
        """The whole JSON-RPC response object."""
        response = self.client.post(
            url(slug),
            data=json.dumps(rpc_body(version, op, params, request_id=7)),
            content_type="application/json",
            headers=request_headers(version, self.key),
        )
        assert response.status_code == 200, response.content
        answer: dict[str, Any] = response.json()
        return answer

    def result(self, slug: str, version: str, op: str, params: dict[str, Any]) -> Any:
        answer = self.call(slug, version, op, params)
        assert "error" not in answer, answer
        return answer["result"]

    def error(self, slug: str, version: str, op: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = self.call(slug, version, op, params)
        assert "result" not in answer, answer
        error: dict[str, Any] = answer["error"]
        return error

    def send(
        self, slug: str, version: str, text: str = "hello", push: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """A blocking send (with an inline push config when given); the Task it made."""
        result = self.result(slug, version, "send", send_params(version, text, push))
        if version == V1:
            task: dict[str, Any] = result["task"]
            return task
        assert result["kind"] == "task", result
        return dict(result)


def deliveries_of(task_id: str) -> list[Delivery]:
    return list(Delivery.objects.filter(config__task_id=task_id).order_by("sequence"))


def sequences_of(requests: list[Received]) -> list[int]:
    """The event sequence each request carried, from its webhook-id (the Delivery's id)."""
    by_id = {str(d.id): d.sequence for d in Delivery.objects.all()}
    return [by_id[r.header("webhook-id")] for r in requests]
