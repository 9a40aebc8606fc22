"""The console's WebSockets through the hub's own ASGI application (its router, origin check
and session authentication): who may open them, what they send, and what happens to a page
that stops reading."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission, User
from django.test import Client

from console import feeds, sockets
from tasks import writer
from tasks.changes import StatusChange
from tasks.models import TaskState
from tests.factories.agents import make_agent
from tests.factories.tasks import ended, open_task

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

# A page of the hub's own origin: its Origin names the host (and port) its requests go to.
ORIGIN = (b"origin", b"http://127.0.0.1")
HOST = (b"host", b"127.0.0.1")
WAIT = 10.0


Cookie = list[tuple[bytes, bytes]]


def session_cookie(user: User) -> Cookie:
    """The header of a browser signed in as `user` (made before the test's loop runs: the
    sign-in writes a session row)."""
    client = Client()
    client.force_login(user)
    return [(b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())]


@pytest.fixture
def as_operator(operator: User) -> Cookie:
    return session_cookie(operator)


@pytest.fixture
def as_developer(developer: User) -> Cookie:
    return session_cookie(developer)


@pytest.fixture
def helpdesk(transactional_db: None) -> User:
    """Staff without the right to view tasks: the dashboard, but not the task pages."""
    return User.objects.create_user("helpdesk", password="helpdesk-pass-123", is_staff=True)


@pytest.fixture
def as_helpdesk(helpdesk: User) -> Cookie:
    return session_cookie(helpdesk)


@asynccontextmanager
async def socket(path: str, cookie: Cookie) -> AsyncIterator[tuple[bool, Any, Any]]:
    from a2ahub.asgi import application

    communicator = WebsocketCommunicator(application, path, headers=[HOST, ORIGIN, *cookie])
    connected, detail = await communicator.connect(timeout=WAIT)
    try:
        yield connected, detail, communicator
    finally:
        await communicator.disconnect()


async def next_of(communicator: Any, kind: str, ack: bool = True) -> dict[str, Any]:
    """The next message of this type (acknowledging each one read, as the page does)."""
    while True:
        message = await communicator.receive_json_from(timeout=WAIT)
        if ack:
            await communicator.send_json_to({"ack": message["n"]})
        if message["type"] == kind:
            return message


@pytest.mark.parametrize("path", ["/ws/console/dashboard/", "/ws/console/tasks/"])
@pytest.mark.parametrize("who", ["anonymous", "developer"])
async def test_a_socket_is_refused_to_anyone_but_staff(
    path: str, who: str, as_developer: Cookie
) -> None:
    cookie = [] if who == "anonymous" else as_developer
    async with socket(path, cookie) as (connected, _, _communicator):
        assert not connected


async def test_the_task_sockets_need_the_right_to_view_tasks(
    helpdesk: User, as_helpdesk: Cookie
) -> None:
    async with socket("/ws/console/dashboard/", as_helpdesk) as (connected, *_):
        assert connected
    async with socket("/ws/console/tasks/", as_helpdesk) as (connected, *_):
        assert not connected
    view = await sync_to_async(Permission.objects.get)(codename="view_task")
    await sync_to_async(helpdesk.user_permissions.add)(view)
    async with socket("/ws/console/tasks/", as_helpdesk) as (connected, *_):
        assert connected


async def handshake(as_operator: Cookie, origin: str, host: str = "127.0.0.1:8000") -> bool:
    from a2ahub.asgi import application

    headers = [(b"host", host.encode()), (b"origin", origin.encode()), *as_operator]
    communicator = WebsocketCommunicator(application, "/ws/console/dashboard/", headers=headers)
    connected, _ = await communicator.connect(timeout=WAIT)
    await communicator.disconnect()
    return bool(connected)


async def test_a_socket_from_another_site_is_refused(as_operator: Cookie) -> None:
    assert not await handshake(as_operator, "https://elsewhere.example")


@pytest.mark.parametrize(
    "origin",
    ["http://127.0.0.1:8081", "http://127.0.0.1", "https://127.0.0.1:8000", "null", ""],
    ids=["another-port", "default-port", "another-scheme", "null", "none"],
)
async def test_a_page_on_the_hubs_host_at_another_port_or_scheme_is_refused(
    as_operator: Cookie, origin: str
) -> None:
    """Cookies go to every port of a host: only the hub's own port may open its sockets."""
    assert not await handshake(as_operator, origin)


async def test_a_page_of_the_hubs_own_origin_opens_its_socket(as_operator: Cookie) -> None:
    assert await handshake(as_operator, "http://127.0.0.1:8000")
    assert await handshake(as_operator, "http://localhost", host="localhost:80")


async def test_behind_a_proxy_the_public_base_urls_origin_is_the_hubs(
    as_operator: Cookie, settings: Any
) -> None:
    settings.PUBLIC_BASE_URL = "https://localhost"

    assert await handshake(as_operator, "https://localhost:443", host="127.0.0.1:8000")
    assert not await handshake(as_operator, "https://localhost:8443", host="127.0.0.1:8000")


