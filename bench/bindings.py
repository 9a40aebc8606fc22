"""HTTP+JSON (REST) against JSON-RPC on one hub process: blocking sends and stream first events.

It starts the distributed hub with bench/run.py's machinery (PostgreSQL, Redis, one Celery
worker, one web server) and drives A2A 1.0 on the same agents through both bindings with one
client: REST `message:send` against JSON-RPC `SendMessage` (the inline `echo` and the Celery
`echo-worker` agents), and REST `message:stream` against JSON-RPC `SendStreamingMessage`
(bench/streams.py's five-chunk `bench-echo5` agent). The bindings take turns in rounds,
the order swapped each round (REST first, then JSON-RPC first, ...), so the machine's drift
falls on both; the report gives each binding's median over the rounds and REST / JSON-RPC.

With `--console N` the two sides of each round are JSON-RPC with N operators watching the
console (bench/watchers.py: a staff session's dashboard and task list sockets each, opened
before the run's warm-up and closed after it) and JSON-RPC with nobody watching; the report
gives watched / unwatched.

With `--auth key` (or `--auth token`) the two sides are JSON-RPC sends and streams carrying a
user's hub-wide API key in `X-API-Key` (or an OAuth2 client-credentials token, fetched from the
hub's `/o/token/` as a client would, as `Authorization: Bearer`) and the same requests with no
credential; the report gives key (token) / anonymous.

    python bench/bindings.py                       # from the repository root; about 5 minutes
    python bench/bindings.py --rounds 6 --markdown out.md
    python bench/bindings.py --console 10          # the console's cost to sends and streams
    python bench/bindings.py --auth token          # what a bearer token costs a call
    python bench/bindings.py --help
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import datetime as dt
import importlib.util
import json
import os
import secrets
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as hub
import streams

BINDINGS = ("rest", "jsonrpc")
# With --console: JSON-RPC both sides, with the console's watchers open and without.
CONSOLE_ARMS = ("watched", "quiet")
# With --auth: JSON-RPC both sides, with a credential and without.
AUTH_ARMS = {"key": ("key", "anonymous"), "token": ("token", "anonymous")}
NAMES = {"rest": "REST", "jsonrpc": "JSON-RPC", "watched": "watched", "quiet": "unwatched",
         "key": "API key", "token": "bearer token", "anonymous": "anonymous"}  # fmt: skip
# REST against JSON-RPC, from issue #12: send req/s at least 0.9x, first event p50 at most 1.1x.
# Watched against unwatched, from issue #15: within 5 % either way.
# A credential against none, from issue #13: within 10 %.
TARGETS = {BINDINGS: (0.9, 1.1), CONSOLE_ARMS: (0.95, 1.05),
           AUTH_ARMS["key"]: (0.9, 1.1), AUTH_ARMS["token"]: (0.9, 1.1)}  # fmt: skip
CALLER = "bench-caller"
OPERATOR = "bench-operator"
HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}


@dataclass(frozen=True)
class Scenario:
    """One comparison: what is sent, to which agent, at which concurrency."""

    kind: str  # "send" or "stream"
    slug: str
    c: int

    @property
    def title(self) -> str:
        what = "blocking send" if self.kind == "send" else "stream, first event"
        return f"{what}, `{self.slug}`"


@dataclass
class Measured:
    """One side's run of one scenario in one round (`binding`: a binding, or with --console
    whether the console was watched)."""

    round: int
    scenario: Scenario
    binding: str
    row: dict[str, Any] = field(default_factory=dict)


# -- command line --------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    # Redis database 4: the integration tests claim 5 to 15 and CI uses 0.
    hub.add_service_arguments(p, redis_db=4)
    # Even, so that each binding goes first as often: the first run of a round tended to come
    # out slower, whichever binding it was (the previous scenario's writes settling, perhaps).
    p.add_argument("--rounds", type=int, default=4, help="rounds; each runs both bindings")
    p.add_argument("-d", "--duration", type=float, default=6.0, help="measured s per run")
    p.add_argument("--warmup", type=float, default=2.0, help="unmeasured s per run (pools fill)")
    p.add_argument("--send-c", default="16", help="concurrency of the sends (comma-separated)")
    p.add_argument("--stream-c", default="1,16", help="concurrency of the streams")
    p.add_argument("--no-worker", action="store_true", help="leave out the `echo-worker` sends")
    p.add_argument("--timeout", type=float, default=10.0, help="per-request timeout, s")
    p.add_argument("--server", choices=("hub-daphne", "hub-uvicorn"), default="hub-daphne")
    p.add_argument(
        "--console",
        type=int,
        default=0,
        metavar="N",
        help="compare JSON-RPC with N console watchers open against none (not REST/JSON-RPC)",
    )
    p.add_argument(
        "--auth",
        choices=sorted(AUTH_ARMS),
        help="compare JSON-RPC with this credential against none (not REST/JSON-RPC)",
    )
    p.add_argument(
        "--profile",
        action="store_true",
        help="afterwards, one REST and one JSON-RPC run of each scenario at the highest "
        "concurrency under py-spy --gil (bench/profile_hub.py)",
    )
    hub.add_run_arguments(p, first_port=8250)
    args = p.parse_args(argv)
    args.rounds = max(1, args.rounds)
    return args


def scenarios(args: argparse.Namespace) -> list[Scenario]:
    def levels(text: str) -> list[int]:
        return [int(c) for c in text.split(",") if c.strip()]

    found = [Scenario("send", "echo", c) for c in levels(args.send_c)]
    if not args.no_worker:
        found += [Scenario("send", "echo-worker", c) for c in levels(args.send_c)]
    return found + [Scenario("stream", streams.STREAM_AGENT, c) for c in levels(args.stream_c)]


def load_generator(shared: Path) -> ModuleType:
    """../shared/bench/a2a_load.py: its checks, percentiles and CPU probe, shared by both
    bindings' requests here so that they are judged alike."""
    spec = importlib.util.spec_from_file_location("a2a_load", shared / "a2a_load.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- one request ---------------------------------------------------------------------------


def sides(args: argparse.Namespace) -> tuple[str, str]:
    """The two sides compared, the first over the second."""
    if args.auth:
        return AUTH_ARMS[args.auth]
    return CONSOLE_ARMS if args.console else BINDINGS


def wire(side: str) -> str:
    """The binding a side's requests use."""
    return side if side in BINDINGS else "jsonrpc"


def request_of(scenario: Scenario, binding: str, base: str, rid: int, mid: str) -> tuple:
    """The URL, body and headers of one 1.0 request; the message is the same in both."""
    params = {"message": {"messageId": mid, "role": "ROLE_USER", "parts": [{"text": "hello"}]}}
    headers = dict(HEADERS)
    if scenario.kind == "stream":
        headers["Accept"] = "text/event-stream"
    if binding == "rest":
        operation = "message:send" if scenario.kind == "send" else "message:stream"
        url = f"{base}/agents/{scenario.slug}/rest/{operation}"
        return url, json.dumps(params).encode(), headers
    method = "SendMessage" if scenario.kind == "send" else "SendStreamingMessage"
    envelope = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    return f"{base}/agents/{scenario.slug}/jsonrpc/", json.dumps(envelope).encode(), headers


async def sse_data(response: Any) -> AsyncIterator[bytes]:
    """The `data:` of each event of an SSE body (comments and empty events skipped)."""
    buffer = b""
    async for chunk in response.content.iter_any():
        buffer = (buffer + chunk).replace(b"\r\n", b"\n")
        while (end := buffer.find(b"\n\n")) >= 0:
            block, buffer = buffer[:end], buffer[end + 2 :]
            lines = [ln[5:].lstrip(b" ") for ln in block.split(b"\n") if ln.startswith(b"data:")]
            if lines:
                yield b"\n".join(lines)


class Client:
    """One binding's requests for one scenario, checked as a2a_load.py checks 1.0 answers:
    a completed Task for a send; for a stream, events ending in a completed final status
    and nothing after it. REST carries the answer bare, JSON-RPC in its envelope."""

    def __init__(
        self, load: ModuleType, scenario: Scenario, side: str, base: str,
        credentials: dict[str, dict[str, str]] | None = None,
    ) -> None:  # fmt: skip
        self.load, self.scenario, self.binding, self.base = load, scenario, wire(side), base
        self.tag = f"{os.getpid():x}-{time.monotonic_ns():x}"
        self.extra = (credentials or {}).get(side, {})

    def result(self, raw: bytes, rid: int) -> Any:
        try:
            answer = json.loads(raw)
        except ValueError:
            raise self.load.Invalid("bad-json", raw[:200].decode(errors="replace")) from None
        return answer if self.binding == "rest" else self.load.envelope(answer, rid)

    async def one(self, session: Any, rid: int) -> tuple[float, float]:
        """Seconds to the answer's first event (a send: its end) and to its end."""
        url, body, headers = request_of(
            self.scenario, self.binding, self.base, rid, f"bb-{self.tag}-{rid}"
        )
        headers.update(self.extra)
        started = time.perf_counter()
        async with session.post(url, data=body, headers=headers) as response:
            if response.status != 200:
                text = (await response.read())[:300].decode(errors="replace")
                raise self.load.Invalid(f"http-{response.status}", text)
            if self.scenario.kind == "send":
                raw = await response.read()
                took = time.perf_counter() - started
                self.load.check_send(self.result(raw, rid), "1.0")
                return took, took
            return await self.read_stream(response, rid, started)

    async def read_stream(self, response: Any, rid: int, started: float) -> tuple[float, float]:
        media = response.headers.get("Content-Type", "")
        if not media.startswith("text/event-stream"):
            raise self.load.Invalid("not-sse", media)
        first = final = None
        async for data in sse_data(response):
            now = time.perf_counter() - started
            first = now if first is None else first
            if final is not None:
                raise self.load.Invalid("events-after-final")
            if self.load.stream_event_final(self.result(data, rid), "1.0"):
                final = now
        if first is None or final is None:
            raise self.load.Invalid("no-final-event")
        return first, final


# -- one run: a closed loop of c clients -----------------------------------------------------


class Sender(Protocol):
    """What a closed loop drives: one checked request at a time (`Client`, push.py's sends)."""

    load: ModuleType

    async def one(self, session: Any, rid: int) -> tuple[float, float]: ...


async def closed_loop(
    client: Sender,
    args: argparse.Namespace,
    c: int,
    pids: list[int],
    counters: Callable[[], dict[str, float]] | None = None,
) -> dict:
    """`c` clients, each with one request in flight on its own connection (as a2a_load.py):
    `--warmup` s unmeasured, then `--duration` s counted by when each request ends. With
    `counters`, what they counted over the measured window is the row's `counted`."""
    import aiohttp

    load = client.load
    firsts: list[float] = []
    ends: list[float] = []
    errors: collections.Counter[str] = collections.Counter()
    connector = aiohttp.TCPConnector(limit=c, keepalive_timeout=30)
    timeout = aiohttp.ClientTimeout(total=args.timeout)
    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, auto_decompress=False
    ) as session:
        await client.one(session, 0)  # a wrong URL or answer fails loudly, not as all errors
        measure_from = time.perf_counter() + args.warmup
        until = measure_from + args.duration
        probe = load.CpuProbe(pids, ["postgres"])

        async def loop(worker: int) -> None:
            n = 0
            while time.perf_counter() < until:
                n += 1
                try:
                    first, end = await client.one(session, worker * 10_000_000 + n)
                    kind = ""
                except load.Invalid as exc:
                    kind = exc.kind
                except TimeoutError:
                    kind = "timeout"
                except (aiohttp.ClientError, OSError) as exc:
                    kind = f"conn:{type(exc).__name__}"
                if measure_from <= time.perf_counter() <= until:
                    if kind:
                        errors[kind] += 1
                    else:
                        firsts.append(first)
                        ends.append(end)

        counted: dict[str, float] = {}

        async def window() -> float:
            await asyncio.sleep(max(0.0, measure_from - time.perf_counter()))
            before = await asyncio.to_thread(counters) if counters else {}
            probe.a, cpu = probe.sample(), time.process_time()
            await asyncio.sleep(max(0.0, until - time.perf_counter()))
            probe.b = probe.sample()
            after = await asyncio.to_thread(counters) if counters else {}
            counted.update({key: after[key] - before[key] for key in after})
            return time.process_time() - cpu

        timing = asyncio.ensure_future(window())
        await asyncio.gather(*(loop(w + 1) for w in range(c)))
        client_cpu = await timing
    row = row_of(load, args, c, firsts, ends, errors, probe.report(len(ends)), client_cpu, pids)
    return {**row, "counted": counted}


