"""Credentials at the doors as a server runs them: through the hub's ASGI app, which on
PostgreSQL reads keys and tokens on the event loop's own connections rather than the ORM's
thread (on SQLite it takes the thread). The principals, the 401s and a key's last use must
come out the same on both (tests/protocol/test_oauth.py has the rest of the rules)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from oauth2_provider.models import AccessToken

from a2ahub import asyncdb
from agents import audit
from agents.models import Access, ApiKey, CredentialUse
from tests.factories.agents import make_agent
from tests.factories.envelopes import envelope
from tests.factories.oauth import machine, token_for, user_token
from tests.factories.versions import V1
from tests.protocol.test_asgi_app import Answer, call, in_db, scope

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@pytest.fixture
async def app() -> AsyncIterator[None]:
    yield
    await asyncdb.close()


def body(op: str, params: dict[str, Any] | None = None, **fields: Any) -> bytes:
    return json.dumps(envelope(V1, op, params, **fields)).encode()


async def rpc(slug: str, op: str, headers: dict[str, str], params: Any = None,
              **fields: Any) -> Answer:  # fmt: skip
    return await call(scope(slug, V1, **headers), [body(op, params, **fields)])


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def key(raw: str) -> dict[str, str]:
    return {"x-api-key": raw}


async def test_a_users_key_and_token_are_one_principal_and_an_application_is_another(
    app: None,
) -> None:
    def arrange() -> tuple[str, str, str]:
        make_agent("open-echo")
        alice = User.objects.create_user("alice")
        _, alice_key = ApiKey.issue("alice's key", owner=alice)
        robot, secret = machine("robot")
        robot_token = token_for(robot, secret)["access_token"]
        return alice_key, user_token(alice)["access_token"], robot_token

    alice_key, alice_token, robot_token = await in_db(arrange)

    sent = await rpc("open-echo", "send", key(alice_key), text="mine")
    assert sent.status == 200, sent.body
    task_id = sent.json()["result"]["task"]["id"]

    by_token = await rpc("open-echo", "get", bearer(alice_token), {"id": task_id})
    assert by_token.json()["result"]["id"] == task_id
    by_robot = await rpc("open-echo", "get", bearer(robot_token), {"id": task_id})
    assert by_robot.json()["error"]["code"] == -32001  # another principal: task not found
    robots = await rpc("open-echo", "send", bearer(robot_token), text="robot's")
    robot_task = robots.json()["result"]["task"]["id"]
    listed = await rpc("open-echo", "list", bearer(alice_token), {})
    assert [t["id"] for t in listed.json()["result"]["tasks"]] == [task_id]
    assert robot_task != task_id


async def test_unknown_revoked_and_expired_credentials_get_401_with_the_challenge(
    app: None,
) -> None:
    def arrange() -> tuple[str, str]:
        make_agent("guarded", access=Access.SIGNED_IN)
        owner = User.objects.create_user("bob")
        revoked, revoked_raw = ApiKey.issue("old key", owner=owner)
        revoked.revoked_at = timezone.now()
        revoked.save()
        robot, secret = machine("robot")
        token = token_for(robot, secret)["access_token"]
        AccessToken.objects.update(expires=timezone.now() - timedelta(seconds=1))
        return revoked_raw, token

    revoked_key, expired_token = await in_db(arrange)

    for headers, says in [
        (key("a2a_0123456789ab_not-a-key-at-all"), "not valid"),
        (key(revoked_key), "not valid"),
        (bearer("made-up-token"), "not valid"),
        (bearer(expired_token), "expired"),
        ({}, "needs credentials"),
    ]:
        answer = await rpc("guarded", "send", headers, text="hi")
        assert answer.status == 401, (headers, answer.body)
        assert says in answer.json()["error"]["message"]
        assert answer.headers["www-authenticate"].startswith(("ApiKey", "Bearer"))


async def test_calls_with_a_key_and_a_token_reach_the_audit_log_when_the_process_flushes(
    app: None,
) -> None:
    def arrange() -> tuple[int, str, int, str]:
        make_agent("open-echo")
        made, raw = ApiKey.issue("counted", owner=User.objects.create_user("carol"))
        robot, secret = machine("robot")
        return made.pk, raw, robot.pk, token_for(robot, secret)["access_token"]

    key_id, raw, robot_id, token = await in_db(arrange)
    for headers in (key(raw), key(raw), bearer(token)):
        assert (await rpc("open-echo", "send", headers, text="hi")).status == 200

    assert await in_db(lambda: ApiKey.objects.get(pk=key_id).last_used_at) is None
    await in_db(audit.flush)

    def uses() -> list[tuple[str, str, int]]:
        rows = CredentialUse.objects.filter(agent_slug="open-echo").order_by("credential_kind")
        return [(u.principal, u.credential_ref.split("/")[0], u.calls) for u in rows]

    owner = await in_db(lambda: ApiKey.objects.get(pk=key_id).owner_id)
    assert await in_db(uses) == [
        (f"user:{owner}", f"apikey:{key_id}", 2),
        (f"app:{robot_id}", f"app:{robot_id}", 1),
    ]
    assert await in_db(lambda: ApiKey.objects.get(pk=key_id).last_used_at) is not None


async def test_a_key_sent_only_as_a_bearer_token_counts_nowhere_but_where_the_card_names(
    app: None,
) -> None:
    def arrange() -> str:
        make_agent("guarded", access=Access.SIGNED_IN)
        return ApiKey.issue("k", owner=User.objects.create_user("dan"))[1]

    raw = await in_db(arrange)

    as_bearer = await rpc("guarded", "send", bearer(raw), text="hi")
    assert as_bearer.status == 401
    in_header = await rpc("guarded", "send", key(raw), text="hi")
    assert in_header.status == 200, in_header.body