async def test_the_timeline_gets_what_the_page_missed_then_each_new_event(
    as_operator: Cookie,
) -> None:
    agent = await sync_to_async(make_agent)("watched")
    task = await sync_to_async(open_task)(agent, [StatusChange(TaskState.WORKING)])

    async with socket(f"/ws/console/tasks/{task.id}/?after=1", as_operator) as (ok, _, page):
        assert ok
        missed = await next_of(page, "events")
        assert [e["sequence"] for e in missed["events"]] == [2]
        assert missed["events"][0]["state"] == "Working"  # as the admin shows the field

        completed = [StatusChange(TaskState.COMPLETED)]
        await writer.record(task.id, TaskState.WORKING, completed)

        new = await next_of(page, "events")
        assert [e["sequence"] for e in new["events"]] == [3]
        assert new["events"][0]["summary"] == "→ completed"
        assert new["events"][0]["kind"] == "status update"


async def test_after_new_events_the_task_page_gets_its_other_parts_as_they_now_are(
    as_operator: Cookie,
) -> None:
    agent = await sync_to_async(make_agent)("watched")
    task = await sync_to_async(open_task)(agent, [StatusChange(TaskState.WORKING)])
    path = f"/ws/console/tasks/{task.id}/?after=2&messages=0"

    async with socket(path, as_operator) as (ok, _, page):
        assert ok
        first = await next_of(page, "task")  # as the page is when the feed starts
        assert (first["finished"], first["fields"]["state"]) == (False, "Working")
        assert first["messages"] == []  # the page has the first message (position 0)

        reply = agent_reply("All done.")
        await writer.record(task.id, TaskState.WORKING, [StatusChange(TaskState.COMPLETED, reply)])

        now = await next_of(page, "task")
        assert now["finished"] is True
        assert now["title"].endswith("(completed)")
        assert now["fields"]["state"] == "Completed"
        assert "All done." in now["fields"]["status_text"]
        assert "Finished: Completed" in now["summary"]
        assert [m["position"] for m in now["messages"]] == [1]
        assert "All done." in now["messages"][0]["cells"]["content"]


def agent_reply(text: str) -> pb.Message:
    message = pb.Message(message_id="reply-1", role=pb.ROLE_AGENT)
    message.parts.add(text=text)
    return message


async def test_two_pages_of_one_task_share_its_feed_and_each_gets_every_event(
    as_operator: Cookie,
) -> None:
    agent = await sync_to_async(make_agent)("shared")
    task = await sync_to_async(open_task)(agent, [StatusChange(TaskState.WORKING)])
    path = f"/ws/console/tasks/{task.id}/"

    async with (
        socket(f"{path}?after=2", as_operator) as (_, _, first),
        socket(f"{path}?after=0", as_operator) as (_, _, second),
    ):
        assert await sequences_until(second, 2) == [1, 2]
        assert len([key for key in feeds._feeds if key[1] == ("task", str(task.id))]) == 1

        completed = [StatusChange(TaskState.COMPLETED)]
        await writer.record(task.id, TaskState.WORKING, completed)

        assert (await sequences_until(first, 3))[-1:] == [3]
        assert (await sequences_until(second, 3))[-1:] == [3]


async def sequences_until(page: Any, last: int) -> list[int]:
    """The event numbers the page is sent, in order, up to `last` (a page that joined as
    another started the feed may be sent some it has: it keeps one of each)."""
    seen: list[int] = []
    while last not in seen:
        seen += [e["sequence"] for e in (await next_of(page, "events"))["events"]]
    return seen


async def test_the_task_list_gets_the_row_of_a_new_task(as_operator: Cookie) -> None:
    agent = await sync_to_async(make_agent)("listed")
    async with socket("/ws/console/tasks/", as_operator) as (ok, _, page):
        assert ok
        await asyncio.sleep(0.2)  # the list's feed is listening
        task = await sync_to_async(open_task)(agent, ended())

        while True:
            message = await next_of(page, "tasks")
            rows = {row["id"]: row for row in message["rows"]}
            if str(task.id) in rows:
                break
        row = rows[str(task.id)]
        assert row["state"] == "completed"
        assert row["url"] == f"/admin/tasks/task/{task.id}/change/"
        assert row["cells"]["agent"] == str(agent)


async def test_a_page_that_stops_reading_is_dropped_and_told_to_reload(
    as_operator: Cookie, settings: Any
) -> None:
    settings.CONSOLE_REFRESH_SECONDS = 0.2
    settings.CONSOLE_SOCKET_QUEUE = 4
    async with socket("/ws/console/dashboard/", as_operator) as (ok, _, page):
        assert ok
        received = []
        while True:
            message = await page.receive_json_from(timeout=WAIT)  # never acknowledged
            received.append(message)
            if message["type"] == "reload":
                break
        # Nothing follows, though the dashboard's numbers still change for other pages.
        assert await page.receive_nothing(timeout=3 * settings.CONSOLE_REFRESH_SECONDS)
        assert not [key for key in feeds._feeds if key[1] == ("dashboard", "")]

    # No more than the window was ever sent; the rest waited in the bounded outbox.
    assert [m["type"] for m in received] == ["dashboard"] * sockets.WINDOW + ["reload"]
    assert "Reload" in received[-1]["reason"]


async def test_a_page_that_keeps_up_is_never_dropped(as_operator: Cookie, settings: Any) -> None:
    settings.CONSOLE_REFRESH_SECONDS = 0.2
    settings.CONSOLE_SOCKET_QUEUE = 4
    async with socket("/ws/console/dashboard/", as_operator) as (ok, _, page):
        assert ok
        for _ in range(sockets.WINDOW + settings.CONSOLE_SOCKET_QUEUE + 3):
            message = await next_of(page, "dashboard")
            assert 'id="console-agents"' in message["html"]
