"""Spawn to first token of `chatagent ask`, with a warm daemon and without.

    python -m chatagent.bench.daemon_latency [--reps 8] [--ttft-ms 300] [--out FILE.json]

Each run is a new process, `python -m chatagent ask URL -q Q --json`, timed
from spawn to its first `token` line on stdout, as a shell user waits for it.
The model is the local Gemini-compatible server with a fixed time to first
token (`--ttft-ms`), so `overhead` = spawn → first token − the server's own
TTFT (request arrival → first chunk, as the server saw it) is everything
chatagent adds. The page is a WikiTableQuestions page with its question,
served from 127.0.0.1, with new content every run (`fresh_url`), so the
daemon's extraction cache never helps it.

`cold`: no daemon; the process launches its browser. `warm`: a daemon
started beforehand answers. Runs alternate (cold, warm, warm, cold, ...) so
drifting load on the machine lands on both. `floor` is `python -m chatagent
--version`: the interpreter and the CLI's imports alone. `its CPU` is the CPU
time of the process and what it waited for (a cold run's browser too, not
the daemon's): the part of the cost other load on the machine can only stretch.
For warm runs, spawn → opened (the client logs the daemon's `opened`) is
split with the daemon's log into the daemon opening the page and the rest:
the process starting, its imports, the settings, connecting.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import re
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..testing.gemini_server import GeminiServer, TextReply
from .data import DEFAULT_DATA_DIR
from .report import machine
from .server import PageServer, fresh_url
from .stats import finite, summary

ROOT = Path(__file__).resolve().parents[2]
MODEL = "gemini-2.5-flash"
ANSWER = "The table answers it in its row for that year [Tab 1]."
SERVED = "answered by the chatagent daemon"


def wtq_page(data_dir: Path, index: int) -> tuple[Path, str]:
    """The `index`th question of WikiTableQuestions (in file order) and its page."""
    wtq = data_dir / "wtq"
    with (wtq / "questions.tsv").open(newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    row = rows[index % len(rows)]
    return wtq / row["page"], row["utterance"]


async def _spawn(args: list[str], env: dict[str, str], server: GeminiServer | None) -> dict[str, Any]:
    """One process: spawn → first token (ms), and the server's view of its model request."""
    before = len(server.requests) if server else 0
    cpu0 = _children_cpu_s()
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "chatagent", *args, cwd=ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    stamps: dict[str, float] = {}

    async def read_out() -> list[dict[str, Any]]:
        events = []
        async for line in proc.stdout:  # type: ignore[union-attr]
            if server is None:  # not an ask: plain text
                continue
            event = json.loads(line)
            if event["type"] == "token" and "token" not in stamps:
                stamps["token"] = time.perf_counter()
            events.append(event)
        return events

    async def read_err() -> str:
        lines = []
        async for line in proc.stderr:  # type: ignore[union-attr]
            text = line.decode(errors="replace")
            if SERVED in text and "opened" not in stamps:
                stamps["opened"] = time.perf_counter()
            lines.append(text)
        return "".join(lines)

    events, err = await asyncio.gather(read_out(), read_err())
    code = await proc.wait()
    ms = lambda a, b: (b - a) * 1000  # noqa: E731
    out: dict[str, Any] = {
        "exit": code, "total_ms": ms(t0, time.perf_counter()), "via_daemon": SERVED in err,
        "cpu_ms": (_children_cpu_s() - cpu0) * 1000,
    }
    if server is None:
        return out
    ends = [e for e in events if e["type"] in ("done", "error")]
    if code != 0 or "token" not in stamps or not ends or ends[-1]["type"] != "done":
        raise RuntimeError(f"the ask failed (exit {code}): {err.strip()[-500:]}")
    req = next(r for r in server.requests[before:] if r.is_generate)
    assert req.first_chunk_at is not None
    first_token = ms(t0, stamps["token"])
    server_ttft = ms(req.arrived_at, req.first_chunk_at)
    out.update(
        first_token_ms=first_token, server_ttft_ms=server_ttft, overhead_ms=first_token - server_ttft,
        spawn_to_request_ms=ms(t0, req.arrived_at), chunk_to_token_ms=ms(req.first_chunk_at, stamps["token"]),
        done_timings=ends[-1]["timings"],
    )
    if "opened" in stamps:  # the daemon had opened the page: the rest is context, prompt and model
        out["spawn_to_opened_ms"] = ms(t0, stamps["opened"])
    return out


