"""OAuth2 on the real stack: the official a2a-sdk client, holding a client-credentials token
from the hub's token endpoint (found through the card's `oauth2` scheme and its metadata URL),
calls the demo agent `secure` through every door; without a token it gets 401, with a token
lacking the scope 403, with a revoked or expired token 401. Another application finds none
of the first one's tasks."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from a2a.utils.errors import TaskNotFoundError

from tests.factories.messages import user_message
from tests.integration.applications import application
from tests.integration.clients import DOORS, Door, a2a_client, get, send, texts
from tests.integration.stack import Hub

pytestmark = pytest.mark.integration
every_door = pytest.mark.parametrize("door", DOORS, ids=str)


def token_endpoint(base: str) -> str:
    """Where the card of `secure` says tokens come from: its scheme's metadata URL, then
    the RFC 8414 document's token endpoint."""
    card = httpx.get(f"{base}/agents/secure/.well-known/agent-card.json",
                     headers={"A2A-Version": "1.0"}).json()  # fmt: skip
    scheme = card["securitySchemes"]["oauth2"]["oauth2SecurityScheme"]
    metadata = httpx.get(scheme["oauth2MetadataUrl"]).json()
    assert scheme["flows"]["clientCredentials"]["tokenUrl"] == metadata["token_endpoint"]
    endpoint: str = metadata["token_endpoint"]
    return endpoint


def client_token(base: str, client: tuple[str, str], scope: str | None = None) -> str:
    data = {"grant_type": "client_credentials"} | ({"scope": scope} if scope else {})
    answer = httpx.post(token_endpoint(base), data=data, auth=client)
    assert answer.status_code == 200, answer.text
    token: str = answer.json()["access_token"]
    return token


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def http_status(exc: BaseException) -> int | None:
    """The HTTP status behind a client error (the SDK wraps httpx's)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, httpx.HTTPStatusError):
            return seen.response.status_code
        seen = seen.__cause__ or seen.__context__
    return None


async def refused_with(base: str, door: Door, headers: dict[str, str]) -> int | None:
    async with a2a_client(base, "secure", *door, headers=headers) as client:
        try:
            await send(client, user_message("let me in"))
        except Exception as exc:
            return http_status(exc)
    return 200


@pytest.fixture(scope="module")
def robot(hub: Hub) -> tuple[str, str]:
    return application(hub, "robot")


@every_door
def test_a_client_credentials_token_calls_the_oauth2_agent(
    hub: Hub, robot: tuple[str, str], door: Door
) -> None:
    token = client_token(hub.web_a, robot)

    async def scenario() -> Any:
        async with a2a_client(hub.web_a, "secure", *door, headers=bearer(token)) as client:
            task = await send(client, user_message(f"secured over {door}"))
        async with a2a_client(hub.web_b, "secure", *door, headers=bearer(token)) as reader:
            return task, await get(reader, task.id)

    task, read = asyncio.run(scenario())
    assert [texts(a.parts) for a in task.artifacts] == [[f"secured over {door}"]]
    assert read.id == task.id
    owners = hub.query("SELECT owner FROM tasks_task WHERE id = %s", (task.id,))
    assert owners == [(owners[0][0],)] and owners[0][0].startswith("app:")


@every_door
def test_without_a_valid_token_or_scope_the_agent_refuses(
    hub: Hub, robot: tuple[str, str], door: Door
) -> None:
    narrow = client_token(hub.web_a, robot, scope="agent:echo")
    revoked = client_token(hub.web_a, robot)
    revoking = httpx.post(f"{hub.web_a}/o/revoke_token/", data={"token": revoked}, auth=robot)
    expired = client_token(hub.web_a, robot)
    hub.query(
        "UPDATE oauth2_provider_accesstoken SET expires = now() - interval '1 second' "
        "WHERE token_checksum = encode(sha256(%s::bytea), 'hex') RETURNING id",
        (expired,),
    )

    async def scenario() -> list[int | None]:
        return [
            await refused_with(hub.web_b, door, headers)
            for headers in ({}, bearer(narrow), bearer(revoked), bearer(expired))
        ]

    assert revoking.status_code == 200
    assert asyncio.run(scenario()) == [401, 403, 401, 401]


@every_door
def test_another_application_never_finds_the_first_ones_task(
    hub: Hub, robot: tuple[str, str], door: Door
) -> None:
    other = application(hub, f"other-{door}")
    mine, theirs = client_token(hub.web_a, robot), client_token(hub.web_a, other)

    async def scenario() -> None:
        async with a2a_client(hub.web_a, "secure", *door, headers=bearer(mine)) as client:
            task = await send(client, user_message("mine alone"))
        async with a2a_client(hub.web_b, "secure", *door, headers=bearer(theirs)) as stranger:
            with pytest.raises(TaskNotFoundError):
                await get(stranger, task.id)

    asyncio.run(scenario())
