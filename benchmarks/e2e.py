"""End-to-end benchmark: whole-process time to the first answer token of
`chatagent ask`, against the minimal script (`minimal_script`: plain Playwright
and LangChain) doing the same job.

    python -m benchmarks.e2e [--pairs 12] [--ttft-ms 300] [--tabs 1,10] [--out FILE.json] [--data DIR]
                                  [--seed 20] [--network-as-is] [--no-daemon] [--gap 1]

Setup: WikiTableQuestions pages (real Wikipedia pages) served on 127.0.0.1
(`server.PageServer`), and the local Gemini-compatible server
(`chatagent.testing.gemini_server`, a fixed model TTFT, a scripted answer),
both in this process. Each run is a fresh process of this interpreter, as a
user starts one: `python -m chatagent ask URL... -q Q --json` or `python -m
benchmarks.minimal_script URL... -q Q`, with GOOGLE_GEMINI_BASE_URL and
GOOGLE_API_KEY pointing both at the local server (and chatagent's own settings
file and CHATAGENT_* variables left out, so its defaults hold).

The pages link third-party images (upload.wikimedia.org). The other benchmarks
launch Chromium with every host but 127.0.0.1 unresolvable; `ask` takes no
browser flags, so here both processes get the same environment instead: a
proxy that refuses at once (`all_proxy`, `http_proxy`, `https_proxy` at a
closed port on 127.0.0.1, `no_proxy=127.0.0.1,localhost`), which Chromium on
Linux and httpx both honour. Without it (`--network-as-is`) the "load" event
of a page waits on this machine's resolver, which under a burst of lookups
leaves some unanswered for 5 s: noise of seconds on both sides.

Measured per run, all `perf_counter()` stamps of this process (the servers are
threads of it, so they compare exactly):
- **first token** = spawn → the first token read from the process's stdout
  (chatagent: the first `token` event line; the script: its first output);
- **model TTFT** = the server's own request arrival → first chunk written;
- `to_request` = spawn → the generate request arrived (start-up, browser,
  pages, text); `to_token` = first chunk written → first token read;
- chatagent's `done.timings`: `startup` = first token − `first_token_ms`
  (spawn → its agent starting the question: imports, browser, pages opened,
  client warmed), and its `extraction_ms` and `budget_ms`;
- **recall**: the page text each process sent the model (every generate
  request it made, as the server recorded it) holds the WTQ gold answer
  (`scoring.answer_in_context`, the bench's lenient match). The answer itself
  is scripted here, so the context is what can be checked.

Pairs: for each pair and tab count, one chatagent run and one script run in an
order drawn at random (interleaved A/B, so drifting load on the machine falls
on both); the ratio is chatagent / script per pair. 1 tab: the question's
page; 10 tabs: it and the 9 pages after it (the script opens all in one
context at once). One untimed pair first: the first process of a run pays for
reading the libraries from disk. Each timed run starts `--gap` seconds (1)
after the previous one ended, once its browser has exited, as between two
commands a person types.

Warm daemon: a third process in each group, in the same random order, is
`chatagent ask` again with a daemon started beforehand (`chatagent daemon
start`, in a directory of the run's own; `-v` shows it answered). Its pages
get a query no cache has seen (`server.fresh_url`): the daemon has opened
none of them before, as for a user's next question about a new page. Its
`overhead` = first token − the model's own TTFT (the server's, for that run)
is everything chatagent adds when warm.

Goals (the issue): median per-pair ratio ≤ 0.8 for cold processes; with a
warm daemon, first token within 400 ms of the model's own TTFT.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress

from chatagent.browser.discovery import find_browser
from chatagent.testing.gemini_server import GeminiServer, RecordedRequest, TextReply
from chatagent.testing.ports import free_port

from .data import DEFAULT_DATA_DIR, WtqQuestion, load_wtq, sample
from .report import describe_machine, machine, md_table, plural, progress_bar, write_json
from .scoring import answer_in_context
from .server import PageServer, fresh_url
from .stats import median, summary

ROOT = Path(__file__).resolve().parents[1]
MODEL_NAME = "gemini-2.5-flash"
ANSWER = "The answer is in the table on this page [Tab 1]."
TOKENS_PER_S = 50.0
SIDES = ("chatagent", "minimal")  # the cold pair
DAEMON = "daemon"  # `chatagent ask` answered by a warm daemon
SERVED = "answered by the chatagent daemon"  # what `ask -v` logs then (chatagent.daemon.client)
RATIO_GOAL = 0.8
DAEMON_GOAL_MS = 400.0  # first token with a warm daemon, above the model's own TTFT
RUN_TIMEOUT_S = 120.0
# Before each timed run: the previous process's browser has exited, as between two commands a
# person types. Back to back, each run shared the cores with the last one's shutdown.
GAP_S = 1.0
PHASES = ("to_request", "model_ttft", "to_token")
PROXY_VARIABLES = ("all_proxy", "http_proxy", "https_proxy", "no_proxy")


@dataclass(frozen=True)
class Task:
    """One question and the pages both processes are given for it (its own page first)."""

    question: WtqQuestion
    urls: tuple[str, ...]


@dataclass
class Run:
    side: str
    tabs: int
    first_token_ms: float
    phases_ms: dict[str, float]
    recall: bool
    answer: str  # as the process gave it: chatagent's `done.answer`, the script's whole output
    timings: dict[str, Any] | None  # chatagent's `done.timings`
    spawned_at: float  # time.time(): the runs' order, and when, to set against the load
    load1: float  # the 1-minute load average then


# ---------------------------------------------------------------- the questions


def tasks(data_dir: Path, site: PageServer, pairs: int, tabs: int) -> list[Task]:
    """`pairs` questions, one per page, spread over the set (the same every run)."""
    by_page: dict[str, WtqQuestion] = {}
    for q in load_wtq(data_dir):
        by_page.setdefault(q.page, q)
    pages = sorted(by_page)
    chosen = sample(pages, pairs) if pairs <= len(pages) else (pages * pairs)[:pairs]
    out = []
    for page in chosen:
        at = pages.index(page)
        urls = [site.file_url(data_dir / pages[(at + k) % len(pages)]) for k in range(tabs)]
        out.append(Task(by_page[page], tuple(urls)))
    return out


# ---------------------------------------------------------------- one process


def _env(server: GeminiServer, config_dir: str, offline: bool) -> dict[str, str]:
    """This environment, pointed at the local server, without the user's chatagent
    settings or daemon; `offline`: every host but 127.0.0.1 behind a proxy that refuses at once."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHATAGENT_")}
    if offline:
        env = {k: v for k, v in env.items() if k.lower() not in PROXY_VARIABLES}
        dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
        env |= {"all_proxy": dead, "http_proxy": dead, "https_proxy": dead, "no_proxy": "127.0.0.1,localhost"}
    return {**env, "PYTHONPATH": _pythonpath(env), "GOOGLE_API_KEY": "test", "GOOGLE_GEMINI_BASE_URL": server.url,
            "CHATAGENT_CONFIG": str(Path(config_dir) / "absent.toml"),
            # Where `chatagent ask` looks for a running daemon (chatagent.daemon.paths): none is
            # in a new directory, so a user's own daemon never answers a cold run.
            "CHATAGENT_DAEMON_DIR": config_dir}


