"""Sample the hub with py-spy while a2a_load drives it, and print where its CPU goes.

Starts the same distributed hub as run.py (PostgreSQL, Redis, one Celery worker, one web
server), loads one agent at one concurrency, records the web process and the Celery worker
with `py-spy record --format raw --gil` (only the thread holding the GIL, so the shares are
of Python CPU time; --all-threads for wall time), and prints for each the functions
with the largest inclusive and own share of samples. Needs `pip install py-spy`.

    python bench/profile_hub.py --mode inline -c 16 -d 15
    python bench/profile_hub.py --mode worker --server hub-uvicorn --top 40
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as bench_run  # bench/run.py: processes, databases, hub set-up


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shared", type=Path, default=bench_run.DEFAULT_SHARED)
    p.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432")
    p.add_argument("--redis", default="redis://127.0.0.1:6379/7")
    p.add_argument("--server", choices=("hub-daphne", "hub-uvicorn"), default="hub-daphne")
    p.add_argument("--mode", choices=("inline", "worker"), default="inline")
    p.add_argument("-c", "--concurrency", type=int, default=16)
    p.add_argument("-d", "--duration", type=float, default=15.0)
    p.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    p.add_argument("--top", type=int, default=30)
    p.add_argument(
        "--all-threads",
        action="store_true",
        help="sample every non-idle thread (wall time, I/O waits included) instead "
        "of only the thread holding the GIL (Python CPU time)",
    )
    p.add_argument("--port", type=int, default=8190)
    p.add_argument("--keep", type=Path, help="copy the raw py-spy files into this folder")
    p.add_argument(
        "--summarize",
        type=Path,
        nargs="+",
        metavar="RAW",
        help="only summarize raw py-spy files recorded before, then exit",
    )
    p.add_argument("--cpu-ms", type=float, help="with --summarize: CPU ms per request")
    args = p.parse_args()
    args.shared = args.shared.resolve()
    args.duration = max(2.0, min(args.duration, 120.0))
    return args


def py_spy() -> str | None:
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


def record(pid: int, seconds: float, rate: int, out: Path, gil: bool) -> subprocess.Popen[bytes]:
    command = [py_spy() or "py-spy", "record", "--pid", str(pid), "--duration",
               str(int(seconds)), "--rate", str(rate), "--format", "raw", "--output", str(out),
               "--nonblocking", *(["--gil"] if gil else [])]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*?)(?::\d+)?\)$")


def frame_name(frame: str) -> str:
    match = FRAME.match(frame.strip())
    if not match:
        return frame.strip()
    path = match["file"]
    for marker in ("site-packages/", "/work/main/", "lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{match['func']} ({path})"


# Each sample goes to the first step whose pattern matches a frame of its stack.
STEPS: list[tuple[str, str]] = [
    ("agent_named: Agent + skills SELECTs", r"^agent_named \("),
    ("writer.open: the new task's statement, event payloads", r"^open \(tasks"),
    ("writer.record: a stored task's statement", r"^record \(tasks"),
    ("runner.claim_and_load: claim UPDATE + reloads", r"^claim_and_load \("),
    ("load_task: re-read Task for the answer", r"^load_task \(tasks"),
    ("events.publish: Redis PUBLISH after commit", r"^publish \(tasks/events"),
    ("events: subscribe/unsubscribe/listener", r"Listener|^(un)?subscribe \((tasks|a2ahub/bus)"),
    ("Celery enqueue (run_task.delay)", r"^enqueue_run \("),
    ("authenticate", r"^authenticate_caller \(protocol"),
    ("0.3 params -> 1.0 request (pydantic)", r"^send_in \(protocol"),
    ("1.0 Task -> 0.3 JSON", r"send_result_json|^<lambda> \(protocol/v03"),
    ("JsonResponse / json.dumps", r"^rpc_response \("),
    ("middleware code itself", r"Middleware\.process_|process_view"),
    ("request signals, connection close/return", r"close_old_connections|Signal\.a?send"),
    ("thread hops (sync_to_async, executors, threads)",
     r"SyncToAsync|ThreadPoolExecutor|^_worker \(concurrent|^Thread\.start|"
     r"ThreadSensitiveContext|CurrentThreadExecutor"),
    ("view code on the event loop (endpoint, runner, updater)",
     r"^endpoint \(protocol|^send_message \(protocol|tasks/runner\.py|tasks/updater\.py"),
    ("Django ASGI handler + middleware chain", r"ASGIHandler|MiddlewareMixin|get_response_async|"
     r"StaticFilesHandler|convert_exception_to_response"),
    ("Celery/kombu machinery", r"celery/|kombu/"),
    ("web server (daphne/twisted, uvicorn/httptools)", r"daphne/|twisted/|uvicorn/|httptools"),
]  # fmt: skip


def read_samples(raw: Path) -> list[tuple[list[str], int]]:
    samples = []
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if count.isdigit():
            frames = [frame_name(f) for f in stack.split(";") if f and not f.startswith("thread")]
            samples.append((frames, int(count)))
    return samples


def by_step(samples: list[tuple[list[str], int]]) -> collections.Counter[str]:
    compiled = [(label, re.compile(pattern)) for label, pattern in STEPS]
    steps: collections.Counter[str] = collections.Counter()
    for frames, n in samples:
        label = next((lb for lb, rx in compiled if any(rx.search(f) for f in frames)), "other")
        steps[label] += n
    return steps


def summarize(raw: Path, top: int, cpu_ms: float | None) -> str:
    samples = read_samples(raw)
    total = sum(n for _, n in samples)
    if not total:
        return "  (no samples)"
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    for frames, n in samples:
        own[frames[-1] if frames else "?"] += n
        for name in set(frames):
            inclusive[name] += n
    per = f", {cpu_ms:.2f} ms CPU per request" if cpu_ms else ""
    lines = [f"  {total} samples{per}", "  by step (% of samples, ms CPU per request):"]
    for label, n in by_step(samples).most_common():
        ms = f"{cpu_ms * n / total:6.2f}" if cpu_ms else "     -"
        lines.append(f"    {100 * n / total:5.1f} {ms}  {label}")
    lines.append("  inclusive %:")
    lines += [f"    {100 * v / total:5.1f}  {k}" for k, v in inclusive.most_common(top)]
    lines.append("  own %:")
    lines += [f"    {100 * v / total:5.1f}  {k}" for k, v in own.most_common(top)]
    return "\n".join(lines)


def main() -> int:
    args = parse_args()
    if args.summarize:
        for raw in args.summarize:
            print(f"== {raw}\n{summarize(raw, args.top, args.cpu_ms)}")
        return 0
    if py_spy() is None:
        raise SystemExit("py-spy is missing: pip install py-spy")
    logs = Path(tempfile.mkdtemp(prefix="a2ahub-profile-"))
    bench = bench_run.Bench(args, logs, pin=False, tag=f"prof{args.port}")
    try:
        url = bench_run.create_database(bench, f"a2abench_{bench.tag}")
        bench_run.flush_redis(bench)
        env = bench_run.hub_env(url.replace("postgresql://", "postgres://"), args.redis, logs)
        bench_run.prepare_hub(bench, env)
        celery = bench_run.start_celery(bench, env)
        web = bench.start(args.server, bench_run.hub_web_command(args.server, args.port), env,
                          bench_run.REPO)  # fmt: skip
        base = f"http://127.0.0.1:{args.port}/agents"
        bench_run.wait_http(bench, args.server, f"{base}/echo/.well-known/agent-card.json")
        slug = "echo" if args.mode == "inline" else "echo-worker"
        profile(bench, args, f"{base}/{slug}/jsonrpc/", {"web": web, "celery": celery})
    finally:
        bench_run.cleanup(bench)
        shutil.rmtree(logs, ignore_errors=True)
    return 0


def profile(
    bench: bench_run.Bench, args: argparse.Namespace, url: str, pids: dict[str, int]
) -> None:
    result = bench.logs / "load.json"
    command = [sys.executable, str(args.shared / "a2a_load.py"), "--url", url, "-c",
               str(args.concurrency), "-d", str(args.duration + 3), "--warmup", "1",
               "--json-out", str(result)]  # fmt: skip
    for pid in pids.values():
        command += ["--cpu-pid", str(pid)]
    load = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    time.sleep(2)
    outputs = {name: bench.logs / f"{name}.raw" for name in pids}
    gil = not args.all_threads
    spies = {n: record(pid, args.duration, args.rate, outputs[n], gil) for n, pid in pids.items()}
    for name, spy in spies.items():
        _, err = spy.communicate(timeout=args.duration + 60)
        if spy.returncode:
            print(f"py-spy on {name} failed: {err.decode(errors='replace')[-500:]}")
    stdout, _ = load.communicate(timeout=args.duration + 60)
    print(stdout)
    cpu = cpu_per_request(result, pids)
    for name, out in outputs.items():
        print(f"== {name} (pid {pids[name]})")
        print(summarize(out, args.top, cpu.get(name)) if out.exists() else "  (no profile)")
        if args.keep and out.exists():
            args.keep.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(OSError):
                shutil.copyfile(out, args.keep / f"{args.server}-{args.mode}-{name}.raw")


def cpu_per_request(result: Path, pids: dict[str, int]) -> dict[str, float]:
    """Each process's CPU per request over the load window, from a2a_load's --cpu-pid."""
    if not result.exists():
        return {}
    run = json.loads(result.read_text().splitlines()[-1])
    groups = (run.get("cpu") or {}).get("groups", {})
    if not run.get("ok"):
        return {}
    scale = run["window_s"] * 1000 / run["ok"] / 100
    return {
        name: groups[f"pid:{pid}"]["cpu_pct"] * scale
        for name, pid in pids.items()
        if f"pid:{pid}" in groups
    }


if __name__ == "__main__":
    sys.exit(main())