def row_of(
    load: ModuleType,
    args: argparse.Namespace,
    c: int,
    firsts: list[float],
    ends: list[float],
    errors: collections.Counter[str],
    cpu: dict[str, Any] | None,
    client_cpu: float,
    pids: list[int],
) -> dict[str, Any]:
    groups = (cpu or {}).get("groups", {})
    ok = len(ends)

    def ms_per_request(keys: list[str]) -> float | None:
        pct = sum(groups.get(k, {}).get("cpu_pct", 0.0) for k in keys)
        return round(pct / 100 * args.duration * 1000 / ok, 2) if ok else None

    return {
        "c": c, "ok": ok, "rps": round(ok / args.duration, 1), "errors": sum(errors.values()),
        "error_kinds": dict(errors), "first": load.summarize(firsts), "end": load.summarize(ends),
        "web_ms": ms_per_request([f"pid:{pids[0]}"]),
        "server_ms": ms_per_request([f"pid:{p}" for p in pids]),
        "pg_ms": ms_per_request(["comm:postgres"]),
        "client_pct": round(100 * client_cpu / args.duration, 1),
    }  # fmt: skip


def measure(client: Client, args: argparse.Namespace, c: int, pids: list[int]) -> dict:
    try:
        return run_loop(closed_loop(client, args, c, pids))
    except Exception as exc:  # the preflight request, or the loop itself
        return {"c": c, "fatal": f"{type(exc).__name__}: {exc}"[:300]}


