"""Start-up: commands that read no page import none of the libraries that
read pages, and `ask` starts the browser while the rest of the runtime loads.
What a user would notice stays the same: the answers, the page context and
the errors."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from chatagent import runtime as runtime_module
from chatagent.browser.base import Browser, PageSnapshot, Tab, TabFailure
from chatagent.browser.static import StaticTab
from chatagent.context import ContextBuilder
from chatagent.events import Done, Event
from chatagent.extraction import Extracted, Extractor
from chatagent.errors import ModelConfigError
from chatagent.runtime import Runtime
from chatagent.settings import Settings
from chatagent.testing import GeminiServer, TextReply
from conftest import ROOT, Site

PAGE_LIBRARIES = ("trafilatura", "bm25s", "numpy", "playwright", "langchain_google_genai")

# Runs `chatagent ARGS...` in this process, then writes the modules it imported to the file named first.
_IMPORTS_OF = textwrap.dedent("""
    import json, sys
    from chatagent.cli import main
    try:
        main(sys.argv[2:])
    except SystemExit:
        pass
    with open(sys.argv[1], "w") as out:
        json.dump(sorted(sys.modules), out)
""")


def imported_by(tmp_path: Path, *args: str, code: str = _IMPORTS_OF, env: dict[str, str] | None = None) -> set[str]:
    out = tmp_path / "modules.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GOOGLE_API_KEY": "", "GEMINI_API_KEY": "", **(env or {})}
    proc = subprocess.run([sys.executable, "-c", code, str(out), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return set(json.loads(out.read_text()))


def page_libraries(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.partition(".")[0] in PAGE_LIBRARIES)


@pytest.mark.parametrize("args", [
    ["--help"], ["config", "show"], ["config", "show", "--json"], ["config", "path"], ["ask", "--help"],
    ["bridge", "--help"],
], ids=" ".join)
@pytest.mark.e2e
def test_commands_that_read_no_page_import_no_page_libraries(tmp_path: Path, args: list[str]) -> None:
    assert page_libraries(imported_by(tmp_path, *args)) == []


@pytest.mark.parametrize("args", [
    ["ask", "x.html", "-q", "hi", "--model", "gemini-2.5-flash", "--help"],  # checked, then the help
    ["ask", "x.html", "-q", "hi", "--model", "gpt-5"],  # refused: a usage error
    ["config", "set", "model", "gpt-4"],
], ids=" ".join)
@pytest.mark.e2e
def test_a_model_name_is_checked_without_loading_a_model_library(tmp_path: Path, args: list[str]) -> None:
    """`--model` is checked as the command line is read, before the browser
    starts; LangChain (~0.25 s) still loads on the runtime's worker thread."""
    modules = imported_by(tmp_path, *args)
    assert "chatagent.models" in modules
    assert not sorted(m for m in modules if m.partition(".")[0] in ("langchain_core", "langchain_google_genai", "google"))


@pytest.mark.e2e
def test_making_a_runtime_imports_no_page_libraries(tmp_path: Path) -> None:
    """They load on a worker thread once the runtime starts (`async with`),
    so a command can start the browser first."""
    code = textwrap.dedent("""
        import json, sys
        from chatagent.runtime import Runtime
        Runtime()
        with open(sys.argv[1], "w") as out:
            json.dump(sorted(sys.modules), out)
    """)
    assert page_libraries(imported_by(tmp_path, code=code)) == []


@pytest.mark.e2e
def test_an_ask_answered_by_another_model_does_not_load_the_offline_one(tmp_path: Path, site: Site) -> None:
    """The offline model's modules (~40 ms of a cold start) load when it answers, not whenever a model is named."""
    with GeminiServer(responder=lambda _r: TextReply(text="It costs $1,349.00 [Tab 1].")) as gemini:
        modules = imported_by(tmp_path, "ask", site.url("product"), "-q", "How much is it?",
                              "--model", "gemini-2.5-flash", env=gemini.env())
    assert "langchain_google_genai" in modules
    assert not any(m.startswith("chatagent.offline") or m == "chatagent.models.extractive" for m in modules)
    offline = imported_by(tmp_path, "ask", site.url("product"), "-q", "How much is it?", "--model", "extractive")
    assert {"chatagent.models.extractive", "chatagent.offline.compose"} <= set(offline)