def _pythonpath(env: dict[str, str]) -> str:
    """This checkout first, so the processes run the code being measured."""
    return os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)


def command(side: str, task: Task, browser: str) -> list[str]:
    if side in ("chatagent", DAEMON):
        return [sys.executable, "-m", "chatagent", "ask", *task.urls, "-q", task.question.question, "--json",
                "--model", MODEL_NAME, *(["-v"] if side == DAEMON else [])]
    return [sys.executable, "-m", "benchmarks.minimal_script", *task.urls, "-q", task.question.question,
            "--model", MODEL_NAME, "--browser", browser]


def _json_lines(out: bytes) -> list[dict[str, Any]]:
    """The complete lines of `out` that are JSON objects."""
    lines = []
    for line in out.split(b"\n")[:-1]:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            lines.append(value)
    return lines


def has_token(side: str) -> Callable[[bytes], bool]:
    """Whether the stdout read so far holds the first token: a `token` event line
    for chatagent, any output for the script (it prints only the answer)."""
    if side in ("chatagent", DAEMON):
        return lambda out: any(e.get("type") == "token" for e in _json_lines(out))
    return lambda out: bool(out.strip())


async def _spawn(argv: Sequence[str], env: dict[str, str], token: Callable[[bytes], bool]) -> tuple[float, float, str, str]:
    """Run `argv` to its end; (spawned, first token read) stamps, its stdout and its stderr."""
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(*argv, env=env, cwd=ROOT, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    errors = asyncio.ensure_future(proc.stderr.read())  # drained all along: a full pipe would stall the process
    out, t_token = b"", None
    try:
        async with asyncio.timeout(RUN_TIMEOUT_S):
            while chunk := await proc.stdout.read(65536):
                out += chunk
                if t_token is None and token(out):
                    t_token = time.perf_counter()
            await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    err = (await errors).decode(errors="replace")
    if proc.returncode != 0 or t_token is None:
        raise RuntimeError(f"{' '.join(argv[1:4])} exited {proc.returncode} without a first token: {err[-2000:]}")
    return t0, t_token, out.decode(errors="replace"), err


async def run_one(side: str, task: Task, server: GeminiServer, env: dict[str, str], browser: str) -> Run:
    before = len(server.requests)
    spawned_at, load1 = time.time(), os.getloadavg()[0]
    t0, t_token, out, err = await _spawn(command(side, task, browser), env, has_token(side))
    if (SERVED in err) != (side == DAEMON):
        raise RuntimeError(f"a {side} run was{' not' if side == DAEMON else ''} answered by a daemon: {err[-2000:]}")
    sent: list[RecordedRequest] = [r for r in server.requests[before:] if r.is_generate]
    first = sent[0] if sent else None
    if first is None or first.first_chunk_at is None:
        raise RuntimeError(f"{side}: the local server saw no answered generate request")
    ms = lambda a, b: (b - a) * 1000  # noqa: E731
    context = "\n".join(f"{r.system_text()}\n{r.text()}" for r in sent)
    phases = {"to_request": ms(t0, first.arrived_at), "model_ttft": ms(first.arrived_at, first.first_chunk_at),
              "to_token": ms(first.first_chunk_at, t_token)}
    answer, timings = out.strip(), None
    if side != "minimal":
        done = [e for e in _json_lines(out.encode()) if e.get("type") == "done"]
        if not done:
            raise RuntimeError(f"chatagent printed no done event: {out[-2000:]}")
        answer, timings = done[0]["answer"], done[0]["timings"]
        phases["startup"] = ms(t0, t_token) - timings["first_token_ms"]
        phases["overhead"] = ms(t0, t_token) - phases["model_ttft"]
    return Run(side, len(task.urls), ms(t0, t_token), phases, answer_in_context(task.question.answers, context),
               answer, timings, spawned_at, load1)


# ---------------------------------------------------------------- the warm daemon


@asynccontextmanager
async def warm_daemon(env: dict[str, str]) -> AsyncIterator[None]:
    """A daemon started with `env` (its CHATAGENT_DAEMON_DIR), stopped on leaving."""
    async def daemon(verb: str) -> None:
        done = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "chatagent", "daemon", verb], env=env, cwd=ROOT,
            capture_output=True, text=True, timeout=90, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"`chatagent daemon {verb}` exited {done.returncode}: {done.stderr[-2000:]}")

    await daemon("start")
    try:
        yield
    finally:
        await daemon("stop")


