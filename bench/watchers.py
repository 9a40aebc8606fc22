"""Operators watching the console during a bench run: `-n` staff pages, each following the
dashboard and the task list over their WebSockets as the browser does (every message
acknowledged by its number once read), until stopped.

    python bench/watchers.py --url http://127.0.0.1:8250 --username op --password ... -n 10

It signs in once through the admin's login form, opens every socket, prints `ready` when all
are open, and on SIGTERM or SIGINT prints one JSON line: messages received by kind, and how
many sockets were told to reload (dropped for falling behind) or closed by the hub.
`bench/bindings.py --console N` runs it beside the measured client.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import re
import signal
import sys
from typing import Any

import aiohttp

SOCKETS = ("/ws/console/dashboard/", "/ws/console/tasks/")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--url", required=True, help="the hub's base URL")
    p.add_argument("--username", required=True)
    p.add_argument("--password", required=True)
    p.add_argument("-n", "--watchers", type=int, default=10, help="pages, each with both sockets")
    return p.parse_args(argv)


async def sign_in(session: aiohttp.ClientSession, base: str, username: str, password: str) -> None:
    async with session.get(f"{base}/admin/login/") as response:
        form = await response.text()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    if token is None:
        raise SystemExit("no login form at /admin/login/")
    data = {"csrfmiddlewaretoken": token.group(1), "username": username, "password": password}
    async with session.post(f"{base}/admin/login/", data=data, allow_redirects=False) as response:
        if response.status != 302:
            raise SystemExit(f"signing in failed: HTTP {response.status}")


class Tally:
    def __init__(self) -> None:
        self.messages: collections.Counter[str] = collections.Counter()
        self.told_to_reload = 0
        self.closed_by_hub = 0


async def watch(session: aiohttp.ClientSession, url: str, origin: str, tally: Tally,
                opened: asyncio.Event, remaining: list[int]) -> None:  # fmt: skip
    async with session.ws_connect(url, headers={"Origin": origin}, heartbeat=None) as socket:
        remaining[0] -= 1
        if remaining[0] == 0:
            opened.set()
        async for frame in socket:
            if frame.type != aiohttp.WSMsgType.TEXT:
                break
            message = json.loads(frame.data)
            tally.messages[message["type"]] += 1
            if message["type"] == "reload":
                tally.told_to_reload += 1
                return
            await socket.send_str(json.dumps({"ack": message["n"]}))
        tally.closed_by_hub += 1


async def main_async(args: argparse.Namespace) -> int:
    base = args.url.rstrip("/")
    scheme = "wss" if base.startswith("https") else "ws"
    tally = Tally()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    jar = aiohttp.CookieJar(unsafe=True)  # cookies of an IP address's site
    async with aiohttp.ClientSession(cookie_jar=jar) as session:
        await sign_in(session, base, args.username, args.password)
        opened = asyncio.Event()
        remaining = [args.watchers * len(SOCKETS)]
        urls = [f"{scheme}{base[base.index(':') :]}{path}" for path in SOCKETS]
        pages = [
            asyncio.create_task(watch(session, url, base, tally, opened, remaining))
            for _ in range(args.watchers)
            for url in urls
        ]
        done = asyncio.ensure_future(asyncio.wait(pages, return_when=asyncio.FIRST_EXCEPTION))
        await asyncio.wait([asyncio.ensure_future(opened.wait()), done],
                           return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
        if not opened.is_set():
            failed = [p.exception() for p in pages if p.done() and p.exception()]
            raise SystemExit(f"a console socket did not open: {failed[:1]}")
        print("ready", flush=True)
        await stop.wait()
        for page in pages:
            page.cancel()
        await asyncio.gather(*pages, return_exceptions=True)
    summary: dict[str, Any] = {
        "sockets": args.watchers * len(SOCKETS),
        "messages": dict(tally.messages),
        "told_to_reload": tally.told_to_reload,
        "closed_by_hub": tally.closed_by_hub,
    }
    print(json.dumps(summary), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(main_async(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
