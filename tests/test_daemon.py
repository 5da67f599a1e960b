"""`chatagent daemon` and `chatagent ask` through it, run as a user would:
subprocesses, a daemon in a directory of the test's own (CHATAGENT_DAEMON_DIR),
the served fixtures and the offline extractive model.

Waits poll with a generous bound and never assert how long anything took."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from chatagent.daemon import client
from chatagent.daemon.paths import BUILD, DaemonPaths, daemon_pid, settings_inputs
from chatagent.daemon.protocol import MAX_REQUEST_BYTES
from chatagent.daemon.server import _private_socket

from conftest import ROOT, Site
from warm_start import command

pytestmark = pytest.mark.e2e
# The tests that share a daemon (the module fixture `daemon`) run on one worker each, in two
# groups (two daemons), so that neither is the suite's long pole; the others go anywhere.
ONE, TWO = pytest.mark.xdist_group("daemon-1"), pytest.mark.xdist_group("daemon-2")

QUESTION = "How much does the Aurora X14 Pro cost?"
SERVED = "answered by the chatagent daemon (pid {pid})"


def _env(directory: Path, **extra: str) -> dict[str, str]:
    # A daemon that outlives its test (a killed run) stops on its own within 5 minutes.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120", "CHATAGENT_DAEMON_DIR": str(directory),
           "CHATAGENT_DAEMON_IDLE": "300", **extra}
    env.pop("GOOGLE_API_KEY", None)  # the offline extractive model
    return env


def run(*args: str, env: dict[str, str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(command(*args), cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=110)
    assert "Traceback" not in proc.stderr + proc.stdout
    return proc


def events(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in proc.stdout.splitlines()]


def ending(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    ends = [e for e in events(proc) if e["type"] in ("done", "error")]
    assert len(ends) == 1, proc.stdout
    return ends[0]


def status_command(env: dict[str, str]) -> dict[str, Any]:
    """What `chatagent daemon status --json` prints, with its exit status checked."""
    proc = run("daemon", "status", "--json", env=env)
    shown = json.loads(proc.stdout)
    assert proc.returncode == (0 if shown["running"] else 3)
    return shown


def status(env: dict[str, str]) -> dict[str, Any]:
    """The daemon's own status reply, asked over its socket from this process (as
    `daemon status` asks it): for counts and polls, without starting a Python each time."""
    running = asyncio.run(client.status(DaemonPaths(Path(env["CHATAGENT_DAEMON_DIR"]))))
    return {"running": True, **running.model_dump()} if running else {"running": False}


def wait_until(condition: Callable[[], bool], what: str, bound_s: float = 60) -> None:
    """Poll `condition`; `bound_s` only keeps a broken daemon from hanging the suite."""
    end = time.monotonic() + bound_s
    while not condition():
        assert time.monotonic() < end, f"still waiting for {what}"
        time.sleep(0.1)


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def descendants(pid: int) -> list[int]:
    tree, out, todo = _children(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _argv(pid: int) -> list[str]:
    try:
        return [a.decode(errors="replace") for a in (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0") if a]
    except OSError:
        return []


def browsers(pid: int) -> set[int]:
    """The browsers the daemon launched: its Chromium processes of no `--type=`
    (renderers, zygotes, GPU and utility processes come and go with the pages;
    the browser stays). By its own command line, not its parent's name: a
    renderer's zygote-forked parent exits as it starts."""
    def is_browser(argv: list[str]) -> bool:
        exe = os.path.basename(argv[0]) if argv else ""
        return (exe.startswith(("chrom", "headless")) and not exe.startswith("chrome_crashpad")
                and not any(a.startswith("--type=") for a in argv))

    return {p for p in descendants(pid) if is_browser(_argv(p))}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z")


@dataclass
class Daemon:
    env: dict[str, str]
    paths: DaemonPaths
    pid: int


def start(directory: Path, **extra: str) -> Daemon:
    env = _env(directory, **extra)
    proc = run("daemon", "start", env=env)
    assert proc.returncode == 0 and "Started the chatagent daemon" in proc.stdout, proc.stderr
    return Daemon(env, DaemonPaths(directory), status_command(env)["pid"])


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    running = start(tmp_path_factory.mktemp("d"))
    yield running
    run("daemon", "stop", env=running.env)