PAGE = """<!DOCTYPE html><html><head><title>Springfield</title></head><body>
<h1>Springfield</h1><p>Springfield is a town in the valley. Its population was 30,720 in the last census.</p>
</body></html>"""


class _StaticBrowser(Browser):
    async def open_tabs(self, targets: list[str], *, timeout_s: float | None = None) -> list[Tab | TabFailure]:
        return [StaticTab(str(i), url, PAGE) for i, url in enumerate(targets, 1)]

    async def close(self) -> None:
        pass


async def test_the_browser_starts_while_the_runtime_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    started = threading.Event()
    load = runtime_module._load_parts

    def load_once_the_browser_started(settings: Settings, extraction_workers: bool) -> object:
        # Were the browser started only after the runtime loaded, this would wait in vain.
        assert started.wait(60), "the browser was not started while the runtime loaded"
        return load(settings, extraction_workers)

    async def open_browser(settings: Settings) -> Browser:
        started.set()
        return _StaticBrowser()

    monkeypatch.setattr(runtime_module, "_load_parts", load_once_the_browser_started)
    monkeypatch.setattr(runtime_module, "open_browser", open_browser)
    async with Runtime(Settings.load(model="extractive")) as runtime:
        conversation = await runtime.open(["https://springfield.example/"])
        events: list[Event] = [e async for e in conversation.ask("What was the population of Springfield?")]
    done = events[-1]
    assert isinstance(done, Done) and "30,720" in done.answer


