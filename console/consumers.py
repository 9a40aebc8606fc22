"""The console's WebSocket consumers: the dashboard's numbers, the task list's changed rows,
and a task's timeline as its events are written. Each joins a shared feed (`console.feeds`)
and is staff only (`console.sockets`)."""

from __future__ import annotations

from console import feeds, rows, task_view
from console.sockets import StaffSocket


class DashboardSocket(StaffSocket):
    async def start(self) -> None:
        feeds.join(feeds.DASHBOARD, feeds.DashboardNumbers, self)

    def stop(self) -> None:
        feeds.leave(feeds.DASHBOARD, self)


class TaskListSocket(StaffSocket):
    permission = "tasks.view_task"

    async def start(self) -> None:
        feeds.join(feeds.TASKS, feeds.TaskChanges, self)

    def stop(self) -> None:
        feeds.leave(feeds.TASKS, self)


class TaskTimelineSocket(StaffSocket):
    """`?after=N&messages=M`: the page shows the events up to N and the messages up to
    position M; it gets the rest, then each new one, and the task's other parts as they
    change."""

    permission = "tasks.view_task"

    @property
    def task_id(self) -> str:
        return str(self.scope["url_route"]["kwargs"]["task_id"])

    async def start(self) -> None:
        after, messages = self.number("after"), self.number("messages")
        if feeds.watch_task(self.task_id, after, messages, self):
            return  # a new feed reads what this page lacks once it listens
        # Joined a running feed: catching up after joining, an event or message written in
        # between comes twice, and the page keeps one of each number.
        caught_up = await feeds.in_thread(rows.events_after)(self.task_id, after)
        if caught_up:
            self.offer(feeds.encode({"type": "events", "events": caught_up}))
        view = await feeds.in_thread(task_view.task_view)(self.task_id, messages)
        if view is not None:
            self.offer(feeds.encode(view))

    def stop(self) -> None:
        feeds.unwatch_task(self.task_id, self)

    def number(self, wanted: str) -> int:
        """A whole number of the query (`after`, `messages`); 0 when absent or not one."""
        query = self.scope.get("query_string", b"").decode("latin-1")
        for pair in query.split("&"):
            name, _, value = pair.partition("=")
            if name == wanted and value.isdigit():
                return int(value)
        return 0