# --- asks through the daemon --------------------------------------------------------------------


@ONE
def test_asks_are_answered_by_one_warm_daemon_as_in_their_own_process(site: Site, daemon: Daemon) -> None:
    alone = run("ask", site.url("product"), "-q", QUESTION, "--json", env=_env(Path(os.environ["CHATAGENT_DAEMON_DIR"])))
    assert alone.returncode == 0, alone.stderr
    before = status(daemon.env)
    launched = browsers(daemon.pid)
    assert len(launched) == 1
    via = [run("ask", site.url("product"), "-q", QUESTION, "--json", "-v", env=daemon.env) for _ in range(2)]
    after = status(daemon.env)
    for proc in via:
        assert proc.returncode == 0, proc.stderr
        assert SERVED.format(pid=daemon.pid) in proc.stderr
        assert [e["type"] for e in events(proc)] == [e["type"] for e in events(alone)]
        for key in ("answer", "citations", "pass", "stop_reason", "model"):  # not usage: the fence code is random
            assert ending(proc)[key] == ending(alone)[key], key
    assert "$1,349.00" in ending(alone)["answer"]
    assert after["pid"] == before["pid"] and after["asks"] == before["asks"] + 2
    assert browsers(daemon.pid) == launched, "the daemon's one browser served both asks"


