"""Bad input to `chatagent ask` and `chatagent chat`, as a user would type it:
a clear message, a non-zero exit status, never a traceback, and a question
that failed can simply be asked again."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from chatagent.cli import main
from conftest import ROOT, Site
from warm_start import command

def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
    env.pop("GOOGLE_API_KEY", None)  # the offline extractive model
    return subprocess.run(command(*args), cwd=ROOT, env=env,
                          input=stdin, capture_output=True, timeout=120)


def clean(proc: subprocess.CompletedProcess[bytes]) -> str:
    err = proc.stderr.decode()
    assert "Traceback" not in err and "Traceback" not in proc.stdout.decode()
    # Nothing of the worker processes' machinery at exit ("resource_tracker: … leaked semaphore").
    assert "resource_tracker" not in err and "Warning:" not in err, err
    return err


@pytest.fixture
def parse(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str]]:
    """`parse(*args)`: the exit status and stderr of `chatagent ARGS` when its
    command line is refused, in this process: the parser `chatagent` runs, with
    no interpreter to start per case (`test_a_usage_error_from_the_command`
    runs the command itself)."""
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)

    def _parse(*args: str) -> tuple[int, str]:
        try:
            status = main(list(args))
        except SystemExit as exc:
            status = exc.code
        out, err = capsys.readouterr()
        assert "Traceback" not in err + out
        return status, err

    return _parse


USAGE_ERRORS = [
    (["ask", "x.html"], "-q/--question"),
    (["ask", "x.html", "-q", "hi", "--budget", "lots"], "not a whole number"),
    (["ask", "x.html", "-q", "hi", "--deadline", "0"], "must be positive"),
    (["ask", "x.html", "-q", "hi", "--timeout", "soon"], "not a number of seconds"),
    (["chat", "x.html", "--no-such-flag"], "chatagent chat: error: unknown option --no-such-flag"),
    # A misspelt option is said to be unknown, with the one meant: not as the -q it leaves missing.
    (["ask", "x.html", "--qestion", "hi"], "chatagent ask: error: unknown option --qestion; did you mean --question?"),
    (["ask", "x.html", "-q", "hi", "--budgte=9000"], "error: unknown option --budgte; did you mean --budget?"),
    (["ask", "-q", "hi"], "error: Give at least one URL or file, or --cdp"),
    (["chat"], "error: Give at least one URL or file, or --cdp"),
    (["context"], "error: Give at least one URL or file, or --cdp"),
    (["ask", "x.html", "-q", "hi", "--model", "gpt-5"], "argument --model: Unknown model 'gpt-5'. Use 'extractive'"),
    (["chat", "x.html", "--model", "gpt-5"], "argument --model: Unknown model 'gpt-5'. Use 'extractive'"),
]


@pytest.mark.parametrize(("args", "says"), USAGE_ERRORS)
def test_usage_errors_exit_2_with_the_reason(parse: Callable[..., tuple[int, str]], args: list[str], says: str) -> None:
    status, err = parse(*args)
    assert status == 2 and says in err


@pytest.mark.e2e
@pytest.mark.parametrize(("args", "says"), [USAGE_ERRORS[5], USAGE_ERRORS[7]])
def test_a_usage_error_from_the_command(args: list[str], says: str) -> None:
    """The same through `python -m chatagent`: an ask's command line is read
    first for a daemon (`daemon/early.py`), then by the CLI."""
    proc = run(*args)
    assert proc.returncode == 2 and says in clean(proc)


@pytest.mark.e2e
def test_a_blank_question_is_refused_clearly(site: Site) -> None:
    proc = run("ask", site.url("product"), "-q", "   ")
    assert proc.returncode == 2 and clean(proc) == "error: The question is empty.\n"


@pytest.mark.parametrize("args", [
    ["ask", "x.html", "-q", "hi", "--frobnicate"],
    ["chat", "x.html", "--frobnicate"],
    ["context", "--frobnicate", "x.html"],
    ["config", "set", "model", "extractive", "--frobnicate"],
])
def test_an_unknown_option_is_refused_with_the_usage_of_the_command_used(
    parse: Callable[..., tuple[int, str]], args: list[str],
) -> None:
    command = " ".join(a for a in args if a in ("ask", "chat", "context", "config", "set"))
    status, err = parse(*args)
    assert status == 2
    assert err.startswith(f"usage: chatagent {command} ["), err
    assert f"chatagent {command}: error: unknown option --frobnicate\n" in err


@pytest.mark.e2e
def test_a_target_that_cannot_be_opened_says_why() -> None:
    # Three targets in one ask (one process): each tab's own reason, then the error.
    targets = {"no/such/page.html": "No such file", "ftp://example.com/file": "Unsupported URL scheme 'ftp'",
               "http://": "names no host"}
    proc = run("ask", *targets, "-q", "What is this?")
    assert proc.returncode == 1
    out = proc.stdout.decode() + clean(proc)
    assert "None of the tabs could be read" in out
    for n, (target, says) in enumerate(targets.items(), 1):
        assert f"tab {n}: " in out and says in out.split(f"tab {n}: ", 1)[1].split("\n", 1)[0], target


@pytest.mark.e2e
def test_chat_survives_bad_lines_and_answers_the_next_question(site: Site) -> None:
    stdin = b"\n".join([
        b"\xff\xfe\x00 binary garbage \x80",
        b"   ",
        b"x" * 9000,
        b"How much does the Aurora X14 Pro cost?",
    ]) + b"\n"
    proc = run("chat", site.url("product"), "--json", stdin=stdin)
    clean(proc)
    events = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    ends = [e for e in events if e["type"] in ("done", "error")]
    assert len(ends) == 3, "the blank line is skipped; every other line gets exactly one ending"
    assert ends[1]["type"] == "error" and ends[1]["code"] == "bad_input" and "8,000" in ends[1]["message"]
    assert ends[2]["type"] == "done" and "$1,349.00" in ends[2]["answer"]
    assert proc.returncode == 1, "a failed question makes the exit status non-zero"


@pytest.mark.e2e
def test_verbose_is_accepted_after_the_command_name_too(site: Site) -> None:
    after = run("ask", site.url("product"), "-q", "How much is it?", "-vv")
    assert after.returncode == 0 and "DEBUG" in clean(after), "-vv after the command"
    both = run("-v", "ask", site.url("product"), "-q", "How much is it?", "-v")
    assert both.returncode == 0 and "DEBUG" in clean(both), "one -v before and one after make -vv"
    once = run("-v", "ask", site.url("product"), "-q", "How much is it?")
    assert once.returncode == 0 and "DEBUG" not in clean(once)
    # -v says what was read: the pages opened and what each tab gave the model.
    assert "opened 1 page(s) in" in clean(once) and re.search(r"tab 1: [\d,]+ of [\d,]+ tokens", clean(once))
    # (Without -v it says none of that: test_who_wrote_a_page_and_when_it_was_published_offline checks.)
    chat = run("chat", site.url("product"), "-vv", stdin=b"How much is it?\n")
    assert chat.returncode == 0 and "DEBUG" in clean(chat)
    # Commands other packages register (the bridge, through an entry point) take it too.
    assert run("bridge", "status", "-v").returncode == 0
    assert run("config", "path", "-v").returncode == 0


@pytest.mark.e2e
def test_who_wrote_a_page_and_when_it_was_published_offline(site: Site) -> None:
    proc = run("ask", site.url("article"), "-q", "When was this article published?")
    assert proc.returncode == 0 and proc.stdout.decode().startswith("Published 3 March 2025 (2025-03-03)"), clean(proc)
    assert "opened 1 page(s)" not in clean(proc), "what -v says of the pages read is not said without it"
    proc = run("ask", site.url("article"), "-q", "Who wrote this?")
    # The byline is a passage of the page: cited by its block ([1.2]), not the whole tab.
    assert re.match(r"By Maren Oyelaran, Transport Correspondent · 3 March 2025 \[1\.\d+\]", proc.stdout.decode())


def test_json_carries_the_passages_an_answer_cites(site: Site) -> None:
    proc = run("ask", site.url("ferry_timetable"), "-q", "how much does a dog pay on the ferry", "--json")
    done = json.loads(proc.stdout.decode().splitlines()[-1])
    assert done["type"] == "done" and done["dropped_citations"] == 0, clean(proc)
    [passage] = [c for c in done["citations"] if c["block"]]
    assert f"[{passage['block']}]" in done["answer"] and passage["tab_id"] == "1"
    assert "dogs travel for €2 - pay the deckhand on board." in passage["quote"]
    assert passage["url"].startswith(site.url("ferry_timetable") + "#:~:text=")


DISCARDING = "trafilatura.core: discarding data"


@pytest.mark.e2e
def test_a_page_with_no_text_gets_its_note_and_no_library_warning_unless_vv() -> None:
    """trafilatura logs a WARNING for a page with no main text; the tab's note
    says so already, in words a user can act on."""
    page = "fixtures/pages/image_only.html"
    # -v (INFO) does not show it either: asked with -v, as `context` is asked without.
    ask = run("-v", "ask", page, "-q", "What gate does the flight board at the top of the page show?")
    assert "No readable text on this page" in ask.stdout.decode() + clean(ask)
    assert DISCARDING not in clean(ask)
    context = run("context", page)
    assert context.returncode == 0 and "No readable text on this page" in context.stdout.decode()
    assert DISCARDING not in clean(context)
    assert f"WARNING {DISCARDING}: file://" in clean(run("-vv", "context", page))


def test_other_library_warnings_still_show() -> None:
    from chatagent.process import _quiet_libraries

    def shown(name: str, level: int, msg: str) -> bool:
        return _quiet_libraries(logging.LogRecord(name, level, __file__, 1, msg, ("x",), None))

    assert not shown("trafilatura.core", logging.WARNING, "discarding data: %s")
    assert shown("trafilatura.core", logging.WARNING, "parsed tree length: %s, wrong data type or not valid HTML")
    assert shown("trafilatura.core", logging.ERROR, "not a 200 response: %s")
    assert not shown("trafilatura.main_extractor", logging.INFO, "extracted: %s")
    assert shown("playwright", logging.WARNING, "discarding data: %s"), "only trafilatura's is dropped"


@pytest.mark.e2e
def test_chat_commands_on_piped_input_print_their_results_on_stdout(site: Site) -> None:
    stdin = "\n".join([
        "/tabs", f"/open {site.url('two_a')}", "/close 1", "/tabs", "/close 7", "/bogus",
        "When was Port Averly founded?", "/quit", "How much is the laptop?",
    ]) + "\n"
    proc = run("chat", site.url("product"), stdin=stdin.encode())
    out, err = proc.stdout.decode(), clean(proc)
    first_tabs, rest = out.split("Closed tab 1.\n")
    assert first_tabs.startswith(f"[Tab 1] Aurora X14 Pro 14\" Laptop — 32 GB / 1 TB — Volta Computers — {site.url('product')}\n")
    assert f"[Tab 2] Port Averly — City guide — Coastal Towns Atlas — {site.url('two_a')}\n" in first_tabs
    assert rest.startswith(f"[Tab 2] Port Averly — City guide — Coastal Towns Atlas — {site.url('two_a')}\n")
    assert "Tab 1" not in rest and "1648" in rest, "tab 1 is gone; tab 2 answers"
    assert "$1,349.00" not in out, "nothing after /quit"
    assert "No tab 7: the tabs are 2." in err and "Unknown command /bogus" in err
    assert proc.returncode == 1, "a command failed"


def _before_chatagent(err: str) -> bool:
    """A KeyboardInterrupt whose every frame is the interpreter's frozen start-up
    code: it came before chatagent's first line could hold Ctrl-C (site's imports,
    runpy finding the package). chatagent's own first line imports nothing
    (`chatagent/__main__.py`)."""
    frames = re.findall(r'^  File "([^"]*)"', err, re.M)
    return err.rstrip().endswith("KeyboardInterrupt") and bool(frames) and all(f.startswith("<frozen") for f in frames)


# What CPython prints when it drops a Ctrl-C that came in importlib's clean-up
# of a module lock, before chatagent's first line (chatagent/ctrl_c.py).
_DROPPED = re.compile(r"\AException ignored in: <function _get_module_lock\.<locals>\.cb at 0x[0-9a-f]+>\n"
                      r"Traceback \(most recent call last\):\n(?:  .*\n)+KeyboardInterrupt: \n")


@pytest.mark.e2e
def test_ctrl_c_at_any_moment_of_the_start_says_interrupted_and_never_a_traceback(site: Site, tmp_path: Path) -> None:
    # A daemon directory of its own: a daemon another test left running would answer in
    # milliseconds, before a Ctrl-C that a loaded machine sends late.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CHATAGENT_DAEMON_DIR": str(tmp_path)}
    env.pop("GOOGLE_API_KEY", None)
    statuses: list[int] = []
    # Imports, the CLI, the browser's launch; then, until three Ctrl-Cs have met
    # chatagent (a busy machine starts Python slowly), later ones.
    late = (1.2, 1.6, 2.0, 2.5, 3.0, 4.0, 5.0)
    for delay in (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.6, 0.9, *late):
        if delay in late and statuses.count(130) >= 3:
            break
        proc = subprocess.Popen([sys.executable, "-m", "chatagent", "ask", site.url("product"), "-q", "How much?"],
                                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        if err.startswith("Fatal Python error: init_") or _before_chatagent(err):
            continue  # the interpreter's own start (site, runpy finding the package): before any of chatagent
        dropped, err = bool(_DROPPED.match(err)), _DROPPED.sub("", err)  # CPython's, before chatagent
        assert "Traceback" not in err + out, (delay, err)
        if dropped and proc.returncode == 0:
            continue  # lost before chatagent's first line, the import lock given back: an ask like any other
        if delay in late and proc.returncode == 0:
            break  # answered before the Ctrl-C came: later ones come later still
        # -SIGINT: the signal came before Python had set up its own handling.
        assert proc.returncode in (130, -signal.SIGINT), (delay, proc.returncode, err)
        if proc.returncode == 130:
            assert err.strip().endswith("Interrupted."), (delay, err)
        statuses.append(proc.returncode)
    assert statuses.count(130) >= 3, statuses


def test_a_ctrl_c_held_through_the_start_cancels_the_command_at_an_await() -> None:
    """A Ctrl-C that came while the command was starting (chatagent/__main__.py holds
    it) stops the command at its first `await`: never in the middle of whatever code
    runs then, such as importlib's clean-up, where CPython drops it and can leave the
    import lock taken (chatagent/ctrl_c.py)."""
    code = (
        "import asyncio, os, signal\n"
        "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # as chatagent/__main__.py\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "from chatagent.process import run\n"
        "async def command():\n"
        "    print('started', flush=True)\n"
        "    try:\n"
        "        await asyncio.sleep(30)\n"
        "    except asyncio.CancelledError:\n"
        "        print('cancelled at its await', flush=True)\n"
        "        raise\n"
        "    return 0\n"
        "raise SystemExit(run(command, verbose=0))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.splitlines() == ["started", "cancelled at its await"], proc.stdout
    assert proc.returncode == 130 and proc.stderr.strip() == "Interrupted.", (proc.returncode, proc.stderr)


@pytest.mark.e2e
def test_a_ctrl_c_dropped_before_chatagent_started_ends_the_ask_as_interrupted(site: Site, tmp_path: Path) -> None:
    """CPython can drop a Ctrl-C that comes in its own start, in importlib's clean-up,
    leaving the import lock taken: the ask's first import in a thread then waited
    forever. The lock is taken here as that leaves it."""
    code = (
        "import _imp, runpy, sys\n"
        "_imp.acquire_lock()  # as a Ctrl-C dropped in importlib's clean-up leaves it\n"
        f"sys.argv = ['chatagent', 'ask', {site.url('product')!r}, '-q', 'How much is it?']\n"
        "runpy.run_module('chatagent', run_name='__main__', alter_sys=True)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CHATAGENT_DAEMON_DIR": str(tmp_path)}
    env.pop("GOOGLE_API_KEY", None)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 130 and proc.stderr.strip() == "Interrupted.", (proc.returncode, proc.stderr)
    assert proc.stdout == ""