@pytest.mark.parametrize(("model", "says", "status"), [
    ("gemini-2.5-flash", "needs a Gemini API key", 1),
    ("no-such-model", "Unknown model 'no-such-model'", 2),  # refused at start, as `--model no-such-model` is
])
@pytest.mark.e2e
def test_a_model_that_cannot_be_made_is_reported_as_before(site: Site, model: str, says: str, status: int) -> None:
    """The model is made on a worker thread while the page loads: its error is
    still the one clear message, with nothing after it. Named by the settings
    (a name no provider serves is a usage error before anything starts, from
    the settings as from `--model`)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GOOGLE_API_KEY": "", "GEMINI_API_KEY": "", "CHATAGENT_MODEL": model}
    proc = subprocess.run([sys.executable, "-m", "chatagent", "ask", site.url("product"), "-q", "How much is it?"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == status
    assert proc.stderr.startswith("error: ") and says in proc.stderr
    assert "Traceback" not in proc.stderr and "never retrieved" not in proc.stderr


class _LateTab(StaticTab):
    """A tab whose snapshot is ready only once another tab has been extracted."""

    def __init__(self, tab_id: str, url: str, html: str, after: asyncio.Event) -> None:
        super().__init__(tab_id, url, html)
        self.after = after

    async def snapshot(self) -> PageSnapshot:
        await self.after.wait()
        return await super().snapshot()


class _Watching(Extractor):
    def __init__(self) -> None:
        super().__init__()
        self.extracted: dict[str, asyncio.Event] = {}

    def done(self, tab_id: str) -> asyncio.Event:
        return self.extracted.setdefault(tab_id, asyncio.Event())

    async def extract(self, snapshot: PageSnapshot) -> Extracted:
        result = await super().extract(snapshot)
        self.done(snapshot.tab_id).set()
        return result


async def test_each_tab_is_extracted_as_soon_as_it_is_read_with_the_same_context(site: Site) -> None:
    """Tab 2's snapshot waits for tab 1's extraction: were every snapshot
    taken before any extraction started, the build would never end."""
    extractor = _Watching()
    html = {name: site.path(name).read_text() for name in ("article", "table")}
    tabs: list[Tab | TabFailure] = [
        StaticTab("1", site.url("article"), html["article"]),
        _LateTab("2", site.url("table"), html["table"], after=extractor.done("1")),
        TabFailure(tab_id="3", url="https://gone.example/", code="unreachable", message="could not load the page"),
    ]
    question = "What does the table say?"
    ctx = await asyncio.wait_for(ContextBuilder(extractor, budget_per_tab=300).build(tabs, question), 60)

    # The same as from snapshots all taken first, by a builder with empty caches.
    snapshots = [await t.snapshot() if isinstance(t, Tab) else t for t in tabs]
    before = await ContextBuilder(Extractor(), budget_per_tab=300).build([], question, snapshots=snapshots)
    timings = {"extraction_ms", "budget_ms"}
    assert ctx.model_dump(exclude=timings) == before.model_dump(exclude=timings)
    assert [t.ok for t in ctx.tabs] == [True, True, False] and ctx.tabs[2].error == "could not load the page"


def test_the_commands_main_knows_are_the_parsers_own() -> None:
    """`main` skips reading entry points for a built-in command: the list it goes by is the parser's."""
    import argparse

    from chatagent.cli import BUILT_IN_COMMANDS, build_parser

    sub = next(a for a in build_parser(plugins=False)._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == BUILT_IN_COMMANDS
    assert "bridge" in next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices


_STOPLIST_AFTER = textwrap.dedent("""
    import json, sys
    from chatagent.cli import main
    status = main(sys.argv[2:])
    import trafilatura.external as te
    with open(sys.argv[1], "w") as out:
        json.dump({"status": status, "stoplist_loaded": te.JT_STOPLIST is not None}, out)
""")


@pytest.mark.e2e
def test_a_one_shot_ask_does_not_warm_extractions_rare_fallback(tmp_path: Path, site: Site) -> None:
    """justext's stoplists (~150 ms of CPU, while a cold `ask` is short of it)
    serve the 1 page in 25 whose text trafilatura finds too short; `ask`
    extracts its page next, so it leaves them to such a page."""
    out = tmp_path / "state.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GOOGLE_API_KEY": "", "GEMINI_API_KEY": ""}
    proc = subprocess.run([sys.executable, "-c", _STOPLIST_AFTER, str(out), "ask", site.url("product"), "-q",
                           "How much does the Aurora X14 Pro cost?", "--model", "extractive"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    state = json.loads(out.read_text())
    assert state["status"] == 0 and "$1,349.00" in proc.stdout, proc.stderr
    assert state["stoplist_loaded"] is False


async def test_a_long_lived_runtime_starts_its_warm_extraction_workers_before_its_first_question() -> None:
    async with Runtime(Settings.load(model="extractive")) as runtime:
        await runtime.warm()
        assert runtime._loaded().pool.pids(), "the workers warm themselves as they start"


async def test_a_runtime_starts_its_extraction_workers_before_its_first_page() -> None:
    """Every page is extracted in a worker, which takes about a second to start: a runtime
    with no warm-up (a one-shot `ask`) starts them as it loads, not on its first page."""
    async with Runtime(Settings.load(model="extractive")) as runtime:
        await runtime.load()
        pool = runtime._loaded().pool
        for _ in range(600):  # a hang guard, not a time limit: the workers start on a busy machine too
            if pool.pids():
                break
            await asyncio.sleep(0.1)
        assert pool.pids(), "no extraction worker was started before any page was read"


async def test_a_runtime_closed_before_it_has_loaded_starts_no_worker() -> None:
    runtime = Runtime(Settings.load(model="extractive"))
    async with runtime:
        pass  # closed while its parts still load
    await runtime.load()
    await asyncio.sleep(0)  # the loading's callbacks have run
    assert runtime._workers is None and not runtime._loaded().pool.pids()


async def test_a_command_ends_with_its_own_error_when_closing_its_workers_fails(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Closing the pool while a worker warms up once raised EBADF from a pipe closed twice; whatever
    # the cause, the user is told what went wrong with their command, not that.
    runtime = Runtime(Settings.load(model="extractive"))
    pool = None

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError(9, "Bad file descriptor")

    with pytest.raises(ModelConfigError, match="the command's own error"):
        async with runtime:
            await runtime.load()
            pool = runtime._loaded().pool
            real = pool.shutdown
            monkeypatch.setattr(pool, "shutdown", broken)
            raise ModelConfigError("the command's own error")
    assert "closing the extraction workers failed" in caplog.text
    real(wait=True)


def test_a_worker_killed_from_two_threads_at_once_closes_its_pipe_once() -> None:
    # The pool closing while a worker warms up kills it twice at once: from `shutdown`, and from
    # `wait_ready` seeing its pipe closed. A pipe closed by both is closed twice (EBADF, or worse,
    # another file's descriptor, reused meanwhile).
    from concurrent.futures import ThreadPoolExecutor

    from chatagent.extraction_pool import _Worker

    class Pipe:  # as `multiprocessing.connection.Connection.close`, with its window held open
        handle: int | None = 7
        closing = 0

        def close(self) -> None:
            if self.handle is None:
                return
            self.closing += 1
            time.sleep(0.05)
            if self.closing > 1:
                raise OSError(9, "Bad file descriptor")
            self.handle = None

    class Process:
        def kill(self) -> None: ...

        def join(self, timeout: float) -> None: ...

    worker = _Worker.__new__(_Worker)
    worker.conn, worker.process, worker._kill_lock = Pipe(), Process(), threading.Lock()
    with ThreadPoolExecutor(2) as threads:
        list(threads.map(lambda _: worker.kill(), range(2)))  # raises if the pipe was closed twice at once
    assert worker.conn.handle is None


_START_UP_OVER = re.compile(r"start-up over after (\d+) garbage collections: (\d+) objects frozen")


@pytest.mark.e2e
def test_a_cold_ask_runs_no_garbage_collection_until_its_answer_begins(site: Site) -> None:
    """Start-up's ~200,000 long-lived objects (LangChain, trafilatura, Playwright,
    the page's extraction) are not scanned again and again, ~0.2 s of a cold
    `ask`: the collector is paused from the command's first line until the
    answer's first event, then on again with start-up's objects frozen."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GOOGLE_API_KEY": "", "GEMINI_API_KEY": ""}
    proc = subprocess.run([sys.executable, "-m", "chatagent", "-vv", "ask", site.url("product"), "-q",
                           "How much does the Aurora X14 Pro cost?", "--model", "extractive"],
                          cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=120)
    out = proc.stdout  # the log and the answer in the order they were written
    assert proc.returncode == 0 and "$1,349.00" in out, out
    over = _START_UP_OVER.findall(out)
    assert len(over) == 1, out
    assert out.index("start-up over") < out.rindex("$1,349.00")  # as the answer began, not at the exit
    collections, frozen = map(int, over[0])
    # ~20 run as the interpreter itself starts, before `chatagent` has its first line;
    # unpaused, importing the runtime's libraries alone runs ~170.
    assert collections < 60
    assert frozen > 100_000  # all of start-up: the runtime loaded, the page read


def test_the_collector_is_left_off_where_someone_else_turned_it_off() -> None:
    from chatagent import startup

    gc.disable()
    try:
        with startup.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
    with startup.paused():
        assert not gc.isenabled()
        startup.over()
        assert gc.isenabled()
        startup.over()  # again: nothing to do
    assert gc.isenabled()
    gc.unfreeze()  # this test process's objects go back to being collected


@pytest.mark.e2e
def test_a_one_shot_ask_extracts_its_pages_in_a_worker_process(tmp_path: Path, site: Site) -> None:
    """Where a page's time and memory limits hold (`extraction_pool`), even for one
    question: one worker, whose start (~0.3 s of CPU) overlaps the pages loading."""
    modules = imported_by(tmp_path, "ask", site.url("product"), site.url("laptop_orion"), "-q",
                          "Which laptop is lighter?", "--model", "extractive")
    assert "chatagent.extraction" in modules
    assert "multiprocessing.forkserver" in modules
