"""Settings: flags over the environment over the file over the defaults;
`chatagent config show|set|unset|path`; the file private to the user; the
model is what the settings say (Debian's Chromium key changes nothing); model
errors name the setting that fixes them."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chatagent.cli import main
from chatagent.settings import BROWSER_KEY_FILES, ConfigError, Settings, browser_launcher_keys, describe, set_value
from chatagent.testing.gemini_server import GeminiServer, TextReply
from extension_bridge.spawn import spawn_host

from conftest import PAGES
from warm_start import command
from test_bridge_host import Peer

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "cfg" / "config.toml"
    monkeypatch.setenv("CHATAGENT_CONFIG", str(path))
    for var in ("CHATAGENT_BUDGET", "CHATAGENT_MODEL", "GOOGLE_API_KEY", "GEMINI_API_KEY", "CHATAGENT_OPENAI_BASE_URL",
                "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    yield path


def origin(settings: Settings, key: str, flags: dict[str, Any] | None = None) -> str:
    return next(x.origin.kind for x in describe(settings, flags) if x.key == key)


def test_flags_beat_the_environment_beat_the_file_beat_the_defaults(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert Settings.load().budget == 2000 and origin(Settings.load(), "budget") == "default"
    set_value("budget", "500")
    assert Settings.load().budget == 500 and origin(Settings.load(), "budget") == "file"
    monkeypatch.setenv("CHATAGENT_BUDGET", "700")
    assert Settings.load().budget == 700 and origin(Settings.load(), "budget") == "env"
    assert Settings.load(budget=900).budget == 900 and origin(Settings.load(budget=900), "budget", {"budget": 900}) == "flag"
    assert Settings.load(budget=None).budget == 700, "a flag not given does not override"
    # The provider's usual variable sets its setting too.
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1234/v1")
    assert Settings.load().openai_base_url == "http://127.0.0.1:1234/v1"


def test_bad_values_are_refused_naming_the_setting_and_where_it_came_from(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match="budget"):
        set_value("budget", "3")
    assert not config.exists(), "a refused value is not written"
    monkeypatch.setenv("CHATAGENT_TIMEOUT", "soon")
    with pytest.raises(ConfigError) as exc:
        Settings.load()
    assert "timeout" in exc.value.message and "CHATAGENT_TIMEOUT" in exc.value.message
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("model = \n")
    monkeypatch.delenv("CHATAGENT_TIMEOUT")
    with pytest.raises(ConfigError) as exc:
        Settings.load()
    assert str(config) in exc.value.message


def test_removing_a_setting_the_file_does_not_have_writes_nothing(config: Path) -> None:
    """As `config unset` and the side panel's cleared fields remove settings."""
    set_value("model", None)
    assert not config.exists() and not config.parent.exists()
    set_value("budget", "500")
    written = config.read_text(), config.stat().st_mtime_ns
    set_value("model", None)
    assert (config.read_text(), config.stat().st_mtime_ns) == written


def run_cli(*args: str, env: dict[str, str], input: str | None = None) -> subprocess.CompletedProcess[str]:
    """`chatagent ARGS` in a process of its own, as a user runs it."""
    return subprocess.run(
        command(*args), capture_output=True, text=True, timeout=120, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **env}, input=input,
    )


CLI = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> CLI:
    """`cli(*args, env=...)`: as `run_cli`, but the command's entry (`chatagent.cli.main`)
    runs in this process, its environment set for the call: for what the settings
    resolve to and what a command says, without starting a Python each time.
    What needs the process itself (an ask's start, its exit) keeps `run_cli`."""

    def _run(*args: str, env: dict[str, str], input: str | None = None) -> subprocess.CompletedProcess[str]:
        capsys.readouterr()
        with monkeypatch.context() as m:
            m.chdir(ROOT)
            m.setenv("COLUMNS", "200")
            for key, value in env.items():
                m.setenv(key, value)
            m.setattr(sys, "stdin", io.StringIO(input or ""))
            try:
                status = main(list(args))
            except SystemExit as exc:  # argparse's usage errors
                status = exc.code if isinstance(exc.code, int) else 1
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["chatagent", *args], status, out, err)

    return _run


