"""The "try it" box: one SendMessage from the signed-in owner, run by the endpoint's handler.

The page posts to its own view (session and CSRF, like every other form here) and the view
calls the same method-table entry, parser and renderer as the JSON-RPC endpoint, as the
principal `user:<id>` (the user's session), once the agent's access rule lets that session
in: an agent that requires an OAuth2 token does not, even for its owner. No API key is
minted or shown to the page, and the hub never makes an HTTP request to itself (which the
outbound guard refuses and a one-process hub could block on).
"""

from __future__ import annotations

import uuid
from functools import partial
from typing import Any

from a2a.types import a2a_pb2 as pb
from asgiref.sync import sync_to_async
from django.http import HttpRequest

from a2ahub.errors import (
    A2AError,
    AccessDenied,
    AuthenticationRequired,
    error_object,
    internal_error,
)
from agents import principals
from agents.models import Agent
from agents.views import public_base_url
from protocol import strings
from protocol.calls import Call
from protocol.door import check_extensions
from protocol.jsonrpc import find_method, parse_params, render_result
from protocol.method_table import resolve
from tasks.models import Binding
from tasks.wire import PB_TO_STATE, V1

METHOD = "SendMessage"


async def send_as_owner(request: HttpRequest, agent: Agent, text: str) -> dict[str, Any]:
    """The reply as the page shows it: state, texts, and the full 1.0 result."""
    user = await request.auser()
    method = find_method(METHOD, V1)
    params = {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER",
                          "parts": [{"text": text}]}}  # fmt: skip
    principal = principals.session_of(user)
    try:
        # The agent's one access rule, as its doors apply it to this session.
        await sync_to_async(principals.check_access)(agent, principal)
    except (AuthenticationRequired, AccessDenied) as exc:
        return {"ok": False, "error": {"message": exc.message}}
    try:
        strings.check_params(params)  # a NUL typed in the box, as at the endpoint
        extensions = check_extensions(request.headers, agent, sending=True)
        call = Call(agent, principal, V1, partial(public_base_url, request), extensions,
                    binding=Binding.PAGE)  # fmt: skip
        result = await resolve(method.handler)(call, parse_params(method, params, V1))
    except A2AError as exc:
        return {"ok": False, "error": error_object(exc, V1)}
    except Exception as exc:
        return {"ok": False, "error": error_object(internal_error(exc), V1)}
    return {"ok": True, **summary(result), "result": render_result(method, result, V1)}


def summary(result: pb.Task | pb.Message) -> dict[str, Any]:
    if isinstance(result, pb.Message):
        return {"state": "message", "taskId": "", "text": parts_text(result.parts)}
    state = PB_TO_STATE.get(result.status.state)
    artifacts = [parts_text(artifact.parts) for artifact in result.artifacts]
    return {
        "state": str(state.value) if state else "unknown",
        "taskId": result.id,
        "text": "\n".join(filter(None, artifacts)),
        "statusText": parts_text(result.status.message.parts),
    }


def parts_text(parts: Any) -> str:
    return "\n".join(part.text for part in parts if part.HasField("text"))