# ---------------------------------------------------------------- the pairs


def summarise(tabs: int, runs: list[Run]) -> dict[str, Any]:
    """One row: each side's first token, the per-pair ratios, phases and recall."""
    by_side = {side: [r for r in runs if r.side == side] for side in (*SIDES, DAEMON)}
    ratios = [a.first_token_ms / b.first_token_ms for a, b in zip(by_side["chatagent"], by_side["minimal"])]
    ratio = summary(ratios)
    out: dict[str, Any] = {
        "tabs": tabs,
        "pairs": len(ratios),
        "ratios": ratios,
        "ratio": ratio,
        "ratio_of_medians": median(r.first_token_ms for r in by_side["chatagent"])
        / median(r.first_token_ms for r in by_side["minimal"]),
        "chatagent_slower": sum(x > 1 for x in ratios),
        "goal_ratio": RATIO_GOAL,
        "goal_met": ratio["p50"] <= RATIO_GOAL,
    }
    for side, rs in by_side.items():
        if not rs:
            continue
        out[side] = {
            "first_token_ms": [r.first_token_ms for r in rs],
            "first_token": summary(r.first_token_ms for r in rs),
            "phases_p50_ms": {p: median(r.phases_ms[p] for r in rs) for p in rs[0].phases_ms},
            "recall": sum(r.recall for r in rs) / len(rs),
        }
    for side in ("chatagent", DAEMON):
        timings = [r.timings for r in by_side[side] if r.timings]
        if timings:
            out[side]["timings_p50_ms"] = {k: median(t[k] for t in timings)
                                           for k in ("first_token_ms", "extraction_ms", "budget_ms")}
    if warm := by_side[DAEMON]:
        overhead = summary(r.phases_ms["overhead"] for r in warm)
        ratios = [a.first_token_ms / b.first_token_ms for a, b in zip(warm, by_side["minimal"])]
        out[DAEMON] |= {"overhead": overhead, "ratios": ratios, "ratio": summary(ratios),
                        "goal_overhead_ms": DAEMON_GOAL_MS, "goal_met": overhead["p50"] <= DAEMON_GOAL_MS}
    return out