@TWO
def test_asks_at_once_each_get_their_own_answer(site: Site, daemon: Daemon) -> None:
    questions = {"product": (QUESTION, "$1,349.00"), "two_a": ("What does this page say?", "")}
    before = status(daemon.env)["asks"]
    clients = {
        name: subprocess.Popen(command("ask", site.url(name), "-q", q, "--json"),
                               cwd=ROOT, env=daemon.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name, (q, _) in questions.items()
    }
    for name, client in clients.items():
        out, err = client.communicate(timeout=110)
        assert client.returncode == 0, err
        done = ending(subprocess.CompletedProcess(client.args, 0, out, err))
        assert done["citations"][0]["url"] == site.url(name) and questions[name][1] in done["answer"]
    assert status(daemon.env)["asks"] == before + 2


@ONE
def test_terminal_output_is_the_same_as_in_process(site: Site, daemon: Daemon) -> None:
    alone = run("ask", site.url("product"), "-q", QUESTION, env=_env(Path(os.environ["CHATAGENT_DAEMON_DIR"])))
    via = run("ask", site.url("product"), "-q", QUESTION, env=daemon.env)
    assert via.returncode == alone.returncode == 0
    assert via.stdout == alone.stdout and "$1,349.00" in via.stdout
    citation = [line for line in via.stderr.splitlines() if line.startswith("[Tab 1]")]
    assert citation and citation[0] in alone.stderr


@TWO
def test_a_local_file_is_named_from_the_clients_directory_and_its_neighbour_stays_unread(
    tmp_path: Path, daemon: Daemon,
) -> None:
    (tmp_path / "notes.html").write_text(
        "<html><head><title>Meeting notes</title></head><body><h1>Meeting notes</h1>"
        "<p>The meeting is in room B204 on Thursday.</p><iframe src='secret.html'></iframe></body></html>")
    # A secret no timing figure can contain by chance ("7319" did: "46.1731969999164" ms).
    (tmp_path / "secret.html").write_text("<html><body><p>The vault code is vault-7319-kestrel.</p></body></html>")
    proc = run("ask", "notes.html", "-q", "Which room is the meeting in?", "--json", "-v", env=daemon.env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert SERVED.format(pid=daemon.pid) in proc.stderr, "the daemon (running in /) read the file named relative to the client"
    done = ending(proc)
    assert "B204" in done["answer"] and done["citations"][0]["url"] == (tmp_path / "notes.html").as_uri()
    seen = proc.stdout + proc.stderr
    assert "kestrel" not in seen and "vault" not in seen, "the file beside it was not named, so it is not served"


@ONE
def test_an_unreachable_page_fails_as_in_process(closed_port_url: str, daemon: Daemon) -> None:
    alone = run("ask", closed_port_url, "-q", "What is this?", "--json", env=_env(Path(os.environ["CHATAGENT_DAEMON_DIR"])))
    via = run("ask", closed_port_url, "-q", "What is this?", "--json", "-v", env=daemon.env)
    assert SERVED.format(pid=daemon.pid) in via.stderr
    assert via.returncode == alone.returncode == 1
    assert ending(via) == ending(alone) and ending(via)["code"] == "no_readable_tabs"
    assert [e for e in events(via) if e["type"] == "note"] == [e for e in events(alone) if e["type"] == "note"]


@TWO
def test_a_model_that_cannot_be_made_fails_as_in_process(site: Site, daemon: Daemon) -> None:
    args = ("ask", site.url("product"), "-q", QUESTION, "--model", "gemini-2.5-flash")  # and no key
    alone = run(*args, env=_env(Path(os.environ["CHATAGENT_DAEMON_DIR"])))
    asks = status(daemon.env)["asks"]
    via = run(*args, env=daemon.env)
    assert status(daemon.env)["asks"] == asks + 1, "the daemon took the ask"
    assert via.returncode == alone.returncode == 1
    assert via.stdout == alone.stdout == ""
    assert via.stderr == alone.stderr and "error: Model 'gemini-2.5-flash' needs a Gemini API key" in via.stderr


@ONE
def test_an_asks_own_settings_are_used_and_others_it_cannot_take_send_it_elsewhere(site: Site, daemon: Daemon) -> None:
    # The offline model reads at least 16,000 tokens a tab whatever --budget says, so the
    # ask raises it: the long page (57k tokens) is read further than that.
    question = "Where is the emergency generator for the east pier kept?"
    usual = run("ask", site.url("long"), "-q", question, "--json", "-v", env=daemon.env)
    more = run("ask", site.url("long"), "-q", question, "--json", "-v", "--budget", "30000", env=daemon.env)
    for proc in (usual, more):
        assert SERVED.format(pid=daemon.pid) in proc.stderr
        assert ending(proc)["pass"] == 1 and "shed 41-C" in ending(proc)["answer"]
    assert ending(more)["usage"]["input_tokens"] > ending(usual)["usage"]["input_tokens"], "--budget reached the daemon"

    other_key = run("ask", site.url("product"), "-q", QUESTION, "--json", "-v",
                    env={**daemon.env, "GOOGLE_API_KEY": "a-key-the-daemon-was-not-started-with"})
    assert other_key.returncode == 0 and "$1,349.00" in ending(other_key)["answer"]
    assert "answered by the chatagent daemon" not in other_key.stderr
    assert "not using the chatagent daemon: it was started with other settings (google_api_key)" in other_key.stderr


@TWO
def test_ctrl_c_in_the_client_cancels_the_ask_in_the_daemon(site: Site, daemon: Daemon) -> None:
    # This client's ask, not one an earlier test left winding down: the Ctrl-C must find the client waiting.
    wait_until(lambda: status(daemon.env)["active"] == 0, "earlier asks to end")
    asked = status(daemon.env)["asks"]
    client = subprocess.Popen(
        command("ask", site.url("/slow"), "-q", "What is this?", "--json", "--timeout", "120"),
        cwd=ROOT, env=daemon.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        wait_until(lambda: (st := status(daemon.env))["asks"] > asked and st["active"] == 1, "the daemon to take the ask")
        client.send_signal(signal.SIGINT)
        _out, err = client.communicate(timeout=60)
    finally:
        client.kill()
    assert client.returncode == 130 and "Interrupted." in err
    wait_until(lambda: status(daemon.env)["active"] == 0, "the ask to be cancelled")
    assert "the client left; cancelling it" in daemon.paths.log.read_text()


def _raw(daemon: Daemon, frame: bytes) -> dict[str, Any] | None:
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(daemon.paths.socket))
        try:
            s.sendall(frame)
            s.shutdown(socket.SHUT_WR)  # nothing more: a head start's daemon waits for the ask until this
        except OSError:
            pass  # the daemon stopped reading a frame over the limit
        try:
            reply = s.makefile("rb").readline()
        except ConnectionResetError:
            reply = b""
    return json.loads(reply) if reply else None


@ONE
def test_the_socket_takes_only_well_formed_requests_from_an_absolute_directory(daemon: Daemon) -> None:
    ask = _ask_frame(daemon, ["https://example.com/"], "What is this?")
    relative = _raw(daemon, json.dumps({**ask, "cwd": "here"}).encode() + b"\n")
    assert relative is not None and relative["type"] == "refused" and "not an absolute path" in relative["reason"]
    unknown = _raw(daemon, json.dumps({**ask, "run": "rm -rf /"}).encode() + b"\n")
    assert unknown is not None and unknown["type"] == "refused"
    blank = _raw(daemon, json.dumps({**ask, "question": "   "}).encode() + b"\n")
    assert blank is not None and blank["type"] == "refused" and "the question is empty" in blank["reason"]
    huge = _raw(daemon, b'{"type": "status", "pad": "' + b"x" * (MAX_REQUEST_BYTES + 10) + b'"}\n')
    assert huge is None or huge["type"] == "refused"
    assert status(daemon.env)["pid"] == daemon.pid, "still serving"


# --- starting and stopping -------------------------------------------------------------------------


def test_the_daemon_setting_starts_one_on_first_use_and_it_stops_when_idle(
    site: Site, tmp_path_factory: pytest.TempPathFactory,
) -> None:
    directory = tmp_path_factory.mktemp("d")
    env = _env(directory, CHATAGENT_DAEMON="true", CHATAGENT_DAEMON_IDLE="2")
    proc = run("ask", site.url("product"), "-q", QUESTION, "--json", "-v", env=env)
    assert proc.returncode == 0 and "$1,349.00" in ending(proc)["answer"]
    found = re.search(r"answered by the chatagent daemon \(pid (\d+)\)", proc.stderr)
    assert found, proc.stderr
    pid = int(found[1])
    wait_until(lambda: not alive(pid), "the idle daemon to stop")
    assert status_command(env)["running"] is False
    assert "no ask for 2 s (daemon_idle)" in (directory / "daemon.log").read_text()
    assert not (directory / "daemon.sock").exists()


def test_stop_stops_it_and_so_does_removing_its_socket(tmp_path_factory: pytest.TempPathFactory) -> None:
    running = start(tmp_path_factory.mktemp("d"))
    launched = browsers(running.pid)
    proc = run("daemon", "stop", env=running.env)
    assert proc.returncode == 0 and f"Stopped the chatagent daemon (pid {running.pid})." in proc.stdout
    assert not alive(running.pid) and not any(alive(p) for p in launched)
    assert status_command(running.env)["running"] is False and not running.paths.socket.exists()
    again = run("daemon", "stop", env=running.env)
    assert again.returncode == 0 and "No chatagent daemon is running." in again.stdout

    second = start(running.paths.dir)
    second.paths.socket.unlink()
    wait_until(lambda: not alive(second.pid), "the daemon to notice its socket is gone")
    assert "was removed" in second.paths.log.read_text()


def test_a_killed_daemons_socket_is_cleaned_up(site: Site, tmp_path_factory: pytest.TempPathFactory) -> None:
    running = start(tmp_path_factory.mktemp("d"))
    family = descendants(running.pid)
    for pid in [running.pid, *family]:
        # A child may end by itself once the daemon is gone (its browser's helpers): killed either way.
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    wait_until(lambda: daemon_pid(running.paths) is None, "the lock to go with the process")
    assert running.paths.socket.exists(), "a killed daemon leaves its socket behind"
    proc = run("ask", site.url("product"), "-q", QUESTION, "--json", "-v", env=running.env)
    assert proc.returncode == 0 and "$1,349.00" in ending(proc)["answer"], "answered in its own process"
    assert "removed the socket of a daemon that is gone" in proc.stderr
    assert not running.paths.socket.exists()
    assert status(running.env)["running"] is False


# --- other users ---------------------------------------------------------------------------------


def test_the_daemons_directory_and_the_folders_made_for_it_are_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default place, run/ beside the settings file: the settings folder
    made for it is 0700 too; a look (`create=False`, as `status` and `stop`
    do) makes nothing."""
    xdg = tmp_path / "xdg"
    for var in ("CHATAGENT_CONFIG", "CHATAGENT_DAEMON_DIR", "XDG_RUNTIME_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    monkeypatch.setattr(sys, "platform", "linux")
    assert DaemonPaths.locate(create=False).dir == xdg / "chatagent" / "run" and not xdg.exists()
    paths = DaemonPaths.locate()
    assert paths.dir == xdg / "chatagent" / "run"
    assert {str(p.relative_to(tmp_path)): stat.S_IMODE(p.stat().st_mode) for p in (xdg, xdg / "chatagent", paths.dir)} == {
        "xdg": 0o700, "xdg/chatagent": 0o700, "xdg/chatagent/run": 0o700}


def test_a_directory_or_socket_open_to_others_is_not_used(site: Site, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    refused = run("daemon", "start", env=_env(shared))
    assert refused.returncode == 1 and "open to other users (mode 755)" in refused.stderr and "chmod 700" in refused.stderr
    ask = run("ask", site.url("product"), "-q", QUESTION, "--json", env=_env(shared, CHATAGENT_DAEMON="1"))
    assert ask.returncode == 0 and "$1,349.00" in ending(ask)["answer"]
    assert "not using the chatagent daemon" in ask.stderr and not (shared / "daemon.sock").exists()

    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    with socket.socket(socket.AF_UNIX) as listening:  # a socket anyone may write to, in our own directory
        listening.bind(str(private / "daemon.sock"))
        listening.listen()
        (private / "daemon.sock").chmod(0o666)
        ask = run("ask", site.url("product"), "-q", QUESTION, "--json", env=_env(private))
        assert ask.returncode == 0 and "$1,349.00" in ending(ask)["answer"]
        assert "not using the chatagent daemon" in ask.stderr and "open to other users" in ask.stderr
        assert run("daemon", "status", env=_env(private)).returncode == 1

    if os.geteuid() == 0:  # only root can give a directory away
        theirs = tmp_path / "theirs"
        theirs.mkdir(mode=0o700)
        os.chown(theirs, 65534, 65534)
        proc = run("daemon", "status", env=_env(theirs))
        assert proc.returncode == 1 and "belongs to another user (uid 65534)" in proc.stderr


def test_the_daemons_socket_is_private_from_the_moment_it_can_be_seen(tmp_path: Path) -> None:
    """Bound under the usual umask, a socket is 0755 until it is narrowed; an
    ask that looked in between refused the daemon (seen once in CI)."""
    paths = DaemonPaths(tmp_path)
    tmp_path.chmod(0o700)
    seen: set[int] = set()
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            with contextlib.suppress(FileNotFoundError):
                seen.add(stat.S_IMODE(os.lstat(paths.socket).st_mode))

    watcher = threading.Thread(target=watch)
    watcher.start()
    old = os.umask(0o022)
    try:
        for _ in range(200):
            _private_socket(paths).close()
        listening = _private_socket(paths)
    finally:
        os.umask(old)
        done.set()
        watcher.join()
    with listening, socket.socket(socket.AF_UNIX) as client:
        client.connect(str(paths.socket))
    assert seen == {0o600} and sorted(p.name for p in tmp_path.iterdir()) == ["daemon.sock"]


# --- the head start ---------------------------------------------------------------------------


@TWO
def test_an_ask_gives_the_daemon_its_pages_before_its_settings_and_pages_no_ask_follows_are_closed(
    site: Site, daemon: Daemon,
) -> None:
    """`ask` sends the ask first (`daemon.early`), so the daemon opens the
    pages while the client loads its settings; what no ask follows is closed."""
    proc = run("ask", site.url("product"), "-q", QUESTION, "--json", "-v", env=daemon.env)
    assert proc.returncode == 0 and "$1,349.00" in ending(proc)["answer"]
    assert "its pages were opened ahead, from its command line" in daemon.paths.log.read_text()

    asks = status(daemon.env)["asks"]
    with socket.socket(socket.AF_UNIX) as s:  # an ask, then nothing: the client went away
        s.connect(str(daemon.paths.socket))
        frame = _ask_frame(daemon, [site.url("product")], QUESTION, inputs="another environment")
        s.sendall(json.dumps(frame).encode() + b"\n")
        assert json.loads(s.makefile("rb").readline())["type"] == "settings_needed"
        time.sleep(0.5)
    wait_until(lambda: "closed the pages opened ahead for an ask that did not follow"
               in daemon.paths.log.read_text(), "the daemon to close what it opened")
    assert status(daemon.env)["asks"] == asks, "an ask whose settings never came is not answered"


def _ask_frame(daemon: Daemon, targets: list[str], question: str, **fields: Any) -> dict[str, Any]:
    """The ask `chatagent ask TARGETS -q QUESTION` sends from ROOT in the daemon's environment."""
    return {"type": "ask", "build": BUILD, "inputs": settings_inputs(daemon.env, str(ROOT)), "cwd": str(ROOT),
            "targets": targets, "question": question, "flags": {}, **fields}


@ONE
def test_an_ask_naming_a_file_that_is_not_there_opens_nothing_and_the_client_answers_it(
    tmp_path: Path, daemon: Daemon,
) -> None:
    """The daemon resolves the ask's paths from the ask's directory; one that
    is not there is the client's to report, in a failed tab's words."""
    closed = daemon.paths.log.read_text().count("closed the pages opened ahead")
    frame = _ask_frame(daemon, ["no-such-file.html"], "What is this?", cwd=str(tmp_path))
    reply = _raw(daemon, json.dumps(frame).encode() + b"\n")
    assert reply is not None and reply["type"] == "settings_needed" and "No such file" in reply["reason"]
    assert daemon.paths.log.read_text().count("closed the pages opened ahead") == closed, "none was opened"

    asks = status(daemon.env)["asks"]
    proc = run("ask", "no-such-file.html", "-q", "What is this?", "--json", env=daemon.env, cwd=tmp_path)
    assert proc.returncode == 1 and ending(proc)["code"] == "no_readable_tabs"
    assert [e["text"] for e in events(proc) if e["type"] == "note"] == ["No such file: 'no-such-file.html'."]
    assert status(daemon.env)["asks"] == asks


@TWO
def test_a_head_start_opened_otherwise_than_the_ask_wants_is_opened_again(site: Site, daemon: Daemon) -> None:
    """The pages open as the ask's flags say; an ask whose environment is not
    the daemon's (its page timeout, here) sends its own settings, and gets its
    pages opened again with them."""
    log = daemon.paths.log.read_text()
    used, needed = log.count("its pages were opened ahead,"), log.count("an ask's settings are needed")
    proc = run("ask", site.url("product"), "-q", QUESTION, "--json", "-v",
               env={**daemon.env, "CHATAGENT_TIMEOUT": "25"})
    assert proc.returncode == 0 and SERVED.format(pid=daemon.pid) in proc.stderr
    assert "$1,349.00" in ending(proc)["answer"]
    log = daemon.paths.log.read_text()
    assert log.count("its pages were opened ahead,") == used
    assert log.count("an ask's settings are needed") == needed + 1
    assert "its pages were opened ahead with another timeout than its settings give; opening them again" in log


@ONE
def test_an_ask_in_the_daemons_environment_is_answered_from_its_command_line_alone(site: Site, daemon: Daemon) -> None:
    """The ask process never loads the CLI or the settings: the daemon loads
    the ask's settings itself, so the answer waits only for the page."""
    needed = daemon.paths.log.read_text().count("an ask's settings are needed")
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "chatagent", "ask", site.url("product"), "-q", QUESTION,
                           "--json", "-v"], cwd=ROOT, env=daemon.env, capture_output=True, text=True, timeout=110)
    assert proc.returncode == 0 and "$1,349.00" in ending(proc)["answer"]
    assert SERVED.format(pid=daemon.pid) in proc.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "chatagent.daemon.protocol" in imported
    assert not imported & {"chatagent.cli", "chatagent.settings", "pydantic_settings"}
    assert daemon.paths.log.read_text().count("an ask's settings are needed") == needed


