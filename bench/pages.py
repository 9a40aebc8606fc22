"""What the site's pages cost the web process: latency one at a time and the rate eight at a
time, with the server's CPU a request, for a few pages a visitor reaches without signing in.

It measures a hub that is already running (start one with `make run`, or any other way), so
two versions of the code can be compared on one machine: run it, change the code, restart the
hub, run it again.

    python bench/pages.py --url http://127.0.0.1:8000 --pid <the web process's pid>
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

import aiohttp

PAGES = {
    "home page": "/",
    "admin sign-in form": "/admin/login/",
    "developer sign-in form": "/dev/login/",
    "a page that needs a session (302)": "/dev/applications/",
}


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def one(session: aiohttp.ClientSession, url: str) -> float:
    started = time.perf_counter()
    async with session.get(url, allow_redirects=False) as response:
        await response.read()
        if response.status >= 400:
            raise SystemExit(f"{url} answered {response.status}")
    return (time.perf_counter() - started) * 1000


async def measure(url: str, count: int, concurrency: int, pid: int | None) -> dict[str, float]:
    async with aiohttp.ClientSession() as session:
        for _ in range(20):
            await one(session, url)  # warm: connections, templates, the first queries
        waits: list[float] = []
        cpu, started = cpu_seconds(pid) if pid else 0.0, time.perf_counter()

        async def worker(n: int) -> None:
            for _ in range(n):
                waits.append(await one(session, url))

        await asyncio.gather(*(worker(count // concurrency) for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
        used = (cpu_seconds(pid) - cpu) if pid else float("nan")
    waits.sort()
    return {
        "p50": statistics.median(waits), "p99": waits[int(len(waits) * 0.99) - 1],
        "rate": len(waits) / elapsed, "cpu_ms": used * 1000 / len(waits),
    }  # fmt: skip


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the hub's base URL")
    parser.add_argument("--pid", type=int, help="the web process, for its CPU a request")
    parser.add_argument("--requests", type=int, default=400, help="per page and concurrency")
    args = parser.parse_args()
    print("| page | c | p50 ms | p99 ms | req/s | server CPU ms/req |")
    print("|---|---|---|---|---|---|")
    for name, path in PAGES.items():
        for concurrency in (1, 8):
            r = await measure(args.url + path, args.requests, concurrency, args.pid)
            print(f"| {name} | {concurrency} | {r['p50']:.2f} | {r['p99']:.2f} "
                  f"| {r['rate']:.0f} | {r['cpu_ms']:.2f} |")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
