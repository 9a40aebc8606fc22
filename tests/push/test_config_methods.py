"""The push config methods of both versions (1.0 Create/Get/List/DeleteTaskPushNotificationConfig,
0.3 tasks/pushNotificationConfig/set|get|list|delete) and inline configs on send: what a client
may do with its own tasks' webhooks, and that the secrets it gave never come back."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from a2ahub import outbound
from agents.models import Agent
from push.models import PushNotificationConfig
from tests.factories.envelopes import UNKNOWN_TASK
from tests.factories.errors import invalid_params
from tests.factories.push import (
    CREDENTIALS,
    TOKEN,
    create_params,
    named_params,
    send_params,
    webhook,
)
from tests.factories.versions import V1, VERSIONS
from tests.push.callers import Caller

pytestmark = pytest.mark.django_db

PUBLIC_URL = "https://receiver.example.com/hooks/a2a"
# How the outbound guard ends each refusal of an address.
PUBLIC_ONLY = (
    "; the hub only sends requests to public addresses "
    "(OUTBOUND_ALLOWED_HOSTS opens a host for development)"
)


def configs_in(result: Any, version: str) -> list[dict[str, Any]]:
    """The configs of a list answer: 1.0 wraps them in `configs`, 0.3 answers a bare list."""
    if version == V1:
        configs: list[dict[str, Any]] = result.get("configs", [])
        return configs
    return list(result)


def config_id_of(config: dict[str, Any], version: str) -> str:
    if version == V1:
        return str(config["id"])
    return str(config["pushNotificationConfig"]["id"])


def url_of(config: dict[str, Any], version: str) -> str:
    if version == V1:
        return str(config["url"])
    return str(config["pushNotificationConfig"]["url"])


def assert_no_secrets(answer: Any) -> None:
    text = json.dumps(answer)
    assert TOKEN not in text
    assert CREDENTIALS not in text


@pytest.fixture
def task_id(caller: Caller, pusher: Agent) -> str:
    # A completed task: configs may still be set on it, and nothing is ever delivered to them.
    return str(caller.send("pusher", V1)["id"])


@pytest.mark.parametrize("version", VERSIONS)
def test_create_without_an_id_gets_one_and_answers_without_secrets(
    caller: Caller, task_id: str, version: str
) -> None:
    answer = caller.call("pusher", version, "create_config", create_params(
        version, task_id, webhook(version, PUBLIC_URL)))  # fmt: skip

    assert "result" in answer, answer
    assert config_id_of(answer["result"], version)
    assert url_of(answer["result"], version) == PUBLIC_URL
    assert_no_secrets(answer)
    stored = PushNotificationConfig.objects.get(task_id=task_id)
    assert (stored.token, stored.auth_credentials) == (TOKEN, CREDENTIALS)


@pytest.mark.parametrize("version", VERSIONS)
def test_get_list_and_delete_work_on_a_named_config(
    caller: Caller, task_id: str, version: str
) -> None:
    params = create_params(version, task_id, webhook(version, PUBLIC_URL, id="mine"))
    caller.result("pusher", version, "create_config", params)

    got = caller.call("pusher", version, "get_config", named_params(version, task_id, "mine"))
    listed = caller.call("pusher", version, "list_configs", named_params(version, task_id))
    deleted = caller.call(
        "pusher", version, "delete_config", named_params(version, task_id, "mine")
    )
    after = caller.result("pusher", version, "list_configs", named_params(version, task_id))

    assert config_id_of(got["result"], version) == "mine"
    assert url_of(got["result"], version) == PUBLIC_URL
    assert [config_id_of(c, version) for c in configs_in(listed["result"], version)] == ["mine"]
    assert_no_secrets(got)
    assert_no_secrets(listed)
    assert "error" not in deleted, deleted
    assert configs_in(after, version) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_deleting_a_config_that_is_gone_is_not_an_error(
    caller: Caller, task_id: str, version: str
) -> None:
    params = named_params(version, task_id, "never-made")

    first = caller.call("pusher", version, "delete_config", params)
    again = caller.call("pusher", version, "delete_config", params)

    assert "error" not in first and "error" not in again, (first, again)


@pytest.mark.parametrize("version", VERSIONS)
def test_creating_with_an_existing_id_replaces_that_config(
    caller: Caller, task_id: str, version: str
) -> None:
    for url in (PUBLIC_URL, "https://other.example.com/hook"):
        params = create_params(version, task_id, webhook(version, url, id="same"))
        caller.result("pusher", version, "create_config", params)

    listed = caller.result("pusher", version, "list_configs", named_params(version, task_id))

    assert [url_of(c, version) for c in configs_in(listed, version)] == [
        "https://other.example.com/hook"
    ]


@pytest.mark.parametrize("op", ["create_config", "get_config", "list_configs", "delete_config"])
@pytest.mark.parametrize("version", VERSIONS)
def test_an_agent_without_push_answers_push_not_supported(
    caller: Caller, silent: Agent, version: str, op: str
) -> None:
    task_id = str(caller.send("silent", V1)["id"])
    params = {
        "create_config": create_params(version, task_id, webhook(version, PUBLIC_URL)),
        "get_config": named_params(version, task_id, "any"),
        "list_configs": named_params(version, task_id),
        "delete_config": named_params(version, task_id, "any"),
    }[op]

    assert caller.error("silent", version, op, params)["code"] == -32003


@pytest.mark.parametrize("op", ["create_config", "get_config", "list_configs", "delete_config"])
@pytest.mark.parametrize("version", VERSIONS)
def test_another_callers_task_does_not_exist_for_its_configs(
    caller: Caller, stranger: Caller, task_id: str, version: str, op: str
) -> None:
    caller.result("pusher", version, "create_config", create_params(
        version, task_id, webhook(version, PUBLIC_URL, id="mine")))  # fmt: skip
    params = {
        "create_config": create_params(version, task_id, webhook(version, PUBLIC_URL, id="theirs")),
        "get_config": named_params(version, task_id, "mine"),
        "list_configs": named_params(version, task_id),
        "delete_config": named_params(version, task_id, "mine"),
    }[op]

    answer = stranger.call("pusher", version, op, params)

    assert answer.get("error", {}).get("code") == -32001, answer
    assert_no_secrets(answer)
    assert list(PushNotificationConfig.objects.values_list("config_id", flat=True)) == ["mine"]


@pytest.mark.parametrize("version", VERSIONS)
def test_an_unknown_task_is_not_found(caller: Caller, pusher: Agent, version: str) -> None:
    params = create_params(version, UNKNOWN_TASK, webhook(version, PUBLIC_URL))

    assert caller.error("pusher", version, "create_config", params)["code"] == -32001


@pytest.mark.parametrize("version", VERSIONS)
def test_getting_a_config_the_task_does_not_have_is_an_error(
    caller: Caller, task_id: str, version: str
) -> None:
    error = caller.error("pusher", version, "get_config", named_params(version, task_id, "nope"))

    assert error["code"] == -32001


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://127.0.0.1:9/hook", f"127.0.0.1 is a loopback address{PUBLIC_ONLY}"),
        ("http://10.1.2.3/hook", f"10.1.2.3 is a private address{PUBLIC_ONLY}"),
        ("http://169.254.169.254/latest/meta-data/",
         f"169.254.169.254 is a link-local address{PUBLIC_ONLY}"),
        ("http://[::1]/hook", f"::1 is a loopback address{PUBLIC_ONLY}"),
        ("ftp://receiver.example.com/hook",
         "'ftp://receiver.example.com/hook' must start with http:// or https://"),
        # No connection could follow these: the resolver raised UnicodeError for such a host
        # (-32603), and such a port was stored and failed every delivery.
        ("http://a..b/hook", "'http://a..b/hook' names no valid host (empty or over-long labels)"),
        ("http://.com/hook", "'http://.com/hook' names no valid host (empty or over-long labels)"),
        (f"http://{'a' * 64}.com/hook",
         f"'http://{'a' * 64}.com/hook' names no valid host (empty or over-long labels)"),
        ("http://receiver.example.com:0/hook",
         "'http://receiver.example.com:0/hook' names no valid port (1 to 65535)"),
        ("http://receiver.example.com:99999/hook",
         "'http://receiver.example.com:99999/hook' names no valid port (1 to 65535)"),
    ],
    ids=["loopback", "private", "link-local", "ipv6-loopback", "ftp", "empty-label",
         "leading-dot", "long-label", "port-0", "port-99999"],
)  # fmt: skip
@pytest.mark.parametrize("version", VERSIONS)
def test_a_url_the_hub_may_not_or_cannot_call_is_refused_naming_the_url(
    caller: Caller, task_id: str, version: str, url: str, problem: str, settings: Any
) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = []

    error = caller.error("pusher", version, "create_config", create_params(
        version, task_id, webhook(version, url)))  # fmt: skip

    assert error["code"] == -32602
    assert "url" in error["message"]
    assert error == invalid_params(version, "url", problem)
    assert not PushNotificationConfig.objects.exists()


@pytest.mark.parametrize("name", ["localhost.", "hooks.localhost"])
@pytest.mark.parametrize("version", VERSIONS)
def test_a_loopback_name_is_refused_even_where_it_does_not_resolve(
    caller: Caller, task_id: str, version: str, name: str, monkeypatch: Any
) -> None:
    def nowhere(host: str, port: int) -> list[str]:
        raise OSError(f"{host} is not known here")

    monkeypatch.setattr(outbound, "resolve", nowhere)
    error = caller.error("pusher", version, "create_config", create_params(
        version, task_id, webhook(version, f"http://{name}/hook")))  # fmt: skip

    assert error == invalid_params(
        version, "url", f"{name} is a loopback name (RFC 6761){PUBLIC_ONLY}"
    )


@pytest.mark.parametrize(
    ("fields", "field", "problem"),
    [
        ({"token": "a\r\nX-Evil: 1"}, "token",
         "must not hold control characters (it is sent in a header)"),
        ({"credentials": "secret\n"}, "authentication.credentials",
         "must not hold control characters (it is sent in a header)"),
        ({"token": "tab\tted"}, "token",
         "must not hold control characters (it is sent in a header)"),
        ({"id": "a/b"}, "id", "must not hold / or control characters (it is a URL's part)"),
    ],
    ids=["token-crlf", "credentials-lf", "token-tab", "id-slash"],
)  # fmt: skip
@pytest.mark.parametrize("version", VERSIONS)
def test_a_value_no_delivery_could_carry_is_invalid_params(
    caller: Caller,
    task_id: str,
    version: str,
    fields: dict[str, str],
    field: str,
    problem: str,
) -> None:
    # Accepted, each failed every delivery for a day (or left a config REST cannot address).
    config = webhook(version, PUBLIC_URL, **{k: v for k, v in fields.items() if k != "id"})
    if "credentials" in fields:
        config = webhook(version, PUBLIC_URL, credentials=fields["credentials"])
    if "id" in fields:
        config["id"] = fields["id"]

    error = caller.error("pusher", version, "create_config", create_params(
        version, task_id, config))  # fmt: skip

    assert error == invalid_params(version, field, problem)
    assert not PushNotificationConfig.objects.exists()


def test_a_scheme_of_two_words_is_invalid_params(caller: Caller, task_id: str) -> None:
    config = webhook(V1, PUBLIC_URL) | {
        "authentication": {"scheme": "Bearer x", "credentials": "c"}
    }

    error = caller.error("pusher", V1, "create_config", create_params(V1, task_id, config))

    assert error == invalid_params(
        V1, "authentication.scheme", "must be one word, as Bearer or Basic"
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_an_allow_listed_loopback_host_is_accepted(
    caller: Caller, task_id: str, version: str, settings: Any
) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    params = create_params(version, task_id, webhook(version, "http://127.0.0.1:9/hook"))

    assert url_of(caller.result("pusher", version, "create_config", params), version).startswith(
        "http://127.0.0.1:9/"
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_a_config_without_a_url_is_invalid_params(
    caller: Caller, task_id: str, version: str
) -> None:
    params = create_params(version, task_id, webhook(version, ""))

    assert caller.error("pusher", version, "create_config", params)["code"] == -32602


@pytest.mark.parametrize("version", VERSIONS)
def test_an_inline_config_on_send_is_stored_with_the_new_task(
    caller: Caller, pusher: Agent, version: str
) -> None:
    task = caller.send("pusher", version, push=webhook(version, PUBLIC_URL, id="inline"))

    listed = caller.result("pusher", version, "list_configs", named_params(version, task["id"]))

    assert [config_id_of(c, version) for c in configs_in(listed, version)] == ["inline"]
    assert_no_secrets(listed)
    stored = PushNotificationConfig.objects.get(task_id=task["id"])
    assert (stored.protocol_version, stored.token) == (version, TOKEN)


@pytest.mark.parametrize("version", VERSIONS)
def test_an_inline_config_is_refused_by_an_agent_without_push(
    caller: Caller, silent: Agent, version: str
) -> None:
    params = send_params(version, "hello", webhook(version, PUBLIC_URL))

    assert caller.error("silent", version, "send", params)["code"] == -32003


@pytest.mark.parametrize("version", VERSIONS)
def test_an_inline_config_with_a_loopback_url_is_refused(
    caller: Caller, pusher: Agent, version: str, settings: Any
) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = []
    params = send_params(version, "hello", webhook(version, "http://127.0.0.1:9/hook"))

    error = caller.error("pusher", version, "send", params)

    assert error["code"] == -32602 and "url" in error["message"]
    problem = f"127.0.0.1 is a loopback address{PUBLIC_ONLY}"
    assert error == invalid_params(version, "url", problem)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("field", "config"),
    [
        ("token", {"token": "t" * 501}),
        ("authentication.credentials", {"credentials": "c" * 2001}),
        ("url", {"url": "https://receiver.example.com/" + "p" * 2000}),
        ("id", {"id": "i" * 201}),
    ],
)  # fmt: skip
def test_a_config_field_longer_than_the_hub_keeps_is_invalid_params_naming_it(
    caller: Caller, pusher: Agent, task_id: str, version: str, field: str, config: dict[str, Any]
) -> None:
    fields = dict(config)
    given = webhook(version, fields.pop("url", PUBLIC_URL), **fields)

    created = caller.error(
        "pusher", version, "create_config", create_params(version, task_id, given)
    )
    inline = caller.error("pusher", version, "send", send_params(version, "hello", given))

    assert created["code"] == inline["code"] == -32602
    assert field in created["message"] and field in inline["message"]
    assert not PushNotificationConfig.objects.exists()


def lookups_off_the_loop(monkeypatch: pytest.MonkeyPatch, answer: list[str]) -> list[bool]:
    """Each lookup of a webhook's host from now on: whether it ran outside any event loop."""
    seen: list[bool] = []

    def resolve(host: str, port: int) -> list[str]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            seen.append(True)
        else:
            seen.append(False)
        return answer

    monkeypatch.setattr(outbound, "resolve", resolve)
    return seen


@pytest.mark.parametrize("version", VERSIONS)
def test_a_webhook_named_by_host_is_looked_up_off_the_event_loop(
    caller: Caller, pusher: Agent, task_id: str, version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A lookup may take seconds; on the loop, every other request would wait for it. The task
    # is completed, so nothing is delivered to the public address the lookup answers (a send
    # naming the webhook is looked up off the loop too: the next test).
    seen = lookups_off_the_loop(monkeypatch, ["93.184.216.34"])

    caller.result("pusher", version, "create_config", create_params(
        version, task_id, webhook(version, PUBLIC_URL)))  # fmt: skip

    assert seen == [True]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_webhook_name_that_resolves_to_a_private_address_is_refused_off_the_loop(
    caller: Caller, pusher: Agent, version: str, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = []
    seen = lookups_off_the_loop(monkeypatch, ["10.0.0.7"])
    params = send_params(version, "hello", webhook(version, PUBLIC_URL))

    error = caller.error("pusher", version, "send", params)

    assert seen == [True]
    problem = f"receiver.example.com resolves to 10.0.0.7, a private address{PUBLIC_ONLY}"
    assert error == invalid_params(version, "url", problem)