def run_loop(coroutine: Any) -> Any:
    """On uvloop when it is there, as a2a_load.py runs: a cheaper client."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)
    return uvloop.run(coroutine)


# -- the rounds ----------------------------------------------------------------------------


def order_of(round_number: int, args: argparse.Namespace) -> tuple[str, ...]:
    """The first side first in odd rounds (REST; watched), the second in even ones."""
    both = sides(args)
    return both if round_number % 2 else both[::-1]


@contextmanager
def console_watchers(args: argparse.Namespace, side: str, base: str) -> Iterator[dict[str, Any]]:
    """For the watched side, `--console` operators on the console (bench/watchers.py, on the
    client's core) for the block; what they received is put in the dict after it."""
    seen: dict[str, Any] = {}
    if side != "watched":
        yield seen
        return
    command = [sys.executable, str(Path(__file__).with_name("watchers.py")), "--url", base,
               "--username", OPERATOR, "--password", args.operator_password,
               "-n", str(args.console)]  # fmt: skip
    watchers = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert watchers.stdout is not None
        if watchers.stdout.readline().strip() != "ready":
            raise RuntimeError("the console watchers did not start")
        yield seen
    finally:
        watchers.terminate()
        out, _ = watchers.communicate(timeout=30)
        lines = out.strip().splitlines()
        if lines:
            seen.update(json.loads(lines[-1]))


def run_rounds(
    bench: hub.Bench, load: ModuleType, base: str, pids: dict[str, int],
    credentials: dict[str, dict[str, str]],
) -> list[Measured]:  # fmt: skip
    args = bench.args
    done: list[Measured] = []
    for number in range(1, args.rounds + 1):
        first, second = (NAMES[b] for b in order_of(number, args))
        print(f"\n== round {number} of {args.rounds}: {first} then {second}")
        for scenario in scenarios(args):
            worker = [pids["celery"]] if scenario.slug == "echo-worker" else []
            for side in order_of(number, args):
                watched = [pids["web"], *worker]
                with console_watchers(args, side, base) as seen:
                    client = Client(load, scenario, side, base, credentials)
                    row = measure(client, args, scenario.c, watched)
                if seen:
                    row["console"] = seen
                done.append(Measured(number, scenario, side, row))
                print(f"  {scenario.title} c={scenario.c} {NAMES[side]}: {brief(scenario, row)}")
                bench.check_alive(args.server)
    return done


def brief(scenario: Scenario, row: dict[str, Any]) -> str:
    if "fatal" in row:
        return f"FATAL {row['fatal']}"
    key = "end" if scenario.kind == "send" else "first"
    timing = row[key]
    console = row.get("console")
    watched = f", console: {console_brief(console)}" if console else ""
    return (f"{row['rps']} req/s, {'latency' if key == 'end' else 'first event'} p50 "
            f"{timing.get('p50_ms')} ms p99 {timing.get('p99_ms')} ms, errors {row['errors']}, "
            f"web CPU {row['web_ms']} ms/req, client {row['client_pct']}% of a core"
            f"{watched}")  # fmt: skip


def console_brief(seen: dict[str, Any]) -> str:
    kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(seen.get("messages", {}).items()))
    return (
        f"{seen.get('sockets', 0)} sockets got {kinds or 'nothing'}; "
        f"{seen.get('told_to_reload', 0)} dropped, {seen.get('closed_by_hub', 0)} closed"
    )


