"""ListTasks (1.0 only): the caller's tasks, latest status first, in cursor pages, with
filters."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from agents.models import Agent
from tasks import writer
from tasks.changes import NewTask
from tasks.models import ExecutionMode
from tests.factories.envelopes import sample
from tests.factories.errors import invalid_params
from tests.factories.messages import user_message
from tests.factories.versions import V03, V1
from tests.protocol.answers import error_info, state_of
from tests.protocol.callers import Caller

pytestmark = pytest.mark.django_db


def listed(caller: Caller, slug: str = "tck", **params: Any) -> dict[str, Any]:
    result: dict[str, Any] = caller.result(slug, V1, "list", params)
    return result


def ids(result: dict[str, Any]) -> list[str]:
    return [task["id"] for task in result.get("tasks", [])]


def send_tck(caller: Caller, scenario: str, **message: Any) -> dict[str, Any]:
    """A task of the conformance agent: `scenario` picks how it ends."""
    return caller.send("tck", V1, message={"messageId": f"tck-{scenario}-1", **message})


def store_tasks(agent: Agent, owner: str, count: int) -> None:
    """Tasks written straight through the lifecycle, for tests that need many of them."""
    for n in range(count):
        message = user_message(f"task {n}", message_id=f"bulk-{n}")
        spec = NewTask(agent_id=agent.pk, owner=owner, context_id=f"bulk-{n}", message=message,
                       protocol_version=V1, execution_mode=ExecutionMode.INLINE)  # fmt: skip
        async_to_sync(writer.open)(spec)


def test_it_lists_the_callers_tasks_newest_first(caller: Caller, tck: Agent) -> None:
    sent = [send_tck(caller, "complete-task")["id"] for _ in range(3)]

    result = listed(caller)

    assert ids(result) == sent[::-1]
    assert result["totalSize"] == 3
    assert result["pageSize"] == 50
    assert result.get("nextPageToken", "") == ""


def test_it_pages_with_a_cursor(caller: Caller, tck: Agent) -> None:
    sent = [send_tck(caller, "complete-task")["id"] for _ in range(5)][::-1]

    first = listed(caller, pageSize=2)
    second = listed(caller, pageSize=2, pageToken=first["nextPageToken"])
    third = listed(caller, pageSize=2, pageToken=second["nextPageToken"])

    assert [ids(first), ids(second), ids(third)] == [sent[:2], sent[2:4], sent[4:]]
    assert third.get("nextPageToken", "") == ""
    assert {page["totalSize"] for page in (first, second, third)} == {5}


def test_it_keeps_a_cursor_stable_when_newer_tasks_arrive(caller: Caller, tck: Agent) -> None:
    sent = [send_tck(caller, "complete-task")["id"] for _ in range(3)][::-1]
    first = listed(caller, pageSize=2)

    send_tck(caller, "complete-task")
    second = listed(caller, pageSize=2, pageToken=first["nextPageToken"])

    assert ids(second) == sent[2:]


def test_it_returns_fifty_tasks_by_default_and_at_most_a_hundred(
    caller: Caller, tck: Agent
) -> None:
    store_tasks(tck, caller.principal, 101)

    default = listed(caller)
    largest = listed(caller, pageSize=100)

    assert len(default["tasks"]) == 50
    assert default["nextPageToken"]
    assert len(largest["tasks"]) == 100
    assert largest["totalSize"] == 101


@pytest.mark.parametrize("size", [101, -1])
def test_it_refuses_a_page_size_out_of_range(caller: Caller, tck: Agent, size: int) -> None:
    error = caller.error("tck", V1, "list", {"pageSize": size})

    assert error["code"] == -32602
    assert error_info(error)["metadata"] == {"field": "pageSize"}
    assert error == invalid_params(V1, "pageSize", "must be between 1 and 100")


def test_it_refuses_a_page_token_it_did_not_issue(caller: Caller, tck: Agent) -> None:
    error = caller.error("tck", V1, "list", {"pageToken": "bm90LWEtdG9rZW4="})

    assert error["code"] == -32602
    assert error == invalid_params(V1, "pageToken", "is not a token this server issued")


def test_it_filters_by_context(caller: Caller, tck: Agent) -> None:
    first = send_tck(caller, "complete-task")
    same = send_tck(caller, "complete-task", contextId=first["contextId"])
    send_tck(caller, "complete-task")

    result = listed(caller, contextId=first["contextId"])

    assert ids(result) == [same["id"], first["id"]]
    assert result["totalSize"] == 2


def test_it_filters_by_state(caller: Caller, tck: Agent) -> None:
    completed = send_tck(caller, "complete-task")
    rejected = send_tck(caller, "reject-task")
    waiting = send_tck(caller, "input-required")

    assert ids(listed(caller, status="TASK_STATE_COMPLETED")) == [completed["id"]]
    assert ids(listed(caller, status="TASK_STATE_REJECTED")) == [rejected["id"]]
    assert ids(listed(caller, status="TASK_STATE_INPUT_REQUIRED")) == [waiting["id"]]
    assert ids(listed(caller, status="TASK_STATE_WORKING")) == []


def test_it_lists_the_latest_status_change_first(caller: Caller, tck: Agent) -> None:
    waiting = send_tck(caller, "input-required")
    done = send_tck(caller, "complete-task")

    before = listed(caller)
    caller.result("tck", V1, "cancel", {"id": waiting["id"]})
    after = listed(caller)

    # The spec's order: status timestamp, descending, not creation.
    assert ids(before) == [done["id"], waiting["id"]]
    assert ids(after) == [waiting["id"], done["id"]]


def test_it_filters_by_status_timestamp(caller: Caller, tck: Agent) -> None:
    older = send_tck(caller, "complete-task")
    newer = send_tck(caller, "complete-task")
    stamp = datetime.fromisoformat(older["status"]["timestamp"])
    just_after = (stamp + timedelta(microseconds=1)).isoformat().replace("+00:00", "Z")

    # "greater than or equal to this value": the bound itself is in.
    assert ids(listed(caller, statusTimestampAfter=older["status"]["timestamp"])) == [
        newer["id"], older["id"],
    ]  # fmt: skip
    assert ids(listed(caller, statusTimestampAfter=just_after)) == [newer["id"]]


def test_it_filters_by_status_timestamp_after_a_later_status_change(
    caller: Caller, tck: Agent
) -> None:
    waiting = send_tck(caller, "input-required")
    done = send_tck(caller, "complete-task")

    caller.result("tck", V1, "cancel", {"id": waiting["id"]})
    result = listed(caller, statusTimestampAfter=done["status"]["timestamp"])

    # The canceled task's status is now later than the completed one's (which is at the bound).
    assert ids(result) == [waiting["id"], done["id"]]


def test_it_leaves_out_artifacts_and_history_unless_asked(caller: Caller, tck: Agent) -> None:
    send_tck(caller, "artifact-text")

    plain = listed(caller)["tasks"][0]
    full = listed(caller, includeArtifacts=True, historyLength=5)["tasks"][0]

    assert "artifacts" not in plain
    assert "history" not in plain
    assert full["artifacts"][0]["parts"] == [{"text": "Generated text content"}]
    assert len(full["history"]) == 1
    assert state_of(full) == "completed"


def test_it_refuses_a_negative_history_length(caller: Caller, tck: Agent) -> None:
    error = caller.error("tck", V1, "list", {"historyLength": -1})

    assert error["code"] == -32602


def test_it_shows_a_second_key_nothing_of_the_first_keys_tasks(
    caller: Caller, stranger: Caller, tck: Agent
) -> None:
    mine = send_tck(caller, "complete-task")

    theirs = listed(stranger)
    by_context = listed(stranger, contextId=mine["contextId"])

    assert theirs.get("tasks", []) == []
    assert theirs.get("totalSize", 0) == 0
    assert by_context.get("tasks", []) == []
    assert ids(listed(caller)) == [mine["id"]]


def test_it_lists_only_the_tasks_of_the_agent_called(
    caller: Caller, tck: Agent, echo: Agent
) -> None:
    send_tck(caller, "complete-task")

    assert listed(caller, "echo").get("tasks", []) == []


def test_it_is_not_a_method_of_version_0_3(caller: Caller, tck: Agent) -> None:
    body = sample(V1, "list") | {"method": "tasks/list"}

    error = caller.post("tck", body, V03).json()["error"]

    assert error["code"] == -32601


def test_it_asks_for_the_version_header_when_sent_without_it(caller: Caller, tck: Agent) -> None:
    error = caller.post("tck", sample(V1, "list"), None).json()["error"]

    assert error["code"] == -32009
    assert error == {
        "code": -32009,
        "message": "ListTasks is an A2A 1.0 method: send the header A2A-Version: 1.0.",
    }


def test_it_refuses_a_status_that_is_not_a_task_state(caller: Caller, tck: Agent) -> None:
    error = caller.error("tck", V1, "list", {"status": "TASK_STATE_NOPE"})

    assert error["code"] == -32602
    assert error_info(error)["metadata"] == {"field": "status"}


def test_an_empty_list_still_says_its_size_and_has_no_next_page(caller: Caller, tck: Agent) -> None:
    result = listed(caller)

    assert result["tasks"] == []
    assert result["totalSize"] == 0
    assert result["nextPageToken"] == ""


def test_it_ignores_fields_this_version_does_not_know(caller: Caller, tck: Agent) -> None:
    sent = send_tck(caller, "complete-task")["id"]

    assert ids(listed(caller, someFutureField=True)) == [sent]
