"""The audit log of credential use: every call that passes the door is counted under its agent,
principal, credential, binding and version, in memory; the counts reach the database in one
write per row when the process flushes (its heartbeat does, every AUDIT_FLUSH_SECONDS), never
on the request path."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from oauth2_provider.models import AccessToken

from agents import audit
from agents.models import Access, Agent, ApiKey, CredentialKind, CredentialUse
from tests.door_client import Door
from tests.factories.agents import make_agent
from tests.factories.envelopes import envelope, url
from tests.factories.oauth import machine, token_for
from tests.factories.versions import V03, V1
from tests.protocol.callers import Caller

pytestmark = pytest.mark.usefixtures("door")

WRITES = ("INSERT", "UPDATE", "DELETE")


def ask(slug: str, version: str = V1, **headers: str) -> Any:
    """A GetTask of a task that does not exist: past the door, and it writes nothing itself."""
    if version == V1:
        headers["A2A-Version"] = V1
    body = envelope(version, "get", {"id": "no-such-task"})
    return Door().post(url(slug), body, content_type="application/json", headers=headers)


def writes_in(queries: CaptureQueriesContext) -> list[str]:
    return [
        q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith(WRITES)
    ]


def test_calls_are_written_as_one_row_with_their_count_when_the_process_flushes(
    caller: Caller, echo: Agent
) -> None:
    assert caller.key is not None
    for _ in range(3):
        assert ask("echo", **{"X-API-Key": caller.key}).status_code == 200
    assert not CredentialUse.objects.exists()

    assert audit.flush() == 1

    use = CredentialUse.objects.get()
    key = ApiKey.objects.get(name="caller")
    assert (use.agent, use.agent_slug, use.calls) == (echo, "echo", 3)
    assert (use.credential_kind, use.credential_ref, use.api_key) == (
        CredentialKind.API_KEY, f"apikey:{key.pk}", key)  # fmt: skip
    assert (use.principal, use.binding, use.version) == (caller.principal, "JSONRPC", V1)
    assert key.last_used_at == use.last_used_at


def test_no_call_writes_the_database_for_the_audit_log(caller: Caller, echo: Agent) -> None:
    assert caller.key is not None
    ask("echo", **{"X-API-Key": caller.key})  # the first call of the minute

    with CaptureQueriesContext(connection) as second:
        assert ask("echo", **{"X-API-Key": caller.key}).status_code == 200

    assert writes_in(second) == []
    assert ApiKey.objects.get(name="caller").last_used_at is None
    assert audit.pending_calls() == 2


def test_a_later_flush_adds_to_the_row_and_keeps_its_first_use(caller: Caller, echo: Agent) -> None:
    assert caller.key is not None
    ask("echo", **{"X-API-Key": caller.key})
    audit.flush()
    first = CredentialUse.objects.get()

    ask("echo", **{"X-API-Key": caller.key})
    ask("echo", **{"X-API-Key": caller.key})
    audit.flush()

    use = CredentialUse.objects.get()
    assert use.calls == 3
    assert use.first_used_at == first.first_used_at
    assert use.last_used_at > first.last_used_at


def test_a_client_credentials_token_is_logged_under_its_application_and_token() -> None:
    make_agent("vault", oauth2=True, access=Access.SIGNED_IN)
    app, secret = machine("robot")
    raw = token_for(app, secret)["access_token"]

    assert ask("vault", Authorization=f"Bearer {raw}").status_code == 200
    audit.flush()

    use = CredentialUse.objects.get()
    token = AccessToken.objects.get(application=app)
    assert (use.principal, use.credential_kind) == (f"app:{app.pk}", CredentialKind.OAUTH2_TOKEN)
    assert (use.application, use.token_id) == (app, token.pk)
    assert use.credential_ref == f"app:{app.pk}/token:{token.pk}"
    assert raw not in str(CredentialUse.objects.values().get())  # never the secret


def test_each_binding_and_version_has_its_own_row(caller: Caller, echo: Agent) -> None:
    assert caller.key is not None
    ask("echo", V1, **{"X-API-Key": caller.key})
    ask("echo", V03, **{"X-API-Key": caller.key})
    rest = Door().get(
        "/agents/echo/rest/tasks/no-such-task", headers={"X-API-Key": caller.key, "A2A-Version": V1}
    )
    assert rest.status_code == 404
    audit.flush()

    rows = CredentialUse.objects.values_list("binding", "version", "calls")
    assert sorted(rows) == [("HTTP+JSON", V1, 1), ("JSONRPC", V03, 1), ("JSONRPC", V1, 1)]


def test_anonymous_calls_to_an_open_agent_are_counted_too() -> None:
    make_agent("open")
    ask("open")
    audit.flush()

    use = CredentialUse.objects.get()
    assert (use.principal, use.credential_kind, use.credential_ref) == (
        "anonymous", CredentialKind.ANONYMOUS, "")  # fmt: skip


def test_refused_calls_are_not_counted(impostor: Caller, anonymous: Caller, echo: Agent) -> None:
    assert impostor.key is not None
    assert ask("echo", **{"X-API-Key": impostor.key}).status_code == 401
    assert ask("echo").status_code == 401

    assert audit.pending_calls() == 0


def test_rows_are_pruned_after_the_retention(caller: Caller, echo: Agent) -> None:
    assert caller.key is not None
    ask("echo", **{"X-API-Key": caller.key})
    audit.flush()
    old = CredentialUse.objects.get()
    CredentialUse.objects.filter(pk=old.pk).update(last_used_at=timezone.now() - timedelta(days=91))

    assert audit.prune(0) == 0  # 0 keeps the log forever
    assert audit.prune(90) == 1
    assert not CredentialUse.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_writes_the_counts_once_the_interval_has_passed(
    settings: Any, monkeypatch: pytest.MonkeyPatch, caller: Caller, echo: Agent
) -> None:
    assert caller.key is not None
    ask("echo", **{"X-API-Key": caller.key})
    settings.AUDIT_FLUSH_SECONDS = 3600
    monkeypatch.setattr(audit, "_last_flush", time.monotonic())  # this process just flushed
    on_a_beat()
    assert not CredentialUse.objects.exists()

    settings.AUDIT_FLUSH_SECONDS = 0.1
    threading.Event().wait(0.2)
    on_a_beat()

    assert CredentialUse.objects.get().calls == 1


def on_a_beat() -> None:
    """Run the hook as the heartbeat thread does: on a thread with its own connection."""
    beat = threading.Thread(target=audit.flush_due)
    beat.start()
    beat.join(timeout=30)


@pytest.mark.django_db(transaction=True)
def test_calls_to_an_agent_deleted_before_the_flush_are_dropped_and_the_rest_written(
    caller: Caller, echo: Agent
) -> None:
    assert caller.key is not None
    make_agent("doomed")
    ask("doomed")
    ask("echo", **{"X-API-Key": caller.key})
    Agent.objects.filter(slug="doomed").delete()

    audit.flush()

    assert list(CredentialUse.objects.values_list("agent_slug", "calls")) == [("echo", 1)]
    assert audit.pending_calls() == 0