def profile_runs(
    bench: hub.Bench, load: ModuleType, base: str, web_pid: int,
    credentials: dict[str, dict[str, str]],
) -> list[str]:  # fmt: skip
    """One run of each binding per kind of scenario under py-spy --gil, summarized by
    bench/profile_hub.py (ms of web CPU per request, by step and by function)."""
    import profile_hub

    args = bench.args
    picked: dict[tuple[str, str], Scenario] = {}
    for scenario in scenarios(args):
        key = (scenario.kind, scenario.slug)
        if key not in picked or scenario.c > picked[key].c:
            picked[key] = scenario
    out = []
    for scenario in picked.values():
        for binding in sides(args):
            raw = bench.logs / f"{scenario.kind}-{scenario.slug}-{binding}.raw"
            seconds = args.warmup + args.duration
            with console_watchers(args, binding, base):
                spy = profile_hub.record(web_pid, seconds, 250, raw, True)
                client = Client(load, scenario, binding, base, credentials)
                row = measure(client, args, scenario.c, [web_pid])
                spy.wait(timeout=seconds + 60)
            head = f"{scenario.title} c={scenario.c}, {NAMES[binding]}: {brief(scenario, row)}"
            summary = profile_hub.summarize(raw, 25, row.get("web_ms")) if raw.exists() else ""
            out.append(f"{head}\n{summary or '  no py-spy output'}")
            print(out[-1])
    return out


