"""How long a 10 MB request holds the web process: the longest wait of `/healthz`, and of a
small A2A `GetTask`, while it is served.

It starts the distributed hub with bench/run.py's machinery (PostgreSQL, Redis, a migrated
and seeded database, one daphne web process and, as runhub starts beside it, the bulk
process that serves big bodies (`--no-bulk`: none, the web process serves them itself); the
`echo` agent answers inline, so no worker) and a probe in a process of its own that asks, in
turn, `/healthz` and a JSON-RPC `GetTask` of a small task (the door, its database pool) every
20 ms and notes each wait. The client then sends, one after another, blocking 1.0
`SendMessage`s of just under 10 MB (the default request limit) to `echo`, which answers with
all of it: each shape `--sends` times.

    python bench/big_bodies.py               # from the repository root; about a minute
    python bench/big_bodies.py --sends 10 --markdown out.md

Shapes: ten text parts of 0.95 MB, one text part of 9.5 MB, and one data part holding a list
of 100,000 short strings. The report gives, per shape, the send's median time and the probes'
median, p99 and longest waits while the sends ran, beside their waits with nothing sent.

A probe's wait is also the time the web process waited for a core: on two cores the bulk
process, PostgreSQL and the client take them too. `--holds MS` tells the two apart: the web
process logs each callback that held its event loop longer than MS (LOOP_HOLD_LOG_MS, in
asyncio's debug mode, which makes every callback slower), and the report gives, per shape, how
many did and the longest.

    python bench/big_bodies.py --holds 4
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as hub

LIMIT = 10 * 1024 * 1024  # A2A_MAX_REQUEST_BYTES by default
PROBE_GAP = 0.02


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    hub.add_service_arguments(p, redis_db=6)
    p.add_argument("--sends", type=int, default=5, help="sends of each shape")
    p.add_argument("--no-bulk", dest="bulk", action="store_false",
                   help="no bulk process: the web process serves big bodies itself")  # fmt: skip
    p.add_argument("--holds", type=int, default=0, metavar="MS",
                   help="count the loop holds of the web process over MS")  # fmt: skip
    p.add_argument("--probe", help=argparse.SUPPRESS)  # the probe's own process: its base URL
    p.add_argument("--probe-task", help=argparse.SUPPRESS)  # and the task it asks for
    hub.add_run_arguments(p, first_port=8370)
    return p.parse_args(argv)


# -- the probe (its own process, so the client never holds its GIL) ---------------------------


PROBES = ("/healthz", "GetTask")


def probe(base: str, task_id: str) -> None:
    """Ask /healthz and GetTask in turn, printing each wait in ms (an error as -1)."""
    import http.client

    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "GetTask",
                       "params": {"id": task_id}}).encode()  # fmt: skip
    headers = {"A2A-Version": "1.0", "Content-Type": "application/json"}
    while True:
        for kind in PROBES:
            started = time.monotonic()
            try:
                if kind == "GetTask":
                    connection.request("POST", "/agents/echo/jsonrpc/", body, headers)
                else:
                    connection.request("GET", kind)
                answer = connection.getresponse()
                data = answer.read()
                good = answer.status == 200 and (kind != "GetTask" or b'"result"' in data)
                wait = (time.monotonic() - started) * 1000 if good else -1
            except OSError:
                connection.close()
                wait = -1
            print(f"{time.time():.4f} {kind} {wait:.2f}", flush=True)
            time.sleep(PROBE_GAP / 2)


def start_probe(bench: hub.Bench, base: str, task_id: str) -> subprocess.Popen[str]:
    command = [sys.executable, __file__, "--probe", base, "--probe-task", task_id]
    out = open(bench.logs / "probe.txt", "w")  # noqa: SIM115 (lives as long as the probe)
    return subprocess.Popen(command, stdout=out, text=True)


def waits_between(bench: hub.Bench, start: float, end: float) -> dict[str, list[float]]:
    waits: dict[str, list[float]] = {kind: [] for kind in PROBES}
    for line in (bench.logs / "probe.txt").read_text().splitlines():
        at, kind, wait = line.split()
        # A probe that started before `end` and answered after it waited within the window.
        if start <= float(at) - max(float(wait), 0) / 1000 <= end:
            waits[kind].append(float(wait))
    return waits


# asyncio's warning for a slow callback, as the web process logs it (LOG_FORMAT plain).
HOLD = re.compile(r"^(\S+ \S+) WARNING asyncio Executing .* took ([0-9.]+) seconds$")


def holds_between(bench: hub.Bench, start: float, end: float) -> list[float]:
    """The web process's loop holds (ms) logged between `start` and `end` (Unix times)."""
    holds = []
    for line in (bench.logs / "web.log").read_text(errors="replace").splitlines():
        if found := HOLD.match(line):
            at = dt.datetime.strptime(found[1], "%Y-%m-%d %H:%M:%S,%f").timestamp()
            if start <= at <= end:
                holds.append(float(found[2]) * 1000)
    return holds


# -- the sends ---------------------------------------------------------------------------------


