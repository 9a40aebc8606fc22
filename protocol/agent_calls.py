"""Calls from one hosted agent's turn to another (the `llm` kind's agent tools): a SendMessage
through the handlers, as the calling agent's principal, with the doors' checks that do not
read a request (the hop limit, the callee's access rule and skills, its rate and concurrency
limits). Registered as `executors.hub_calls.sender` when the app starts."""

from __future__ import annotations

import asyncio
import logging
import uuid
from contextlib import suppress

from a2a.types import a2a_pb2 as pb
from asgiref.sync import sync_to_async
from django.conf import settings

from a2ahub.errors import (
    AccessDenied,
    AuthenticationRequired,
    InvalidRequestError,
    TaskNotFoundError,
)
from agents import principals
from agents.lookup import find_agent
from agents.models import Agent
from agents.principals import Principal
from protocol import limits
from protocol.calls import Call
from protocol.handlers.tasks import send_message
from tasks import writer
from tasks.changes import TransitionRefused
from tasks.models import OPEN_STATES, Binding, Task

logger = logging.getLogger(__name__)

CALLER_LABEL = "agent {}"
CANCELED_WITH_CALLER = "The agent that called this one was canceled while it waited."


def principal_of(caller: Agent) -> Principal:
    """The calling agent, on behalf of its owner: an agent open only to listed users takes
    calls from the agents of the users it lists."""
    return Principal(
        f"agent:{caller.slug}", CALLER_LABEL.format(caller.slug), user_id=caller.owner_id
    )


def checked_callee(slug: str, principal: Principal, size: int) -> Agent:
    agent = find_agent(slug)
    if agent is None:
        raise TaskNotFoundError(f"No hosted agent is called {slug!r}.")
    try:
        principals.check_access(agent, principal)
    except (AuthenticationRequired, AccessDenied) as exc:
        raise InvalidRequestError(
            f"Agent {slug} does not take calls from this agent: {exc}"
        ) from None
    try:
        limits.check_size(agent, size)
        limits.check_rate(agent, principal.id)
        limits.check_concurrency(agent)
    except limits.LimitExceeded as exc:
        raise exc.error from None
    return agent


async def send(
    caller: Agent, slug: str, request: pb.SendMessageRequest, hops: int
) -> pb.Task | pb.Message:
    if hops > settings.A2A_MAX_HOPS:
        raise InvalidRequestError(
            f"This call would pass {hops} hops, more than the limit of {settings.A2A_MAX_HOPS} "
            "(A2A_MAX_HOPS): an agent that calls itself?"
        )
    principal = principal_of(caller)
    agent = await sync_to_async(checked_callee)(slug, principal, request.ByteSize())
    call = Call(
        agent=agent, principal=principal, version="1.0",
        base_url_of=lambda: str(settings.PUBLIC_BASE_URL), binding=Binding.JSONRPC, hops=hops,
    )  # fmt: skip
    if not request.message.context_id:
        # A context of the call's own: a canceled turn finds by it the task its call made.
        request.message.context_id = uuid.uuid4().hex
    try:
        return await send_message(call, request)
    except asyncio.CancelledError:
        try:
            await cancel_called_tasks(agent, principal, request.message.context_id)
        except Exception:  # the turn ends canceled all the same
            logger.warning("could not cancel the task %s's call made", principal.label,
                           exc_info=True)  # fmt: skip
        raise


async def cancel_called_tasks(agent: Agent, principal: Principal, context_id: str) -> None:
    """The calling turn was canceled while it waited on its call: the task the call made (if
    it was made) is canceled too, wherever it runs, rather than working on for nobody."""
    open_ids = await sync_to_async(open_tasks_of)(agent, principal.id, context_id)
    for task_id in open_ids:
        with suppress(TransitionRefused):  # it ended meanwhile
            await writer.cancel(task_id, principal.id, CANCELED_WITH_CALLER)


def open_tasks_of(agent: Agent, owner: str, context_id: str) -> list[str]:
    found = Task.objects.filter(
        agent=agent, owner=owner, context_id=context_id, state__in=OPEN_STATES
    )
    return [str(task_id) for task_id in found.values_list("id", flat=True)]