async def run_e2e(
    pairs: int = 12,
    ttft_ms: float = 300.0,
    tab_counts: Sequence[int] = (1, 10),
    *,
    data_dir: Path = DEFAULT_DATA_DIR,
    progress: Progress | None = None,
    seed: int = 20,
    offline: bool = True,
    daemon: bool = True,
    gap_s: float = GAP_S,
    warm_up: bool = True,
) -> dict[str, Any]:
    """Run `pairs` interleaved pairs per tab count; see the module docstring.
    `warm_up`: the untimed pair first (a sample's look at the section leaves it out)."""
    started = time.perf_counter()
    at_start = machine()
    rng = random.Random(seed)
    browser = find_browser()
    runs: dict[int, list[Run]] = {n: [] for n in tab_counts}
    with GeminiServer(responder=lambda _r: TextReply(text=ANSWER), ttft_s=ttft_ms / 1000,
                      tokens_per_s=TOKENS_PER_S) as server, PageServer() as site, \
            tempfile.TemporaryDirectory() as config_dir:
        async with AsyncExitStack() as stack:
            env = _env(server, config_dir, offline)
            sides: tuple[str, ...] = SIDES
            envs = dict.fromkeys(SIDES, env)
            if daemon:
                envs[DAEMON] = env | {"CHATAGENT_DAEMON_DIR": str(Path(config_dir) / "daemon")}
                await stack.enter_async_context(warm_daemon(envs[DAEMON]))
                sides += (DAEMON,)
            work = {n: tasks(data_dir, site, pairs, n) for n in tab_counts}
            fresh = itertools.count()

            def for_side(side: str, t: Task) -> Task:  # the daemon's pages: ones it has not read yet
                return Task(t.question, tuple(fresh_url(u, next(fresh)) for u in t.urls)) if side == DAEMON else t

            task = progress.add_task("end to end, pairs", total=pairs * len(tab_counts)) if progress else None
            for side in sides if warm_up else ():  # untimed: the first process of a run reads the libraries from disk
                await run_one(side, for_side(side, work[tab_counts[0]][0]), server, envs[side], browser)
            # Tab counts interleaved too, so drifting load spreads over both rows.
            for i in range(pairs):
                for n in tab_counts:
                    done = {}
                    for side in rng.sample(sides, len(sides)):
                        await asyncio.sleep(gap_s)
                        done[side] = await run_one(side, for_side(side, work[n][i]), server, envs[side], browser)
                    runs[n] += [done[side] for side in sides]
                    if progress is not None and task is not None:
                        progress.advance(task)
    return {
        "config": {"pairs": pairs, "server_ttft_ms": ttft_ms, "tokens_per_s": TOKENS_PER_S, "tabs": list(tab_counts),
                   "model": MODEL_NAME, "seed": seed, "offline": offline, "daemon": daemon, "gap_s": gap_s,
                   "warm_up": warm_up,
                   "data_dir": str(data_dir),
                   "questions": [t.question.id for t in work[tab_counts[0]]]},
        "machine": {**machine(), "loadavg_at_start": at_start["loadavg"]},
        "model_ttft": summary(r.phases_ms["model_ttft"] for rs in runs.values() for r in rs),
        "rows": {str(n): summarise(n, rs) for n, rs in runs.items()},
        "runs": [asdict(r) for rs in runs.values() for r in rs],
        "wall_s": time.perf_counter() - started,
    }


# ---------------------------------------------------------------- report


def _range(s: dict[str, float], fmt: str = "{:,.0f}") -> str:
    return f"{fmt.format(s['p50'])} ({fmt.format(s['min'])}–{fmt.format(s['max'])})"


def table_rows(result: dict[str, Any]) -> list[list[str]]:
    rows = []
    for n, row in result["rows"].items():
        met = "✓" if row["goal_met"] else "✗"
        rows.append([f"cold process, {plural(int(n), 'tab')}", _range(row["chatagent"]["first_token"]),
                     _range(row["minimal"]["first_token"]), _range(row["ratio"], "{:.2f}"),
                     f"{row['chatagent_slower']} of {row['pairs']}", f"ratio p50 ≤ {row['goal_ratio']:g} {met}"])
    for n, row in result["rows"].items():
        if DAEMON not in row:
            continue
        warm = row[DAEMON]
        met = "✓" if warm["goal_met"] else "✗"
        rows.append([f"warm daemon, {plural(int(n), 'tab')}", _range(warm["first_token"]),
                     _range(row["minimal"]["first_token"]), _range(warm["ratio"], "{:.2f}"),
                     f"{sum(x > 1 for x in warm['ratios'])} of {len(warm['ratios'])}",
                     f"model TTFT + {warm['overhead']['p50']:,.0f} ms p50 (goal ≤ {DAEMON_GOAL_MS:g}) {met}"])
    return rows