@TWO
def test_what_the_command_line_gets_wrong_is_said_as_without_a_daemon(site: Site, daemon: Daemon) -> None:
    asks = status(daemon.env)["asks"]
    for argv in (("ask", site.url("product"), "-q", QUESTION, "--budget", "10"),
                 ("ask", site.url("product"), "-q", QUESTION, "--timeout", "never"),
                 ("ask", site.url("product"), "-q", QUESTION, "--model", "no-such-model"),
                 ("ask", site.url("product"), "-q", QUESTION, "--frobnicate"),
                 ("ask", site.url("product"), "-q", " "),
                 ("ask", "-q", QUESTION)):
        alone = run(*argv, env=_env(Path(os.environ["CHATAGENT_DAEMON_DIR"])))
        via = run(*argv, env=daemon.env)
        assert via.returncode == alone.returncode == 2 and via.stderr == alone.stderr != "", argv
    assert status(daemon.env)["asks"] == asks, "usage errors are said by the ask, never taken by the daemon"


def test_the_settings_file_is_read_again_for_each_ask(site: Site, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """`chatagent config set model ...` after the daemon started: the next ask
    uses it, as an ask in its own process would."""
    config = tmp_path / "config.toml"
    running = start(tmp_path_factory.mktemp("d"), CHATAGENT_CONFIG=str(config))
    try:
        # A model it knows, but cannot make without a key (`config set` refuses one it does not know).
        assert run("config", "set", "model", "gemini-2.5-flash", env=running.env).returncode == 0
        proc = run("ask", site.url("product"), "-q", QUESTION, env=running.env)
        assert proc.returncode == 1 and "error: Model 'gemini-2.5-flash' needs a Gemini API key" in proc.stderr
        assert status(running.env)["asks"] == 1, "the daemon took the ask"
        assert "an ask's settings are needed" not in running.paths.log.read_text()
    finally:
        run("daemon", "stop", env=running.env)


def test_a_model_no_provider_serves_in_the_settings_file_is_said_as_without_a_daemon(
    site: Site, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The file edited by hand after the daemon started: the ask is refused
    (2, one line naming the file) as in its own process, and the daemon
    takes nothing; a daemon is not started with such a file either."""
    config = tmp_path / "config.toml"
    running = start(tmp_path_factory.mktemp("d"), CHATAGENT_CONFIG=str(config))
    try:
        config.write_text('model = "no-such-model"\n')
        alone = run("ask", site.url("product"), "-q", QUESTION,
                    env=_env(Path(os.environ["CHATAGENT_DAEMON_DIR"]), CHATAGENT_CONFIG=str(config)))
        via = run("ask", site.url("product"), "-q", QUESTION, env=running.env)
        assert via.returncode == alone.returncode == 2 and via.stderr == alone.stderr, (via.stderr, alone.stderr)
        assert "'no-such-model'" in via.stderr and str(config) in via.stderr and via.stderr.count("\n") == 1
        assert status(running.env)["asks"] == 0, "the daemon took no ask"
    finally:
        run("daemon", "stop", env=running.env)
    refused = run("daemon", "start", env=running.env)
    assert refused.returncode == 2 and refused.stderr == alone.stderr
    assert status(running.env)["running"] is False


def _closed_stdout(*args: str, env: dict[str, str]) -> tuple[int, str]:
    """`chatagent ARGS | true`: the reader of its stdout is gone before the answer comes."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(command(*args), cwd=ROOT, env=env, stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=110)
    finally:
        os.close(write)
    return proc.returncode, proc.stderr


@ONE
def test_a_reader_that_stops_reading_ends_the_ask_quietly_and_it_is_asked_once(site: Site, daemon: Daemon) -> None:
    """`chatagent ask … | head -1`: a closed pipe is not the daemon failing, so the ask is not
    asked again here; and it is no internal error either."""
    alone = _closed_stdout("ask", site.url("product"), "-q", QUESTION,
                           env=_env(Path(os.environ["CHATAGENT_DAEMON_DIR"])))
    before = status(daemon.env)
    via = _closed_stdout("ask", site.url("product"), "-q", QUESTION, env=daemon.env)
    after = status(daemon.env)
    for code, err in (alone, via):
        assert code == 141, err  # 128 + SIGPIPE, as other programs end
        assert "Traceback" not in err and "internal error" not in err and "did not answer properly" not in err, err
    assert after["asks"] == before["asks"] + 1