def _children_cpu_s() -> float:
    """CPU time of this process's children that have ended: the ask process,
    and in a cold run the browser it launched and waited for (a daemon is
    no child of ours: it runs in a session of its own)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _summaries(samples: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("first_token_ms", "overhead_ms", "server_ttft_ms", "spawn_to_request_ms", "spawn_to_opened_ms",
            "daemon_open_ms", "client_start_ms", "chunk_to_token_ms", "total_ms", "cpu_ms")
    return {k: summary([s[k] for s in samples if k in s]) for k in keys if any(k in s for s in samples)}


async def run(reps: int, ttft_ms: float, data_dir: Path, question_index: int) -> dict[str, Any]:
    page, question = wtq_page(data_dir, question_index)
    load_at_start = list(os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="chatagent-daemon-bench-") as tmp, \
            GeminiServer(responder=lambda _r: TextReply(text=ANSWER), ttft_s=ttft_ms / 1000, tokens_per_s=50) as server, \
            PageServer() as site:
        base = {
            **os.environ, "PYTHONPATH": str(ROOT), "CHATAGENT_CONFIG": str(Path(tmp) / "config.toml"),
            "CHATAGENT_MODEL": MODEL, "GOOGLE_API_KEY": "test", "GOOGLE_GEMINI_BASE_URL": server.url,
        }
        base.pop("CHATAGENT_DAEMON", None)
        cold_env = {**base, "CHATAGENT_DAEMON_DIR": str(Path(tmp) / "none")}
        warm_env = {**base, "CHATAGENT_DAEMON_DIR": str(Path(tmp) / "daemon")}
        url = site.file_url(page)
        started = await _spawn(["daemon", "start"], warm_env, None)
        if started["exit"] != 0:
            raise RuntimeError("the daemon did not start")
        try:
            ask = lambda n: ["ask", fresh_url(url, n), "-q", question, "--json", "-v"]  # noqa: E731
            # Untimed: the first of each pays for cold disk caches, not for what is measured.
            await _spawn(ask(10_000), cold_env, server)
            await _spawn(ask(10_001), warm_env, server)
            samples: dict[str, list[dict[str, Any]]] = {"cold": [], "warm": [], "floor": []}
            for i in range(reps):
                order = [("cold", cold_env), ("warm", warm_env)]
                for name, env in order if i % 2 == 0 else order[::-1]:
                    result = await _spawn(ask(2 * i + (name == "warm")), env, server)
                    if result["via_daemon"] != (name == "warm"):
                        raise RuntimeError(f"a {name} run was{' not' if name == 'warm' else ''} answered by the daemon")
                    samples[name].append(result)
                samples["floor"].append(await _spawn(["--version"], base, None))
            # The daemon's own count of each timed ask (the first is the untimed one): when its pages were open.
            log = (Path(tmp) / "daemon" / "daemon.log").read_text()
            opened = [float(ms) for ms in re.findall(r"ended: done in \d+ ms \(pages open after (\d+) ms\)", log)][1:]
            for run_, ms in zip(samples["warm"], opened):
                run_["daemon_open_ms"] = ms
                run_["client_start_ms"] = run_["spawn_to_opened_ms"] - ms
        finally:
            await _spawn(["daemon", "stop"], warm_env, None)
    return {
        "config": {"reps": reps, "server_ttft_ms": ttft_ms, "model": MODEL, "page": str(page), "question": question},
        "machine": {**machine(), "loadavg_at_start": load_at_start},
        "scenarios": {name: {"summary": _summaries(runs), "runs": runs} for name, runs in samples.items()},
    }


def format_report(result: dict[str, Any]) -> str:
    cfg, m = result["config"], result["machine"]
    lines = [
        f"server TTFT {cfg['server_ttft_ms']:g} ms, {cfg['reps']} runs each, page {Path(cfg['page']).name}; "
        f"load average {m['loadavg_at_start'][0]:.1f} at start, {m['loadavg'][0]:.1f} at the end on {m['cpus']} CPUs",
        f"{'':6} {'first token p50':>16} {'p90':>8} {'overhead p50':>13} {'p90':>8} {'spawn→request p50':>18} "
        f"{'spawn→opened p50':>17} {'process p50':>12} {'its CPU p50':>12}",
    ]
    for name, scenario in result["scenarios"].items():
        s = scenario["summary"]

        def p(key: str, q: str = "p50") -> str:
            return f"{s[key][q]:.0f}" if key in s else "-"

        lines.append(f"{name:6} {p('first_token_ms'):>16} {p('first_token_ms', 'p90'):>8} {p('overhead_ms'):>13} "
                     f"{p('overhead_ms', 'p90'):>8} {p('spawn_to_request_ms'):>18} {p('spawn_to_opened_ms'):>17} "
                     f"{p('total_ms'):>12} {p('cpu_ms'):>12}")
    warm = result["scenarios"]["warm"]["summary"]
    if "daemon_open_ms" in warm:
        lines.append(f"warm, spawn→opened split (p50): the daemon opening the page {warm['daemon_open_ms']['p50']:.0f} ms, "
                     f"the rest (process start, imports, settings, connecting) {warm['client_start_ms']['p50']:.0f} ms")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m chatagent.bench.daemon_latency", description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=8)
    ap.add_argument("--ttft-ms", type=float, default=300)
    ap.add_argument("--question", type=int, default=0, help="which WikiTableQuestions question (and page)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--out", type=Path, help="write the runs and summaries as JSON")
    args = ap.parse_args(argv)
    result = asyncio.run(run(args.reps, args.ttft_ms, args.data, args.question))
    print(format_report(result))
    if args.out:
        args.out.write_text(json.dumps(finite(result), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
