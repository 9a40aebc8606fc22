"""A2A methods owned by the agents app: the authenticated extended card."""

from __future__ import annotations

from a2a.types import a2a_pb2 as pb
from asgiref.sync import sync_to_async

from a2ahub.errors import AuthenticationRequired, ExtendedAgentCardNotConfiguredError
from agents import cards
from agents.models import Skill
from agents.principals import challenge
from protocol.calls import Call


async def get_extended_card(call: Call, request: pb.GetExtendedAgentCardRequest) -> pb.AgentCard:
    if not call.agent.extended_card:
        raise ExtendedAgentCardNotConfiguredError("This agent has no extended card.")
    if call.principal.is_anonymous:
        raise AuthenticationRequired("The extended card needs credentials.", challenge(call.agent))

    # Only the skills the caller's token reaches (every skill for keys and sessions).
    def reaches(skill: Skill) -> bool:
        return call.principal.reaches_skill(call.agent, skill.skill_id)

    card, _ = await sync_to_async(cards.served_card)(call.agent, call.base_url, True, reaches)
    return card