def run_all(bench: hub.Bench, load: ModuleType) -> tuple[list[Measured], list[str]]:
    args = bench.args
    port = next(p for p in range(args.port, args.port + 50) if hub.port_free(p))
    url = hub.create_database(bench, f"a2abench_bindings_{bench.tag}")
    check_redis_is_ours(args.redis)
    hub.flush_redis(bench)
    env = hub.hub_env(url.replace("postgresql://", "postgres://"), args.redis, bench.logs / "data")
    print("== preparing the hub (migrate, seed, echo-worker and bench agents)")
    hub.prepare_hub(bench, env)
    streams.create_agents(env)
    if args.console:
        create_operator(env, args)
        # As deployed: beat sends the console's minute rollup (and the hub's other periodic
        # jobs), which keeps the dashboard's reads of the task table to the last minutes.
        beat = [hub.python(), "-m", "celery", "-A", "a2ahub", "beat", "-l", "WARNING"]
        bench.start("beat", beat, env, hub.REPO)
    celery_pid = hub.start_celery(bench, env)
    web_pid = bench.start(args.server, hub.hub_web_command(args.server, port), env, hub.REPO)
    base = f"http://127.0.0.1:{port}"
    hub.wait_http(bench, args.server, f"{base}/agents/echo/.well-known/agent-card.json")
    credentials = caller_credentials(env, base) if args.auth else {}
    rows = run_rounds(bench, load, base, {"web": web_pid, "celery": celery_pid}, credentials)
    profiles = []
    if args.profile:
        print("\n== profiles (py-spy --gil on the web process)")
        profiles = profile_runs(bench, load, base, web_pid, credentials)
    return rows, profiles