def shapes() -> dict[str, list[dict[str, Any]]]:
    return {
        "ten text parts of 0.95 MB": [{"text": "y" * (LIMIT // 11)} for _ in range(10)],
        "one text part of 9.5 MB": [{"text": "y" * (LIMIT * 9 // 10)}],
        "a data part of 100,000 strings": [{"data": ["z" * 60] * 100_000}],
    }


def send(url: str, parts: list[dict[str, Any]]) -> tuple[float, str]:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": parts}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                       "params": {"message": message}}).encode()  # fmt: skip
    if len(body) > LIMIT:
        raise SystemExit(f"a body of {len(body)} bytes is over the limit")
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "A2A-Version": "1.0", "Content-Type": "application/json"})  # fmt: skip
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=120) as answer:
        result = json.loads(answer.read())["result"]
    if result["task"]["status"]["state"] != "TASK_STATE_COMPLETED":
        raise RuntimeError(f"the send ended {result['task']['status']['state']}")
    return time.monotonic() - started, result["task"]["id"]


Row = tuple[str, list[float], dict[str, list[float]], list[float]]


def run_all(bench: hub.Bench) -> list[Row]:
    args = bench.args
    port = next(p for p in range(args.port, args.port + 50) if hub.port_free(p))
    url = hub.create_database(bench, f"a2abench_big_{bench.tag}")
    hub.flush_redis(bench)
    env = hub.hub_env(url.replace("postgresql://", "postgres://"), args.redis, bench.logs / "data")
    print("== preparing the hub (migrate, seed)")
    hub.prepare_hub(bench, env)
    base = f"http://127.0.0.1:{port}"
    if args.bulk:  # as runhub serves a distributed hub
        env["A2A_BULK_SOCKET"] = str(bench.logs / "bulk.sock")
        endpoint = f"unix:{env['A2A_BULK_SOCKET']}:lockfile=1"
        command = [sys.executable, "-m", "a2ahub.daphne", "-e", endpoint, "a2ahub.asgi:application"]
        bench.start("bulk", command, env | {"A2AHUB_BULK_PROCESS": "1"}, hub.REPO)
    watched = {"LOOP_HOLD_LOG_MS": str(args.holds)} if args.holds else {}
    bench.start("web", hub.hub_web_command("hub-daphne", port), env | watched, hub.REPO)
    hub.wait_http(bench, "web", f"{base}/agents/echo/.well-known/agent-card.json")
    endpoint = f"{base}/agents/echo/jsonrpc/"
    _, small = send(endpoint, [{"text": "warm"}])
    prober = start_probe(bench, base, small)
    windows: list[tuple[str, list[float], float, float]] = []
    try:
        time.sleep(3)
        windows.append(("nothing sent", [], time.time() - 2.5, time.time()))
        for name, parts in shapes().items():
            print(f"== {name}")
            started, took = time.time(), []
            for _ in range(args.sends):
                took.append(send(endpoint, parts)[0])
                bench.check_alive("web")
            time.sleep(0.2)
            windows.append((name, took, started, time.time()))
    finally:
        prober.terminate()
        prober.wait(timeout=10)
    return [(name, took, waits_between(bench, start, end), holds_between(bench, start, end))
            for name, took, start, end in windows]  # fmt: skip


def report(rows: list[Row], sends: int, holds: int) -> str:
    lines = [
        f"Blocking 1.0 `SendMessage` to the inline `echo` agent, {sends} sends a shape, one at a "
        f"time; `/healthz` and a small `GetTask` asked in turn, each every "
        f"{PROBE_GAP * 1000:.0f} ms, from another process.",
        "",
        "| body | send s (median) | /healthz wait ms: median | p99 | longest "
        "| GetTask wait ms: median | p99 | longest | errors |"
        + (f" loop holds over {holds} ms: count, longest ms |" if holds else ""),
        "|---|---|---|---|---|---|---|---|---|" + ("---|" if holds else ""),
    ]
    for name, took, waits, held in rows:
        cells, errors = [], 0
        for kind in PROBES:
            good = sorted(w for w in waits[kind] if w >= 0)
            errors += len(waits[kind]) - len(good)
            p99 = good[min(len(good) - 1, int(len(good) * 0.99))] if good else None
            cells.append(f"{hub.fmt(statistics.median(good) if good else None)} "
                         f"| {hub.fmt(p99)} | {hub.fmt(good[-1] if good else None)}")  # fmt: skip
        lines.append(
            f"| {name} | {hub.fmt(statistics.median(took), 2) if took else '-'} "
            f"| {' | '.join(cells)} | {errors} |"
            + (f" {len(held)}, {hub.fmt(max(held)) if held else '-'} |" if holds else "")
        )
    return "\n".join(lines)


def environment() -> str:
    from importlib.metadata import version

    packages = ", ".join(f"{n} {version(n)}" for n in ("django", "daphne", "protobuf"))
    return (f"{time.strftime('%Y-%m-%dT%H:%M')}, {os.cpu_count()} cores, "
            f"Python {sys.version.split()[0]}; {packages}; not pinned")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.probe:
        probe(args.probe, args.probe_task)
        return 0
    started = time.monotonic()
    with hub.bench_session(args, "a2ahub-bench-big-", pin=False) as bench:
        rows = run_all(bench)
    text = f"Run: {environment()}\n\n{report(rows, args.sends, args.holds)}"
    print(f"\n{text}\n\n(total {time.monotonic() - started:.0f} s)")
    if args.markdown:
        args.markdown.write_text(f"# A 10 MB request and the web process\n\n{text}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