def test_config_set_show_unset_and_path_in_the_platform_config_dir(tmp_path: Path, cli: CLI) -> None:
    run_cli = cli
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "CHATAGENT_CONFIG": "", "GOOGLE_API_KEY": "", "GEMINI_API_KEY": ""}
    path = run_cli("config", "path", env=env)
    assert path.returncode == 0 and path.stdout.strip() == str(tmp_path / "xdg" / "chatagent" / "config.toml")
    file = Path(path.stdout.strip())

    secret = "AIza-my-own-secret-key-1234"
    for key, value in (("model", "gemini-2.5-flash"), ("google_api_key", secret), ("budget", "1500")):
        done = run_cli("config", "set", key, value, env=env)
        assert done.returncode == 0, done.stderr
        assert secret not in done.stdout
    assert stat.S_IMODE(file.stat().st_mode) == 0o600, "the file holds keys: only its owner may read it"
    assert stat.S_IMODE(file.parent.stat().st_mode) == 0o700

    shown = run_cli("config", "show", "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    rows = json.loads(shown.stdout)
    assert rows["model"] == {"value": "gemini-2.5-flash", "source": "file", "from": str(file)}
    assert rows["budget"]["value"] == "1500"
    assert rows["google_api_key"]["source"] == "file" and secret not in shown.stdout and "1234" in rows["google_api_key"]["value"]
    assert rows["deadline"] == {"value": "180", "source": "default", "from": ""}

    table = run_cli("config", "show", env={**env, "CHATAGENT_BUDGET": "800"})
    assert table.returncode == 0 and secret not in table.stdout
    line = next(ln for ln in table.stdout.splitlines() if ln.startswith("budget"))
    assert "800" in line and "environment CHATAGENT_BUDGET" in line

    assert run_cli("config", "unset", "budget", env=env).returncode == 0
    assert json.loads(run_cli("config", "show", "--json", env=env).stdout)["budget"]["source"] == "default"
    assert stat.S_IMODE(file.stat().st_mode) == 0o600

    bad = run_cli("config", "set", "budget", "ten", env=env)
    assert bad.returncode == 2 and "budget" in bad.stderr, "a value the setting cannot take is a usage error"
    unknown = run_cli("config", "set", "colour", "blue", env=env)
    assert unknown.returncode == 2 and "model" in unknown.stderr, "the usage error lists the settings"


def _modes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): stat.S_IMODE(p.stat().st_mode) for p in [root, *root.rglob("*")]}


def test_commands_that_only_look_create_nothing_and_the_settings_folder_is_private(tmp_path: Path, cli: CLI) -> None:
    """No settings file yet, the default places (no XDG_RUNTIME_DIR: the
    daemon's directory is run/ beside the settings file)."""
    run_cli = cli
    xdg = tmp_path / "xdg"
    env = {"XDG_CONFIG_HOME": str(xdg), "CHATAGENT_CONFIG": "", "CHATAGENT_DAEMON_DIR": "", "XDG_RUNTIME_DIR": ""}
    folder = xdg / "chatagent"
    for args, status in ((("daemon", "status"), 3), (("daemon", "stop"), 0), (("config", "show"), 0),
                         (("config", "path"), 0), (("config", "unset", "model"), 0)):
        proc = run_cli(*args, env=env)
        assert proc.returncode == status, (args, proc.stderr)
        assert not xdg.exists(), f"`chatagent {' '.join(args)}` created {_modes(xdg)}"
    assert f"model is not set in {folder / 'config.toml'}: nothing to remove" in proc.stdout
    assert "Removed" not in proc.stdout

    assert run_cli("config", "set", "budget", "1500", env=env).returncode == 0
    assert _modes(xdg) == {".": 0o700, "chatagent": 0o700, "chatagent/config.toml": 0o600}
    # Left open by an older chatagent (or a `daemon status` that made it 0755): closed when the file is written.
    folder.chmod(0o755)
    assert run_cli("config", "set", "budget", "1600", env=env).returncode == 0
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    folder.chmod(0o755)
    assert run_cli("config", "unset", "budget", env=env).returncode == 0
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    before = (folder / "config.toml").stat().st_mtime_ns
    again = run_cli("config", "unset", "budget", env=env)
    assert again.returncode == 0 and "budget is not set" in again.stdout
    assert (folder / "config.toml").stat().st_mtime_ns == before, "nothing to remove: nothing written"

    # A folder CHATAGENT_CONFIG names is the user's: made 0700 if missing, else left as it is.
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o755)
    mine.chmod(0o755)
    assert run_cli("config", "set", "budget", "1500", env={**env, "CHATAGENT_CONFIG": str(mine / "c.toml")}).returncode == 0
    assert stat.S_IMODE(mine.stat().st_mode) == 0o755
    made = tmp_path / "made" / "deeper" / "c.toml"
    assert run_cli("config", "set", "budget", "1500", env={**env, "CHATAGENT_CONFIG": str(made)}).returncode == 0
    assert _modes(tmp_path / "made") == {".": 0o700, "deeper": 0o700, "deeper/c.toml": 0o600}


