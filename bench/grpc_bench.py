"""The gRPC binding against the official SDK's own gRPC server: blocking sends and stream
first events, in one run.

It starts the distributed hub with bench/run.py's machinery (PostgreSQL, Redis, one Celery
worker) and its gRPC server, and bench/sdk_grpc_server.py (the SDK's `GrpcHandler` on its
in-memory store, serving the shared bench's echo agent). One client (grpc.aio and the SDK's
generated stub, one channel per server, as an SDK client holds one) drives both:

- A2A 1.0 `SendMessage`, blocking, at the inline `echo` agent: requests a second, closed loop;
- `SendStreamingMessage` at the five-chunk agents (the hub's `bench-echo5`, the SDK's
  stream5): time from sending to the first event, and to the last.

The servers take turns in rounds, the order swapped each round, so the machine's drift falls
on both; the report gives each side's median over the rounds and hub / SDK.

    python bench/grpc_bench.py                   # from the repository root; about 3 minutes
    python bench/grpc_bench.py --rounds 4 -c 16 --markdown out.md
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import grpc
import run as hub
import streams
from a2a.types import a2a_pb2 as pb
from a2a.types import a2a_pb2_grpc

SIDES = ("hub", "sdk")
# The bars: hub send rate >= SDK's; hub first event no later than SDK's.
SEND_AT_LEAST, FIRST_EVENT_AT_MOST = 1.0, 1.0
METADATA = (("a2a-version", "1.0"),)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    hub.add_service_arguments(p, redis_db=9)
    hub.add_run_arguments(p, first_port=8190)
    p.add_argument("-c", "--concurrency", type=int, default=16, help="requests in flight")
    p.add_argument("-d", "--duration", type=float, default=6.0, help="measured seconds per run")
    p.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds per run")
    p.add_argument("--rounds", type=int, default=3, help="rounds of both sides")
    p.add_argument(
        "--profile",
        choices=("send", "first event"),
        help="after the rounds, record the hub's gRPC process under py-spy --gil through one "
        "more run of this kind and print where its CPU went (needs py-spy)",
    )
    p.add_argument("--top", type=int, default=30, help="with --profile: functions listed")
    return p.parse_args(argv)


def request(text: str) -> pb.SendMessageRequest:
    message = pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER, parts=[pb.Part(text=text)])
    return pb.SendMessageRequest(message=message)


class Target:
    """One side's agent: where it is, and which tenant (the hub's agent slug) names it."""

    def __init__(self, address: str, tenant: str = "") -> None:
        self.address, self.tenant = address, tenant

    def request(self, text: str) -> pb.SendMessageRequest:
        built = request(text)
        built.tenant = self.tenant
        return built


async def closed_loop(
    target: Target, args: argparse.Namespace, one: Any
) -> tuple[list[float], int, float]:
    """`args.concurrency` clients, each sending again as soon as its answer came, on one
    channel; what was answered in the measured window (latencies, errors, seconds)."""
    async with grpc.aio.insecure_channel(target.address) as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        start = time.monotonic()
        measure_from, end = start + args.warmup, start + args.warmup + args.duration
        latencies: list[float] = []
        errors = 0

        async def client() -> None:
            nonlocal errors
            while (now := time.monotonic()) < end:
                try:
                    seconds = await one(stub, target)
                except grpc.aio.AioRpcError:
                    seconds = None
                if now >= measure_from and time.monotonic() <= end:
                    if seconds is None:
                        errors += 1
                    else:
                        latencies.append(seconds)

        await asyncio.gather(*(client() for _ in range(args.concurrency)))
        return latencies, errors, args.duration


async def send_once(stub: Any, target: Target) -> float:
    started = time.monotonic()
    answer = await stub.SendMessage(target.request("bench"), metadata=METADATA)
    if answer.task.status.state != pb.TASK_STATE_COMPLETED:
        raise grpc.aio.AioRpcError(grpc.StatusCode.UNKNOWN, None, None, "not completed")
    return time.monotonic() - started


async def first_event_once(stub: Any, target: Target) -> float:
    started, first = time.monotonic(), None
    async for _item in stub.SendStreamingMessage(target.request("bench"), metadata=METADATA):
        if first is None:
            first = time.monotonic() - started
    assert first is not None
    return first


def summary(kind: str, measured: tuple[list[float], int, float]) -> dict[str, Any]:
    latencies, errors, seconds = measured
    ordered = sorted(latencies)
    p50 = ordered[len(ordered) // 2] * 1000 if ordered else None
    return {"kind": kind, "rps": len(latencies) / seconds, "p50": p50, "errors": errors}


def run_rounds(args: argparse.Namespace, targets: dict[str, dict[str, Target]]) -> list[dict]:
    rows = []
    for number in range(args.rounds):
        order = SIDES if number % 2 == 0 else SIDES[::-1]
        for side in order:
            for kind, one in (("send", send_once), ("first event", first_event_once)):
                target = targets[side][kind]
                row = summary(kind, asyncio.run(closed_loop(target, args, one)))
                row.update(side=side, round=number + 1)
                print(f"  round {number + 1} {side} {kind}: {row['rps']:.0f}/s, "
                      f"p50 {row['p50'] or 0:.1f} ms, {row['errors']} errors")  # fmt: skip
                rows.append(row)
    return rows


def median(rows: list[dict], side: str, kind: str, metric: str) -> float:
    values = [r[metric] for r in rows if r["side"] == side and r["kind"] == kind and r[metric]]
    return statistics.median(values) if values else float("nan")


def report(args: argparse.Namespace, rows: list[dict]) -> str:
    send = median(rows, "hub", "send", "rps") / median(rows, "sdk", "send", "rps")
    first = median(rows, "hub", "first event", "p50") / median(rows, "sdk", "first event", "p50")
    lines = [
        f"gRPC, A2A 1.0, c={args.concurrency}, {args.rounds} rounds of {args.duration:g} s "
        f"(+{args.warmup:g} s warm-up); medians over rounds",
        "",
        "| | hub | SDK | hub / SDK | bar |",
        "|---|---|---|---|---|",
        f"| blocking SendMessage, req/s | {median(rows, 'hub', 'send', 'rps'):.0f} "
        f"| {median(rows, 'sdk', 'send', 'rps'):.0f} | {send:.2f}x | >= {SEND_AT_LEAST}x |",
        f"| SendStreamingMessage first event p50, ms "
        f"| {median(rows, 'hub', 'first event', 'p50'):.1f} "
        f"| {median(rows, 'sdk', 'first event', 'p50'):.1f} | {first:.2f}x "
        f"| <= {FIRST_EVENT_AT_MOST}x |",
    ]
    errors = sum(r["errors"] for r in rows)
    if errors:
        lines.append(f"\n{errors} requests failed")
    return "\n".join(lines)


def run_all(bench: hub.Bench) -> list[dict]:
    args = bench.args
    ports = [p for p in range(args.port, args.port + 50) if hub.port_free(p)]
    sdk_port = next(p for p in ports if p + 1 in ports)
    hub_port = next(p for p in ports if p not in (sdk_port, sdk_port + 1))
    hub_url = hub.create_database(bench, f"a2abench_grpc_{bench.tag}").replace(
        "postgresql://", "postgres://"
    )
    hub.flush_redis(bench)
    env = hub.hub_env(hub_url, args.redis, bench.logs / "data")
    env["GRPC_PORT"] = str(hub_port)
    env["GRPC_METRICS_PORT"] = "0"  # nothing scrapes it here, and GRPC_PORT + 1 may be taken
    print("== preparing the hub (migrate, seed, bench agents)")
    hub.prepare_hub(bench, env)
    streams.create_agents(env)
    hub.start_celery(bench, env)
    bench.start("hub-grpc", [hub.python(), "manage.py", "rungrpc"], env, hub.REPO)
    bench.start("sdk-grpc", [hub.python(), str(hub.REPO / "bench" / "sdk_grpc_server.py"),
                             "--shared", str(args.shared), "--port", str(sdk_port)],
                env, hub.REPO)  # fmt: skip
    targets = {
        "hub": {"send": Target(f"127.0.0.1:{hub_port}", "echo"),
                "first event": Target(f"127.0.0.1:{hub_port}", streams.STREAM_AGENT)},
        "sdk": {"send": Target(f"127.0.0.1:{sdk_port}"),
                "first event": Target(f"127.0.0.1:{sdk_port + 1}")},
    }  # fmt: skip
    for name, side in (("hub-grpc", "hub"), ("sdk-grpc", "sdk")):
        wait_for_grpc(bench, name, targets[side]["send"])
    rows = run_rounds(args, targets)
    if args.profile:
        profile(bench, targets["hub"][args.profile], args)
    return rows


def profile(bench: hub.Bench, target: Target, args: argparse.Namespace) -> None:
    """One more hub run of the profiled kind under py-spy (bench/profile_hub.py's recorder
    and summary)."""
    import profile_hub

    raw = bench.logs / "grpc.raw"
    pid = bench.processes["hub-grpc"].pid
    one = send_once if args.profile == "send" else first_event_once
    recorder = profile_hub.record(pid, args.warmup + args.duration, 250, raw, gil=True)
    asyncio.run(closed_loop(target, args, one))
    recorder.wait(timeout=60)
    print(f"\n== hub gRPC process under py-spy --gil, {args.profile} c={args.concurrency}")
    print(profile_hub.summarize(raw, args.top, None))


def wait_for_grpc(bench: hub.Bench, name: str, target: Target, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        bench.check_alive(name)
        try:
            asyncio.run(asyncio.wait_for(ping(target), 5))
            return
        except (grpc.aio.AioRpcError, TimeoutError):
            time.sleep(0.5)
    raise RuntimeError(f"{name} did not answer within {timeout:.0f} s: {bench.tail(name)}")


async def ping(target: Target) -> None:
    async with grpc.aio.insecure_channel(target.address) as channel:
        await send_once(a2a_pb2_grpc.A2AServiceStub(channel), target)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.shared = args.shared.resolve()
    pin = not args.no_pin and (os.cpu_count() or 1) >= 2
    with hub.bench_session(args, "a2ahub-bench-grpc-", pin, client_core=True) as bench:
        rows = run_all(bench)
    text = report(args, rows)
    print(f"\n{text}")
    if args.markdown:
        args.markdown.write_text(f"# gRPC: hub vs SDK\n\n{text}\n")
    return 1 if any(r["errors"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
