"""The hub's own cost per `llm` turn, with the model server answering at once.

It starts a small distributed hub (one daphne web process and one Celery worker on PostgreSQL
and Redis, tests/integration/small_hub.py), an OpenAI-compatible server on 127.0.0.1 that
streams a scripted answer with no delay (tests/llm/model_server.py), and two `llm` agents
(inline: the turn runs on the web process; worker: on the Celery worker). For each it sends
`--turns` streamed messages one after another and reports

- web and worker CPU per turn (utime + stime from /proc, the whole run divided by the turns:
  idle work such as heartbeats is included);
- the time from the model server writing the first token to the client reading the first
  artifact chunk (p50, p90, p99, one clock: both ends run in this process).

    python bench/llm.py                     # from the repository root, with the stack's env
    python bench/llm.py --turns 300 --markdown out.md
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from tests.integration.llm_agents import MAKE_AGENT  # noqa: E402
from tests.integration.small_hub import own_small_hub  # noqa: E402
from tests.llm.model_server import ModelServer, Text  # noqa: E402

CHUNKS = ["The", " answer", " is", " forty", "-two", "."]
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / TICKS


def tree_cpu_ms(pid: int) -> float:
    """The process and its children (a Celery worker's pool)."""
    total = cpu_ms(pid)
    children = Path(f"/proc/{pid}/task/{pid}/children")
    for child in children.read_text().split() if children.exists() else []:
        total += tree_cpu_ms(int(child))
    return total


def make_agent(env: dict[str, str], slug: str, settings: dict[str, Any], mode: str) -> None:
    script = MAKE_AGENT + f"\nAgent.objects.filter(slug=slug).update(execution_mode={mode!r})\n"
    subprocess.run([sys.executable, "-c", script, slug, json.dumps(settings)], cwd=REPO,
                   env=env, check=True, capture_output=True, timeout=120)  # fmt: skip


def one_turn(client: httpx.Client, base: str, slug: str) -> float:
    """A streamed send; when its first artifact chunk was read (perf_counter)."""
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "Hi"}]}
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
            "params": {"message": message}}  # fmt: skip
    first = 0.0
    with client.stream("POST", f"{base}/agents/{slug}/jsonrpc/", json=body,
                       headers={"A2A-Version": "1.0"}) as response:  # fmt: skip
        for line in response.iter_lines():
            if not first and line.startswith("data:") and '"artifactUpdate"' in line:
                first = time.perf_counter()
            if '"TASK_STATE_COMPLETED"' in line:
                break
            if '"TASK_STATE_FAILED"' in line:
                raise RuntimeError(line)
    assert first, "no artifact chunk"
    return first


def run(
    hub: Any, models: ModelServer, slug: str, model: str, turns: int, pids: dict[str, int]
) -> dict[str, Any]:
    with httpx.Client(timeout=60) as client:
        for _ in range(5):  # warm-up: imports, connections, caches
            models.script(model, Text(CHUNKS))
            one_turn(client, hub.web_a, slug)
        models.first_tokens[model].clear()
        before = {name: tree_cpu_ms(pid) for name, pid in pids.items()}
        started = time.perf_counter()
        delays = []
        for _ in range(turns):
            models.script(model, Text(CHUNKS))
            read = one_turn(client, hub.web_a, slug)
            delays.append((read - models.first_tokens[model][-1]) * 1000)
        elapsed = time.perf_counter() - started
        after = {name: tree_cpu_ms(pid) for name, pid in pids.items()}
    delays.sort()
    return {
        "turns": turns, "seconds": elapsed,
        **{f"{name}_cpu_ms": (after[name] - before[name]) / turns for name in pids},
        "p50": statistics.median(delays), "p90": delays[int(len(delays) * 0.9) - 1],
        "p99": delays[int(len(delays) * 0.99) - 1], "wall_ms": elapsed * 1000 / turns,
    }  # fmt: skip


def table(rows: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| mode | turns | web CPU / turn | worker CPU / turn | first token -> first chunk p50 "
        "| p90 | p99 | wall / turn |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mode, r in rows.items():
        lines.append(
            f"| {mode} | {r['turns']} | {r['web_cpu_ms']:.2f} ms | {r['worker_cpu_ms']:.2f} ms | "
            f"{r['p50']:.2f} ms | {r['p90']:.2f} ms | {r['p99']:.2f} ms | {r['wall_ms']:.1f} ms |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args(argv)
    # The model server and the client share this process: hand the GIL over at once, so the
    # client reads a frame when it arrives, not when the server thread's slice ends (5 ms).
    sys.setswitchinterval(0.0001)
    models = ModelServer().start()
    settings = {"OUTBOUND_ALLOWED_HOSTS": "127.0.0.1", "LOG_LEVEL": "WARNING"}
    rows: dict[str, dict[str, Any]] = {}
    with (
        tempfile.TemporaryDirectory() as root,
        own_small_hub("llmbench", Path(root), settings) as hub,
    ):
        processes = {p.name: p.pid for p in hub.processes}
        pids = {"web": processes["web"], "worker": processes["worker1"]}
        for mode in ("inline", "worker"):
            slug, model = f"bench-llm-{mode}", f"bench-model-{mode}"
            make_agent(hub.env, slug, {"base_url": models.url, "model": model}, mode)
            rows[mode] = run(hub, models, slug, model, args.turns, pids)
            print(mode, json.dumps(rows[mode]), flush=True)
    models.stop()
    text = table(rows)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