def test_config_set_refuses_a_model_no_provider_serves_as_an_ask_would(tmp_path: Path, cli: CLI) -> None:
    run_cli = cli
    from chatagent.errors import ModelConfigError
    from chatagent.models import provider_for

    file = tmp_path / "config.toml"
    env = {"CHATAGENT_CONFIG": str(file)}
    with pytest.raises(ConfigError) as refused:
        set_value("model", "gpt-4")
    with pytest.raises(ModelConfigError) as unknown:
        provider_for("gpt-4")
    assert refused.value.message == unknown.value.message != ""
    assert not file.exists()
    bad = run_cli("config", "set", "model", "gpt-4", env=env)
    assert bad.returncode == 2, "a value the setting cannot take is a usage error"
    assert bad.stderr == f"error: {unknown.value.message}\n" and bad.stdout == ""
    assert not file.exists(), "a refused value is not written"
    for name in ("extractive", "gemini-2.5-flash", "openai:llama3.1"):
        assert run_cli("config", "set", "model", name, env=env).returncode == 0
    for prefix_only in ("gpt-4", "openai:", "openai: ", "gemini-"):  # a provider's prefix alone names no model
        assert run_cli("config", "set", "model", prefix_only, env=env).returncode == 2, prefix_only
    assert 'model = "openai:llama3.1"' in file.read_text(), "the earlier value stays"


@pytest.mark.e2e
def test_a_flag_given_on_the_command_line_wins_over_the_file(tmp_path: Path) -> None:
    env = {"CHATAGENT_CONFIG": str(tmp_path / "config.toml")}
    assert run_cli("config", "set", "budget", "10", env=env).returncode == 2  # below the minimum
    (tmp_path / "config.toml").write_text('model = "no-such-model"\n')  # edited by hand: `config set` refuses it
    # The file names an unknown model, the flag a good one: the flag's is used.
    done = run_cli("ask", str(PAGES / "product.html"), "-q", "How much does it cost?", "--model", "extractive", env=env)
    assert done.returncode == 0, done.stderr
    failed = run_cli("ask", str(PAGES / "product.html"), "-q", "How much does it cost?", env=env)
    assert failed.returncode == 2 and "no-such-model" in failed.stderr and "config set model" in failed.stderr


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.stdout == "" and proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1, proc.stderr
    return proc.stderr


