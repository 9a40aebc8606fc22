"""The console's WebSocket consumers: the dashboard's numbers, the task list's changed rows,
and a task's timeline as its events are written. Each joins a shared feed (`console.feeds`)
and is staff only (`console.sockets`)."""

from __future__ import annotations

from console import feeds, rows
from console.sockets import StaffSocket


class DashboardSocket(StaffSocket):
    async def start(self) -> None:
        feeds.watch_dashboard(self)

    def stop(self) -> None:
        feeds.unwatch_dashboard(self)


class TaskListSocket(StaffSocket):
    permission = "tasks.view_task"

    async def start(self) -> None:
        feeds.watch_tasks(self)

    def stop(self) -> None:
        feeds.unwatch_tasks(self)


class TaskTimelineSocket(StaffSocket):
    """`?after=N`: the page shows the events up to N; it gets the rest, then each new one."""

    permission = "tasks.view_task"

    @property
    def task_id(self) -> str:
        return str(self.scope["url_route"]["kwargs"]["task_id"])

    async def start(self) -> None:
        if feeds.watch_task(self.task_id, self.after(), self):
            return  # a new feed reads what this page lacks once it listens
        # Joined a running feed: catching up after joining, an event written in between
        # comes twice, and the page keeps one of each number.
        caught_up = await feeds.in_thread(rows.events_after)(self.task_id, self.after())
        if caught_up:
            self.offer(feeds.encode({"type": "events", "events": caught_up}))

    def stop(self) -> None:
        feeds.unwatch_task(self.task_id, self)

    def after(self) -> int:
        query = self.scope.get("query_string", b"").decode("latin-1")
        for pair in query.split("&"):
            name, _, value = pair.partition("=")
            if name == "after" and value.isdigit():
                return int(value)
        return 0