def create_operator(env: dict[str, str], args: argparse.Namespace) -> None:
    """A superuser for the console's watchers, with a password made for this run."""
    args.operator_password = secrets.token_urlsafe(16)
    command = [hub.python(), "manage.py", "createsuperuser", "--noinput",
               "--username", OPERATOR, "--email", "operator@example.com"]  # fmt: skip
    made = env | {"DJANGO_SUPERUSER_PASSWORD": args.operator_password}
    done = subprocess.run(command, cwd=hub.REPO, env=made, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"creating the console's operator failed:\n{done.stderr}")


def caller_credentials(env: dict[str, str], base: str) -> dict[str, dict[str, str]]:
    """A user with a hub-wide API key, and an application's client-credentials token got from
    the running hub's token endpoint: the headers each side sends."""
    script = (
        "import django, json, secrets; django.setup()\n"
        "from django.contrib.auth.models import User\n"
        "from oauth2_provider.models import Application\n"
        "from agents.models import ApiKey\n"
        f"user, _ = User.objects.get_or_create(username={CALLER!r})\n"
        "_, key = ApiKey.issue('bench key', owner=user)\n"
        "secret = secrets.token_urlsafe(24)\n"
        "app = Application.objects.create(name='bench client', client_secret=secret,\n"
        "    client_type=Application.CLIENT_CONFIDENTIAL,\n"
        "    authorization_grant_type=Application.GRANT_CLIENT_CREDENTIALS)\n"
        "print(json.dumps({'key': key, 'client_id': app.client_id, 'secret': secret}))\n"
    )
    done = subprocess.run([hub.python(), "-c", script], cwd=hub.REPO, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"creating the caller's credentials failed:\n{done.stderr}")
    made = json.loads(done.stdout.strip().splitlines()[-1])
    import urllib.parse
    import urllib.request

    form = urllib.parse.urlencode({"grant_type": "client_credentials", "scope": "a2a:invoke",
                                   "client_id": made["client_id"],
                                   "client_secret": made["secret"]}).encode()  # fmt: skip
    with urllib.request.urlopen(f"{base}/o/token/", form, timeout=30) as answer:
        token = json.loads(answer.read())["access_token"]
    return {"key": {"X-API-Key": made["key"]}, "token": {"Authorization": f"Bearer {token}"}}


def check_redis_is_ours(url: str) -> None:
    """Refuse a Redis database an integration-test session has claimed (it is flushed)."""
    import redis

    if redis.Redis.from_url(url).exists("a2ahub-integration:claimed-by"):
        raise SystemExit(f"{url} is claimed by an integration-test session; pick another --redis")


# -- the report ----------------------------------------------------------------------------


def value(row: dict[str, Any], metric: str) -> float | None:
    if "fatal" in row:
        return None
    if metric == "rps":
        return row["rps"]
    key, pct = metric.split(":")
    return row[key].get(f"{pct}_ms")


def metrics(kind: str, pair: tuple[str, str]) -> list[tuple[str, str, float | None, bool]]:
    """Per kind: (label, metric, target or None, True if higher is better)."""
    send_target, stream_target = TARGETS[pair]
    return {
        "send": [("req/s", "rps", send_target, True), ("latency p50", "end:p50", None, False),
                 ("latency p99", "end:p99", None, False)],
        "stream": [("first event p50", "first:p50", stream_target, False),
                   ("first event p99", "first:p99", None, False),
                   ("final event p50", "end:p50", None, False)],
    }[kind]  # fmt: skip