@pytest.mark.e2e
def test_a_model_no_provider_serves_set_by_a_variable_or_the_file_is_refused_at_start_as_the_flag_is(
    tmp_path: Path, cli: CLI,
) -> None:
    """As `--model NAME` is refused (2, one line), so is the same name from
    CHATAGENT_MODEL or the settings file, by every command a model answers
    in, before a browser starts: the line says where the name came from and
    what changes it there. Commands that need no model still work."""
    file = tmp_path / "config.toml"
    env = {"CHATAGENT_CONFIG": str(file), "CHATAGENT_DAEMON_DIR": str(tmp_path / "daemon")}
    page = str(PAGES / "product.html")
    flag = run_cli("ask", page, "-q", "How much does it cost?", "--model", "no-such-model", env=env)
    assert flag.returncode == 2 and "Unknown model 'no-such-model'" in flag.stderr

    # `ask` as a user runs it (its command line is read for a daemon first); the others in this process.
    commands = (["ask", page, "-q", "How much does it cost?"], ["chat", page], ["mcp"], ["daemon", "start"])
    command = {"ask": run_cli, "chat": cli, "mcp": cli, "daemon": cli}
    for argv in commands:
        proc = command[argv[0]](*argv, env={**env, "CHATAGENT_MODEL": "no-such-model"}, input="How much does it cost?\n")
        said = _one_error_line(proc)
        assert proc.returncode == 2, (argv, said)
        assert "'no-such-model'" in said and "CHATAGENT_MODEL" in said and "'extractive'" in said, said
        assert "config set" not in said, "the variable comes before the file: `config set` would not fix it"

    file.write_text('model = "no-such-model"\n')  # edited by hand: `config set` refuses it
    for argv in commands:
        proc = command[argv[0]](*argv, env=env, input="How much does it cost?\n")
        said = _one_error_line(proc)
        assert proc.returncode == 2, (argv, said)
        assert "'no-such-model'" in said and str(file) in said, said
        assert "`chatagent config set model NAME`" in said and "`chatagent config unset model`" in said, said
    assert not (tmp_path / "daemon" / "daemon.sock").exists(), "no daemon was started"

    # What needs no model works, and so does what fixes the setting.
    assert cli("context", page, env=env).returncode == 0
    assert cli("daemon", "status", env=env).returncode == 3
    assert json.loads(cli("config", "show", "--json", env=env).stdout)["model"]["value"] == "no-such-model"
    assert cli("config", "unset", "model", env=env).returncode == 0
    done = run_cli("ask", page, "-q", "How much does it cost?", env=env)
    assert done.returncode == 0 and "$1,349.00" in done.stdout, done.stderr


@pytest.mark.e2e
def test_a_value_a_setting_cannot_take_is_a_usage_error_wherever_it_came_from(tmp_path: Path, cli: CLI) -> None:
    """As `--budget 10` is (2), so is CHATAGENT_BUDGET=10 or `budget = 10` in
    the file: one line naming the setting and where it came from. A file that
    cannot be read at all is a failure (1)."""
    file = tmp_path / "config.toml"
    env = {"CHATAGENT_CONFIG": str(file)}
    ask = ("ask", str(PAGES / "product.html"), "-q", "How much does it cost?")
    assert run_cli(*ask, "--budget", "10", env=env).returncode == 2
    from_env = run_cli(*ask, env={**env, "CHATAGENT_BUDGET": "10"})
    assert from_env.returncode == 2 and "budget (environment CHATAGENT_BUDGET)" in _one_error_line(from_env)
    file.write_text("budget = 10\n")
    for argv in (ask, ("context", str(PAGES / "product.html")), ("config", "show")):
        proc = (run_cli if argv is ask else cli)(*argv, env=env)
        assert proc.returncode == 2 and f"budget (file {file})" in _one_error_line(proc), argv
    file.write_text("budget = \n")
    unreadable = run_cli(*ask, env=env)
    assert unreadable.returncode == 1 and "cannot be read" in _one_error_line(unreadable)


# --- the model is what the settings say ------------------------------------------------


def debian_chromium_env() -> dict[str, str]:
    """What Debian's /usr/bin/chromium exports into everything the browser starts."""
    for path in BROWSER_KEY_FILES:
        if path.exists():
            return dict(re.findall(r'^\s*export\s+(\w+)="([^"]*)"', path.read_text(), re.M))
    pytest.skip("no Debian/Ubuntu Chromium launcher key file on this machine")


@contextlib.asynccontextmanager
async def host(env: dict[str, str]) -> AsyncIterator[Peer]:
    async with spawn_host(env, host=command(module="extension_bridge")) as proc:
        yield Peer(proc)


def ask(rid: str, question: str) -> dict[str, Any]:
    tab = {"tabId": 7, "url": "https://shop.example/aurora", "title": "Aurora X14 Pro",
           "html": (PAGES / "product.html").read_text()}
    return {"type": "ask", "id": rid, "question": question, "tabs": [tab]}