def phase_rows(result: dict[str, Any]) -> list[list[str]]:
    rows = []
    for n, row in result["rows"].items():
        for side in (*SIDES, DAEMON):
            if side not in row:
                continue
            p = row[side]["phases_p50_ms"]
            rows.append([plural(int(n), "tab"), side] + [f"{p[k]:,.0f}" for k in PHASES] + [
                f"{p['startup']:,.0f}" if "startup" in p else "–", f"{row[side]['recall']:.2f}"])
    return rows


HEAD = ["scenario", "chatagent ms p50 (min–max)", "minimal ms p50 (min–max)", "ratio p50 (min–max)",
        "slower than the script", "goal"]
PHASE_HEAD = ["tabs", "process", "spawn → request", "model TTFT", "first chunk → token read", "chatagent start-up",
              "recall"]


def markdown_section(result: dict[str, Any]) -> str:
    c = result["config"]
    return "\n".join([
        f"`chatagent ask --json` against the minimal script (Playwright + LangChain), each a fresh process; "
        f"spawn → first token read from its stdout. Local Gemini-compatible server, model TTFT {c['server_ttft_ms']:g} "
        f"ms (measured p50 {result['model_ttft']['p50']:.0f} ms); {plural(c['pairs'], 'pair')} per row in random "
        "order (interleaved); ratio = chatagent / script per pair.", "",
        md_table(HEAD, table_rows(result)), "",
        "Where the time goes (per-phase medians, ms) and answer recall (the page text sent holds the WTQ answer):", "",
        md_table(PHASE_HEAD, phase_rows(result)), "",
        f"1-minute load average as the runs started: {_range(summary(r['load1'] for r in result['runs']), '{:.1f}')} "
        f"on {result['machine']['cpus']} CPUs.",
    ]) + "\n"


def format_report(result: dict[str, Any]) -> str:
    c = result["config"]
    lines = [markdown_section(result), "Per-pair ratios (chatagent / minimal):"]
    for n, row in result["rows"].items():
        lines.append(f"  {plural(int(n), 'tab')}: " + " ".join(f"{x:.2f}" for x in row["ratios"])
                     + f"; ratio of the medians {row['ratio_of_medians']:.2f}")
        for side in ("chatagent", DAEMON):
            if side in row:
                t = row[side]["timings_p50_ms"]
                lines.append(f"  {plural(int(n), 'tab')}: {side} done.timings p50: first_token_ms "
                             f"{t['first_token_ms']:,.0f}, extraction_ms {t['extraction_ms']:,.0f}, "
                             f"budget_ms {t['budget_ms']:,.0f}")
    lines += ["", f"questions: {', '.join(c['questions'])}",
              f"wall time {result['wall_s']:.0f} s; {describe_machine(result['machine'])}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.e2e", description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=12)
    ap.add_argument("--ttft-ms", type=float, default=300.0, help="the local server's model TTFT")
    ap.add_argument("--tabs", default="1,10", help="tab counts, comma-separated (default 1,10)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="evaluation data dir (default: ../shared/data)")
    ap.add_argument("--seed", type=int, default=20, help="the pairs' random order")
    ap.add_argument("--network-as-is", dest="offline", action="store_false",
                    help="leave the processes' network alone (default: hosts but 127.0.0.1 refused at once)")
    ap.add_argument("--no-daemon", dest="daemon", action="store_false", help="leave out the warm-daemon runs")
    ap.add_argument("--gap", type=float, default=GAP_S, metavar="S",
                    help=f"seconds between one run's end and the next one's start (default {GAP_S:g})")
    ap.add_argument("--out", type=Path, help="write the full results (every run) as JSON")
    args = ap.parse_args(argv)
    tab_counts = [int(x) for x in args.tabs.split(",") if x.strip()]
    if args.pairs < 1 or not tab_counts or min(tab_counts) < 1:
        ap.error("--pairs and every --tabs count must be at least 1")

    async def go() -> dict[str, Any]:
        with progress_bar(Console(stderr=True)) as progress:
            return await run_e2e(args.pairs, args.ttft_ms, tab_counts, data_dir=args.data, progress=progress,
                                 seed=args.seed, offline=args.offline, daemon=args.daemon, gap_s=args.gap)

    result = asyncio.run(go())
    if args.out:
        write_json(args.out, result)
    print(format_report(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