def pair_of(rows: list[Measured]) -> tuple[str, str]:
    for pair in (CONSOLE_ARMS, *AUTH_ARMS.values()):
        if any(m.binding == pair[0] for m in rows):
            return pair
    return BINDINGS


def pair_name(pair: tuple[str, str]) -> str:
    return f"{NAMES[pair[0]]} / {NAMES[pair[1]]}"


def medians(rows: list[Measured], scenario: Scenario, binding: str, metric: str) -> list[float]:
    found = [value(m.row, metric) for m in rows if m.scenario == scenario and m.binding == binding]
    return [v for v in found if v is not None]


def per_round_ratios(rows: list[Measured], scenario: Scenario, metric: str) -> list[float]:
    ratios = []
    top, bottom = pair_of(rows)
    for number in sorted({m.round for m in rows}):
        pair = {m.binding: value(m.row, metric) for m in rows
                if m.round == number and m.scenario == scenario}  # fmt: skip
        rest, rpc = pair.get(top), pair.get(bottom)
        if rest and rpc:
            ratios.append(rest / rpc)
    return ratios


def ratio_table(rows: list[Measured], order: list[Scenario]) -> tuple[str, list[str]]:
    pair = pair_of(rows)
    lines = [f"| what | c | measure | {pair_name(pair)} (medians) | each round | target |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    verdicts = []
    for scenario in order:
        for label, metric, target, higher in metrics(scenario.kind, pair):
            rest, rpc = (medians(rows, scenario, b, metric) for b in pair)
            if not rest or not rpc:
                lines.append(f"| {scenario.title} | {scenario.c} | {label} | - | - | - |")
                continue
            ratio = statistics.median(rest) / statistics.median(rpc)
            rounds = ", ".join(f"{r:.2f}" for r in per_round_ratios(rows, scenario, metric))
            wanted = ""
            if target is not None:
                met = ratio >= target if higher else ratio <= target
                errors = sum(m.row.get("errors", 1) for m in rows if m.scenario == scenario)
                verdict = "met" if met and not errors else "MISSED"
                wanted = f"{'>=' if higher else '<='} {target}x: {verdict}"
                verdicts.append(f"- {scenario.title} c={scenario.c}, {label}: {pair_name(pair)} "
                                f"{ratio:.2f} (target {wanted})")  # fmt: skip
            lines.append(f"| {scenario.title} | {scenario.c} | {label} | **{ratio:.2f}** "
                         f"| {rounds} | {wanted} |")  # fmt: skip
    return "\n".join(lines), verdicts


def runs_table(rows: list[Measured]) -> str:
    lines = ["| round | what | c | binding | req/s | p50 ms | p99 ms | first event p50 ms "
             "| first p99 ms | errors | web CPU ms/req | web + worker CPU ms/req | PG CPU ms/req "
             "| client CPU % |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for m in rows:
        r, s = m.row, m.scenario
        if "fatal" in r:
            lines.append(f"| {m.round} | {s.title} | {s.c} | {NAMES[m.binding]} "
                         f"| FATAL: {r['fatal']} ||||||||||")  # fmt: skip
            continue
        first = r["first"] if s.kind == "stream" else {}
        worker = hub.fmt(r["server_ms"], 2) if s.slug == "echo-worker" else "-"
        lines.append(
            f"| {m.round} | {s.title} | {s.c} | {NAMES[m.binding]} | {hub.fmt(r['rps'])} "
            f"| {hub.fmt(r['end'].get('p50_ms'))} | {hub.fmt(r['end'].get('p99_ms'))} "
            f"| {hub.fmt(first.get('p50_ms'))} | {hub.fmt(first.get('p99_ms'))} | {r['errors']} "
            f"| {hub.fmt(r['web_ms'], 2)} | {worker} | {hub.fmt(r['pg_ms'], 2)} "
            f"| {hub.fmt(r['client_pct'])} |"
        )
    return "\n".join(lines)


def medians_table(rows: list[Measured], order: list[Scenario]) -> str:
    pair = pair_of(rows)
    lines = [f"| what | c | measure | {NAMES[pair[0]]} (median) | {NAMES[pair[1]]} (median) |",
             "|---|---|---|---|---|"]  # fmt: skip
    for scenario in order:
        for label, metric, _, _ in metrics(scenario.kind, pair):
            rest, rpc = (medians(rows, scenario, b, metric) for b in pair)
            cells = [hub.fmt(float(statistics.median(v))) if v else "-" for v in (rest, rpc)]
            lines.append(f"| {scenario.title} | {scenario.c} | {label} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def environment(bench: hub.Bench) -> str:
    from importlib.metadata import version

    args = bench.args
    names = ("django", "daphne" if args.server == "hub-daphne" else "uvicorn", "aiohttp")
    packages = ", ".join(f"{n} {version(n)}" for n in names)
    pins = ("web server, Celery, PostgreSQL, Redis on core 0; this client on core 1"
            if bench.pin else "not pinned")  # fmt: skip
    return (f"{dt.datetime.now().isoformat(timespec='minutes')}, {os.cpu_count()} cores, "
            f"Python {sys.version.split()[0]}; {packages}; {args.server}; pinning: {pins}; "
            f"{args.rounds} rounds, {args.duration:g} s measured + {args.warmup:g} s warm-up "
            f"per run; A2A 1.0, one aiohttp client for both {sides_named(args)}")  # fmt: skip


def sides_named(args: argparse.Namespace) -> str:
    if args.auth:
        return f"sides (JSON-RPC; with {NAMES[args.auth]} and anonymous; echo agents open to both)"
    if not args.console:
        return "bindings"
    return (
        f"sides (JSON-RPC; watched: {args.console} staff pages, each with the dashboard's "
        "and the task list's socket, in a process of their own on the client's core)"
    )


def report(bench: hub.Bench, rows: list[Measured], profiles: list[str]) -> str:
    order = list(dict.fromkeys(m.scenario for m in rows))
    ratios, verdicts = ratio_table(rows, order)
    pair = pair_of(rows)
    parts = [
        f"Run: {environment(bench)}",
        f"Command: `{shlex.join(['python', 'bench/bindings.py', *sys.argv[1:]])}`",
        f"{pair_name(pair)}, the median of each side's rounds (req/s: higher is better for "
        f"{NAMES[pair[0]]}; times: lower is):",
        ratios,
        "\n".join(verdicts),
        "Medians, for context (absolute numbers move a lot between runs on this machine):",
        medians_table(rows, order),
        "Every run, in the order run:",
        runs_table(rows),
    ]
    watched = [m for m in rows if "console" in m.row]
    if watched:
        parts += ["What the console's watchers received in each watched run:",
                  "\n".join(f"- round {m.round}, {m.scenario.title} c={m.scenario.c}: "
                            f"{console_brief(m.row['console'])}" for m in watched)]  # fmt: skip
    if profiles:
        parts += ["Profiles (py-spy --gil, web process):", "```\n" + "\n\n".join(profiles)
                  + "\n```"]  # fmt: skip
    return "\n\n".join(parts)


# -- main ----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.shared = args.shared.resolve()
    pin = hub.check_prerequisites(args)
    load = load_generator(args.shared)
    started = time.monotonic()
    with hub.bench_session(args, "a2ahub-bindings-", pin, client_core=True) as bench:
        rows, profiles = run_all(bench, load)
    text = report(bench, rows, profiles)
    print(f"\n{text}\n\n(total {time.monotonic() - started:.0f} s)")
    if args.markdown:
        title = ("The console watched against unwatched" if args.console
                 else f"Calls with {NAMES[args.auth]} against anonymous calls" if args.auth
                 else "HTTP+JSON against JSON-RPC on one hub process")  # fmt: skip
        args.markdown.write_text(f"# {title}\n\n{text}\n")
    return 1 if any("fatal" in m.row or m.row["errors"] for m in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
