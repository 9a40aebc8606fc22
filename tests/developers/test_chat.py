"""The chat console's views through Django's test clients: who may chat with which agent, the
stream a message gets, questions, canceling, the file view, and what others cannot reach.

Personas and their rights:
- `developer` (tests/conftest.py): signed in; chats with every agent their session may call
  at the agent's doors (one rule: `agents.principals.check_access`): their own, those open
  to anyone or any signed-in principal, those listing them; never an OAuth2-only agent,
  whatever key they hold. Their tasks are `user:<their id>`'s.
- `rival`: another signed-in user; their tasks and files, and their agents listed for others
  or requiring OAuth2, do not exist for the developer (a 404, as an unknown task or agent).
- `operator` (tests/conftest.py): staff; chats under the same rule, and gets the admin's link.
- anonymous: sent to the sign-in page.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import AsyncClient, Client

from agents.models import Access, Agent, ApiKey
from executors.demo_skills import draw_png
from tasks.changes import ArtifactChange, StatusChange
from tasks.models import Message, Task, TaskState
from tests.developers.chat_client import chat_url, chunks, frames, states, task_id_of
from tests.door_client import Door
from tests.factories.agents import SECURED, make_agent, owned
from tests.factories.envelopes import envelope, request_headers, url
from tests.factories.tasks import PDF_BYTES, open_task, report_artifact
from tests.factories.versions import V1

pytestmark = pytest.mark.django_db


@pytest.fixture
def rival(db: None) -> User:
    return User.objects.create_user("rival", "rival@example.com", "rival-pass-123")


def principal(user: User) -> str:
    return f"user:{user.pk}"


def asked(agent: Agent, owner: str) -> Task:
    """A task of `owner` waiting for their answer (as the interview agent leaves it)."""
    question = pb.Message(message_id="q-1", role=pb.ROLE_AGENT)
    question.parts.add(text="What is your name?")
    changes = [StatusChange(TaskState.WORKING), StatusChange(TaskState.INPUT_REQUIRED, question)]
    return open_task(agent, changes, owner=owner)


def with_picture(agent: Agent, owner: str) -> Task:
    artifact = pb.Artifact(artifact_id="picture-1", name="picture")
    artifact.parts.add(raw=draw_png(), media_type="image/png", filename="tiles.png")
    return open_task(agent, [ArtifactChange(artifact, last_chunk=True)], owner=owner)


def file_url(slug: str, task: Task, artifact: str, part: int = 0) -> str:
    return f"{chat_url(slug, 'file')}?task={task.id}&artifact={artifact}&part={part}"


# -- who may chat -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "view"), [("get", ""), ("post", "send"), ("post", "cancel"), ("get", "file")]
)
def test_the_chat_sends_an_anonymous_visitor_to_sign_in(
    client: Client, method: str, view: str
) -> None:
    make_agent("echo")
    path = chat_url("echo", view)
    response = getattr(client, method)(path, {"text": "hi"} if method == "post" else {})
    assert response.status_code == 302
    assert response["Location"] == f"/dev/login/?next={path}"
    assert not Task.objects.exists()


@pytest.mark.parametrize(
    "fields",
    [{"access": Access.LISTED}, {"oauth2": True, "access": Access.SIGNED_IN}],
    ids=["listed-for-others", "oauth2-only"],
)
def test_an_agent_the_user_may_not_call_is_not_found(
    dev_client: Client, rival: User, fields: dict[str, Any]
) -> None:
    agent = owned("theirs", rival, **fields)
    task = with_picture(agent, principal(rival))
    assert dev_client.get(chat_url("theirs")).status_code == 404
    assert dev_client.post(chat_url("theirs", "send"), {"text": "hi"}).status_code == 404
    assert dev_client.post(chat_url("theirs", "cancel"), {"taskId": task.id}).status_code == 404
    assert dev_client.get(file_url("theirs", task, "picture-1")).status_code == 404
    assert Task.objects.count() == 1


def test_a_user_chats_with_every_agent_their_session_may_call(
    dev_client: Client, developer: User, rival: User
) -> None:
    owned("mine", developer, **SECURED, public=False, access=Access.LISTED)
    owned("open", rival, public=False)
    owned("keyed", rival, **SECURED)  # a session is a credential, at the doors as here
    owned("members", rival, access=Access.SIGNED_IN)
    owned("named", rival, access=Access.LISTED).allowed_users.add(developer)
    for slug in ("mine", "open", "keyed", "members", "named"):
        assert dev_client.get(chat_url(slug)).status_code == 200, slug


@pytest.mark.usefixtures("door")
def test_an_oauth2_only_agent_refuses_the_chat_as_its_doors_refuse_the_users_key(
    dev_client: Client, developer: User
) -> None:
    owned("secure", developer, oauth2=True, access=Access.SIGNED_IN)
    _, raw = ApiKey.issue("developer's hub-wide key", owner=developer)
    door = Door().post(
        url("secure"),
        envelope(V1, "send", text="through the door"),
        content_type="application/json",
        headers=request_headers(V1, raw),
    )

    chat = dev_client.post(chat_url("secure", "send"), {"text": "through the chat"})

    assert door.status_code == 401 and "OAuth2" in door.json()["error"]["message"]
    assert chat.status_code == 404 and dev_client.get(chat_url("secure")).status_code == 404
    assert not Task.objects.exists()


@pytest.mark.parametrize(
    "fields",
    [{}, SECURED, {"public": False}, {"access": Access.SIGNED_IN}, {"access": Access.LISTED},
     {"oauth2": True}, {"oauth2": True, "access": Access.LISTED}],
    ids=["open", "secured", "unlisted", "signed-in", "listed-for-others", "oauth2", "both"],
)  # fmt: skip
def test_the_chat_and_the_doors_give_a_session_the_same_answer(
    dev_client: Client, dev_door: Door, rival: User, fields: dict[str, Any]
) -> None:
    owned("theirs", rival, **fields)
    door = dev_door.post(
        url("theirs"),
        envelope(V1, "send", text="by session"),
        content_type="application/json",
        headers=request_headers(V1, None),
    )

    chat = dev_client.post(chat_url("theirs", "send"), {"text": "by chat"})

    assert (door.status_code == 200) == (chat.status_code == 200), (door.status_code, chat)
    assert door.status_code in (200, 401, 403) and chat.status_code in (200, 404)


def test_staff_chat_with_every_agent_and_get_the_admins_link(
    operator_client: Client, rival: User
) -> None:
    owned("theirs", rival, **SECURED, public=False)
    page = operator_client.get(chat_url("theirs")).content.decode()
    assert 'data-admin-task-url="/admin/tasks/task/TASK-ID/change/"' in page


def test_every_caller_gets_the_link_to_their_task_list(
    dev_client: Client, developer: User, rival: User
) -> None:
    owned("mine", developer)
    owned("theirs", rival)
    mine = dev_client.get(chat_url("mine")).content.decode()
    assert 'data-task-list-url="/dev/agents/mine/tasks/"' in mine
    assert 'data-admin-task-url=""' in mine
    # Not the owner: the list shows the developer's own tasks (tests/developers/test_task_view.py).
    theirs = dev_client.get(chat_url("theirs")).content.decode()
    assert 'data-task-list-url="/dev/agents/theirs/tasks/"' in theirs
    assert dev_client.get("/dev/agents/theirs/tasks/").status_code == 200


def test_the_page_shows_hostile_names_as_text(dev_client: Client, developer: User) -> None:
    agent = owned("mine", developer, name="<script>alert('name')</script>")
    agent.skills.update(name="<img src=x onerror=alert(1)>")
    page = dev_client.get(chat_url("mine")).content.decode()
    assert "<script>alert(" not in page
    assert "&lt;script&gt;alert(&#x27;name&#x27;)&lt;/script&gt;" in page
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


# -- what the form takes --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "problem"),
    [({"text": "  "}, "Type a message"), ({"text": "hi", "skill": "nope"}, "no skill 'nope'"),
     ({"text": "hi", "contextId": "c" * 201}, "contextId is longer")],
)  # fmt: skip
def test_the_form_refuses_what_it_cannot_send(
    dev_client: Client, developer: User, data: dict[str, str], problem: str
) -> None:
    owned("mine", developer)
    response = dev_client.post(chat_url("mine", "send"), data)
    assert response.status_code == 400
    assert problem in response.json()["error"]["message"]
    assert not Task.objects.exists()


def test_the_page_says_an_agent_needs_an_extension_it_does_not_speak_and_sends_nothing(
    dev_client: Client, developer: User
) -> None:
    uri = "urn:example:needed"
    owned("mine", developer, extensions=[{"uri": uri, "required": True}])
    page = dev_client.get(chat_url("mine")).content.decode()
    assert 'id="chat-extensions"' in page and f"<code>{uri}</code>" in page
    assert '<button type="submit" id="chat-send" disabled>' in page

    # What the page would be told: the door's refusal, which names the extension.
    refused = dev_client.post(chat_url("mine", "send"), {"text": "hi"})
    assert uri in refused.json()["error"]["message"]
    assert not Task.objects.exists()


def test_chat_posts_are_protected_against_cross_site_requests(developer: User) -> None:
    agent = owned("mine", developer)
    task = asked(agent, principal(developer))
    client = Client(enforce_csrf_checks=True)
    client.force_login(developer)
    assert client.post(chat_url("mine", "send"), {"text": "hi"}).status_code == 403
    assert client.post(chat_url("mine", "cancel"), {"taskId": task.id}).status_code == 403
    assert Task.objects.get().state == TaskState.INPUT_REQUIRED


# -- another user's task ----------------------------------------------------------------------


def unknown_answer(client: Client, path: str, data: dict[str, str], real_id: str) -> Any:
    """The answer for a task id nobody has, with the real id in place of it (the message
    names the id asked for)."""
    made_up = str(uuid.uuid4())
    answer = client.post(path, data | {"taskId": made_up})
    return answer.status_code, answer.json() | {
        "error": {**answer.json()["error"],
                  "message": answer.json()["error"]["message"].replace(made_up, real_id)}
    }  # fmt: skip


def test_another_users_task_cannot_be_continued_and_answers_as_an_unknown_one(
    dev_client: Client, rival: User
) -> None:
    agent = make_agent("interview", executor_kind="interview")
    task = asked(agent, principal(rival))
    path = chat_url("interview", "send")

    answer = dev_client.post(path, {"text": "Mallory", "taskId": str(task.id)})

    assert answer.status_code == 404
    assert answer.json()["error"]["message"] == f"Task '{task.id}' was not found."
    assert (answer.status_code, answer.json()) == unknown_answer(
        dev_client, path, {"text": "Mallory"}, str(task.id)
    )
    task.refresh_from_db()
    assert task.state == TaskState.INPUT_REQUIRED
    assert not Message.objects.filter(task=task, parts__0__text="Mallory").exists()


def test_another_users_task_cannot_be_canceled_and_answers_as_an_unknown_one(
    dev_client: Client, rival: User
) -> None:
    agent = make_agent("interview", executor_kind="interview")
    task = asked(agent, principal(rival))
    path = chat_url("interview", "cancel")

    answer = dev_client.post(path, {"taskId": str(task.id)})

    assert answer.status_code == 404
    assert (answer.status_code, answer.json()) == unknown_answer(dev_client, path, {}, str(task.id))
    task.refresh_from_db()
    assert task.state == TaskState.INPUT_REQUIRED


def test_another_users_file_cannot_be_read(
    dev_client: Client, developer: User, rival: User
) -> None:
    owned("shared", rival)
    agent = Agent.objects.get(slug="shared")
    theirs = with_picture(agent, principal(rival))
    mine = with_picture(agent, principal(developer))

    assert dev_client.get(file_url("shared", theirs, "picture-1")).status_code == 404
    assert dev_client.get(file_url("shared", mine, "picture-1")).content == draw_png()


# -- the file view --------------------------------------------------------------------------


def test_an_image_is_served_inline_as_the_image_its_bytes_are(
    dev_client: Client, developer: User
) -> None:
    task = with_picture(owned("mine", developer), principal(developer))
    response = dev_client.get(file_url("mine", task, "picture-1"))
    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    assert response["Content-Disposition"] == "inline; filename*=UTF-8''tiles.png"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response.content == draw_png()


def test_any_other_file_is_plain_bytes_under_its_bare_name(
    dev_client: Client, developer: User
) -> None:
    task = open_task(owned("mine", developer), [report_artifact()], owner=principal(developer))
    response = dev_client.get(file_url("mine", task, "report-1"))
    assert response.content == PDF_BYTES
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"] == "attachment; filename*=UTF-8''re%22port.pdf"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in response["Content-Security-Policy"]


@pytest.mark.parametrize(
    "query", ["artifact=report-1&part=1", "artifact=report-1&part=9", "artifact=none&part=0",
              "artifact=report-1&part=x", "message=first&part=0", "artifact=report-1&part=²",
              "artifact=report-1&part=\u0661", f"artifact=report-1&part={'9' * 5000}"],
)  # fmt: skip
def test_a_part_that_is_no_stored_file_is_not_found(
    dev_client: Client, developer: User, query: str
) -> None:
    task = open_task(owned("mine", developer), [report_artifact()], owner=principal(developer))
    response = dev_client.get(f"{chat_url('mine', 'file')}?task={task.id}&{query}")
    assert response.status_code == 404


def test_the_task_list_shows_the_one_task_the_chat_links_to(
    dev_client: Client, developer: User
) -> None:
    agent = owned("mine", developer)
    first, second = asked(agent, "apikey:1"), asked(agent, "apikey:2")
    page = dev_client.get(f"/dev/agents/mine/tasks/?task={second.id}")
    assert [task.id for task in page.context["page"].object_list] == [second.id]
    assert str(first.id) not in page.content.decode()
    assert not dev_client.get("/dev/agents/mine/tasks/?task=nope").context["page"].object_list


# -- streams --------------------------------------------------------------------------------


async def signed_in(user: User) -> AsyncClient:
    client = AsyncClient()
    await client.aforce_login(user)
    return client


async def chat(client: AsyncClient, slug: str, **data: str) -> list[tuple[str, dict[str, Any]]]:
    response = await client.post(chat_url(slug, "send"), data)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "text/event-stream"
    body = b"".join([chunk async for chunk in response.streaming_content]).decode()
    return frames(body)


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_reply_streams_as_a_task_of_the_user(developer: User) -> None:
    await sync_to_async(make_agent)("echo", executor_settings={"chunks": 3})
    client = await signed_in(developer)

    events = await chat(client, "echo", text="hello")

    assert states(events) == ["submitted", "working", "completed"]
    assert chunks(events) == ["hello", "hello", "hello"]
    task = await Task.objects.aget(id=task_id_of(events))
    assert (task.owner, task.binding) == (principal(developer), "PAGE")
    assert task.protocol_version == "1.0"


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_question_is_answered_in_the_same_task(developer: User) -> None:
    await sync_to_async(make_agent)("interview", executor_kind="interview")
    client = await signed_in(developer)
    asking = await chat(client, "interview", text="hi")
    task_id = task_id_of(asking)
    context_id = asking[0][1]["task"]["contextId"]
    assert states(asking)[-1] == "input-required"

    answered = await chat(client, "interview", text="Ada", taskId=task_id, contextId=context_id)

    assert task_id_of(answered) == task_id
    assert states(answered)[-1] == "completed"
    assert chunks(answered) == ["Nice to meet you, Ada!"]
    assert await Task.objects.filter(owner=principal(developer)).acount() == 1


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_the_user_cancels_their_task(developer: User) -> None:
    await sync_to_async(make_agent)("interview", executor_kind="interview")
    client = await signed_in(developer)
    task_id = task_id_of(await chat(client, "interview", text="hi"))

    answer = await client.post(chat_url("interview", "cancel"), {"taskId": task_id})

    assert answer.status_code == 200
    assert answer.json()["task"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert (await Task.objects.aget(id=task_id)).state == TaskState.CANCELED
    again = await client.post(chat_url("interview", "cancel"), {"taskId": task_id})
    assert again.status_code == 409


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_file_in_the_stream_is_a_link_to_the_file_view(developer: User) -> None:
    await sync_to_async(make_agent)(
        "toolbox", executor_kind="python", executor_settings={"functions": {"*": "demo.picture"}}
    )
    client = await signed_in(developer)

    events = await chat(client, "toolbox", text="draw")

    [part] = [p for _, e in events if "artifactUpdate" in e
              for p in e["artifactUpdate"]["artifact"]["parts"]]  # fmt: skip
    assert "raw" not in part
    assert (part["mediaType"], part["filename"], part["size"]) == ("image/png", "tiles.png",
                                                                   len(draw_png()))  # fmt: skip
    picture = await client.get(part["href"])
    assert picture.content == draw_png()


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_an_agent_that_does_not_stream_answers_in_one_event(developer: User) -> None:
    await sync_to_async(make_agent)("mute", streaming=False)
    client = await signed_in(developer)

    events = await chat(client, "mute", text="quiet")

    [(_, event)] = events
    assert event["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "history" not in event["task"]
    assert event["task"]["artifacts"][0]["parts"] == [{"text": "quiet"}]


@pytest.mark.parametrize(
    ("limit", "second", "status", "words"),
    [
        ({"requests_per_minute": 1}, "again", 429, "at most 1 requests per minute from you"),
        ({"max_message_bytes": 2000}, "long " * 600, 413, "requests of at most 2000 bytes"),
    ],
)
@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_chat_over_an_agents_limit_is_refused_with_the_doors_status_and_words(
    developer: User, limit: dict[str, int], second: str, status: int, words: str
) -> None:
    # The page posts its form as multipart (FormData): the door's size check once read a body
    # that was gone, and every chat with an agent that had a limit was an internal error.
    await sync_to_async(owned)("mine", developer, **limit)
    client = await signed_in(developer)
    assert states(await chat(client, "mine", text="hi"))[-1] == "completed"

    refused = await client.post(chat_url("mine", "send"), {"text": second})

    assert refused.status_code == status
    assert words in refused.json()["error"]["message"]
    assert await Task.objects.acount() == 1