@pytest.mark.asyncio(loop_scope="session")
@pytest.mark.e2e
async def test_a_host_started_by_debians_chromium_answers_with_the_offline_model(config: Path) -> None:
    env = debian_chromium_env()
    assert env.get("GOOGLE_API_KEY") in browser_launcher_keys()
    async with host({**env, "CHATAGENT_CONFIG": str(config)}) as peer:
        await peer.send(ask("a", "How much does the Aurora X14 Pro cost?"))
        events = await peer.events_until_end("a")
    end = events[-1]
    assert end["type"] == "done", end
    assert "$1,349.00" in end["answer"] and end["pass"] == 1


@pytest.mark.asyncio(loop_scope="session")
@pytest.mark.e2e
async def test_debians_chromium_key_never_replaces_the_users_own(config: Path, gemini: GeminiServer) -> None:
    """Gemini configured in the file with the user's key: the host, started with
    Chromium's environment, sends the user's key, not Chromium's."""
    env = debian_chromium_env()
    # The endpoint first: a key is saved for the endpoint in effect, and goes to no other.
    for key, value in (("model", "gemini-2.5-flash"), ("gemini_base_url", gemini.url),
                       ("google_api_key", "users-own-key")):
        set_value(key, value)
    gemini.api_key = "users-own-key"
    gemini.enqueue(TextReply(text="It costs $1,349.00 [Tab 1]."))
    async with host({**env, "CHATAGENT_CONFIG": str(config)}) as peer:
        await peer.send(ask("a", "How much does it cost?"))
        end = (await peer.events_until_end("a"))[-1]
    assert end["type"] == "done" and "$1,349.00" in end["answer"], end


def test_the_environment_key_alone_does_not_choose_the_model(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "someone-elses-key")
    assert Settings.load().model == "extractive"


# --- errors name what fixes them ----------------------------------------------------------


@pytest.mark.e2e
def test_an_openai_compatible_server_that_is_not_running_is_named_with_its_url(
    config: Path, closed_port_url: str
) -> None:
    base = closed_port_url.rstrip("/") + "/v1"
    done = run_cli("ask", str(PAGES / "product.html"), "-q", "How much does it cost?", "--model", "openai:llama3",
                   env={"CHATAGENT_OPENAI_BASE_URL": base, "CHATAGENT_CONFIG": str(config)})
    assert done.returncode == 1
    assert base in done.stderr, done.stderr
    assert "openai_base_url" in done.stderr and "CHATAGENT_OPENAI_BASE_URL" in done.stderr


@pytest.mark.asyncio(loop_scope="session")
async def test_a_bad_gemini_key_is_model_auth_naming_google_api_key(gemini: GeminiServer) -> None:
    from chatagent.agent import ChatAgent
    from chatagent.browser import StaticTab
    from chatagent.models import load_model

    gemini.api_key = "the-right-key"
    model = load_model("gemini-2.5-flash", Settings(google_api_key="a-wrong-key", gemini_base_url=gemini.url))
    tab = StaticTab("1", "https://shop.example/a", "<html><body><p>It costs $5.</p></body></html>", title="A")
    events = [e async for e in ChatAgent(model, [tab]).ask("How much?")]
    end = events[-1]
    assert end.type == "error" and end.code == "model_auth", end
    assert "GOOGLE_API_KEY" in end.message and "config set google_api_key" in end.message
    assert len(gemini.generate_requests) <= 1, "a refused key is not retried"


def test_an_openai_compatible_model_is_made_for_the_server_the_settings_name() -> None:
    from chatagent.models import load_model

    model = load_model("openai:llama3.1", Settings(openai_base_url="http://127.0.0.1:11434/v1"))
    assert model.name == "openai:llama3.1" and model.endpoint == "http://127.0.0.1:11434/v1"
    chat = model.chat
    assert getattr(chat, "model_name") == "llama3.1"
    assert getattr(chat, "openai_api_base") == "http://127.0.0.1:11434/v1"
