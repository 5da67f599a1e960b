"""Host manifest install/uninstall/status, and the extension ID.

The CLI tests run the real `chatagent bridge` in a subprocess with HOME and
XDG_CONFIG_HOME in a temporary folder and PATH holding only stub browsers, so
detection, printing and folder clean-up are what a user gets."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from chatagent.cli import build_parser
from extension_bridge import install as inst
from extension_bridge.errors import InstallError
from extension_bridge.install import (
    CREATED_NAME,
    EXTENSION_DIR,
    EXTENSION_ID,
    HOST_NAME,
    INSTALL_COMMAND,
    extension_id_from_key,
    find_browsers,
    hosts_dir,
    install,
    manifest_for,
    status,
    uninstall,
    write_host_manifest,
)

ROOT = Path(__file__).resolve().parent.parent
CHATAGENT = Path(sys.executable).parent / "chatagent"
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PATH and ~/.config detection is Linux's")


def test_extension_id_matches_committed_key() -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key_b64 = json.loads((EXTENSION_DIR / "manifest.json").read_text())["key"]
    der = base64.b64decode(key_b64)
    pub = serialization.load_der_public_key(der)
    assert isinstance(pub, rsa.RSAPublicKey) and pub.key_size == 2048
    # Independent re-derivation of Chrome's rule.
    expected = hashlib.sha256(der).hexdigest()[:32].translate(str.maketrans("0123456789abcdef", "abcdefghijklmnop"))
    assert EXTENSION_ID == expected == extension_id_from_key(key_b64)
    assert len(EXTENSION_ID) == 32 and set(EXTENSION_ID) <= set("abcdefghijklmnop")
    assert EXTENSION_ID == "mejinmnindgennjmomelofmhdjeedkml"  # pinned: the key must not change silently


def test_no_private_key_in_extension_dir() -> None:
    for path in EXTENSION_DIR.rglob("*"):
        if path.is_file():
            assert b"PRIVATE KEY" not in path.read_bytes(), path
            assert path.suffix not in {".pem", ".key", ".crx"}, path


def test_manifest_for_chromium_family_exact() -> None:
    for browser in ("chrome", "chromium", "edge", "brave"):
        assert manifest_for(browser, "/opt/x/launcher.sh") == {
            "name": "com.chatagent.bridge",
            "description": inst.HOST_DESCRIPTION,
            "path": "/opt/x/launcher.sh",
            "type": "stdio",
            "allowed_origins": [f"chrome-extension://{EXTENSION_ID}/"],
        }


def test_firefox_is_refused_everywhere(tmp_path: Path) -> None:
    manifest = json.loads((EXTENSION_DIR / "manifest.json").read_text())
    assert "sidePanel" in manifest["permissions"] and "browser_specific_settings" not in manifest  # the reasons given
    for attempt in (
        lambda: manifest_for("firefox", "/opt/x/launcher.sh"),  # type: ignore[arg-type]
        lambda: install("firefox", target_dir=tmp_path),  # type: ignore[arg-type]
        lambda: write_host_manifest(tmp_path, "firefox"),  # type: ignore[arg-type]
    ):
        with pytest.raises(InstallError, match="Firefox is not supported yet.*sidePanel.*Gecko"):
            attempt()
    assert list(tmp_path.iterdir()) == []


def test_manifest_requires_absolute_launcher() -> None:
    with pytest.raises(InstallError, match="absolute"):
        manifest_for("chrome", "relative/launcher.sh")


def test_install_into_dir_writes_manifest_and_executable_launcher(tmp_path: Path) -> None:
    target = tmp_path / "NativeMessagingHosts"
    res = install("chromium", target_dir=target)
    manifest_path = target / f"{HOST_NAME}.json"
    launcher = target / f"{HOST_NAME}.sh"
    assert res.manifest_path == str(manifest_path) and res.launcher_path == str(launcher)
    assert res.extension_id == EXTENSION_ID
    assert json.loads(manifest_path.read_text()) == manifest_for("chromium", launcher)
    mode = launcher.stat().st_mode
    assert mode & stat.S_IXUSR and mode & stat.S_IXOTH
    text = launcher.read_text()
    assert text.startswith("#!/bin/sh\n")
    assert f'exec {sys.executable} -m extension_bridge "$@"' in text
    assert not list(target.glob("*.tmp"))
    # The launcher starts *this* interpreter with the package importable.
    probe = text.replace("-m extension_bridge", "-c 'import extension_bridge, sys; print(sys.argv[1:])'")
    out = subprocess.run(
        ["sh", "-c", probe, "launcher", "chrome-extension://x/"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": ""},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['chrome-extension://x/']"


def test_install_twice_overwrites_and_uninstall_removes(tmp_path: Path) -> None:
    install("chrome", target_dir=tmp_path)
    install("chrome", target_dir=tmp_path)
    # The folder existed: nothing is recorded as created, so nothing but our two files.
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{HOST_NAME}.json", f"{HOST_NAME}.sh"]
    [removed] = uninstall(["chrome"], target_dir=tmp_path)
    assert sorted(Path(p).name for p in removed.files) == [f"{HOST_NAME}.json", f"{HOST_NAME}.sh"]
    assert removed.folders == []
    assert tmp_path.is_dir() and list(tmp_path.iterdir()) == []
    [again] = uninstall(["chrome"], target_dir=tmp_path)
    assert again.files == [] and again.folders == []


def test_uninstall_removes_only_the_folders_install_created(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "NativeMessagingHosts"
    install("chromium", target_dir=target)
    record = json.loads((target / CREATED_NAME).read_text())
    assert record["created_folders"] == [str(tmp_path / "a"), str(tmp_path / "a/b"), str(target)]
    install("chromium", target_dir=target)  # a re-install keeps the record
    assert (target / CREATED_NAME).exists()
    (tmp_path / "a" / "b" / "Local State").write_text("{}")  # the browser ran meanwhile
    [removed] = uninstall(["chromium"], target_dir=target)
    assert removed.folders == [str(target)]
    assert str(target / CREATED_NAME) in removed.files
    assert sorted(p.name for p in (tmp_path / "a" / "b").iterdir()) == ["Local State"]


def test_a_folder_two_installs_share_goes_when_both_are_uninstalled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("~/.config is Linux's")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    install("chromium")  # creates ~/.config, so only chromium's record lists it
    install("brave")
    chromium, brave = uninstall(["chromium", "brave"])
    assert str(tmp_path / ".config") in chromium.folders
    assert str(tmp_path / ".config" / "BraveSoftware") in brave.folders
    assert list(tmp_path.iterdir()) == []


def test_a_record_cannot_remove_folders_outside_the_install(tmp_path: Path) -> None:
    target = tmp_path / "hosts"
    other = tmp_path / "other"
    other.mkdir()
    install("chromium", target_dir=target)
    (target / CREATED_NAME).write_text(json.dumps({"created_folders": [str(other), str(target)]}))
    [removed] = uninstall(["chromium"], target_dir=target)
    assert removed.folders == [str(target)] and other.is_dir()


def test_write_host_manifest_for_a_test_profile(tmp_path: Path) -> None:
    profile = tmp_path / "profile"
    res = write_host_manifest(profile / "NativeMessagingHosts")
    assert Path(res.manifest_path).parent == profile / "NativeMessagingHosts"
    assert json.loads(Path(res.manifest_path).read_text())["allowed_origins"] == [f"chrome-extension://{EXTENSION_ID}/"]


def test_user_paths_linux_and_macos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path
    assert hosts_dir("chrome", platform="linux", home=home) == home / ".config/google-chrome/NativeMessagingHosts"
    assert hosts_dir("chromium", platform="linux", home=home) == home / ".config/chromium/NativeMessagingHosts"
    assert hosts_dir("edge", platform="linux", home=home) == home / ".config/microsoft-edge/NativeMessagingHosts"
    assert hosts_dir("brave", platform="linux", home=home) == (
        home / ".config/BraveSoftware/Brave-Browser/NativeMessagingHosts"
    )
    assert hosts_dir("firefox", platform="linux", home=home) == home / ".mozilla/native-messaging-hosts"
    assert hosts_dir("chrome", "system", platform="linux") == Path("/etc/opt/chrome/native-messaging-hosts")
    sup = home / "Library/Application Support"
    assert hosts_dir("chrome", platform="darwin", home=home) == sup / "Google/Chrome/NativeMessagingHosts"
    assert hosts_dir("firefox", platform="darwin", home=home) == sup / "Mozilla/NativeMessagingHosts"
    assert hosts_dir("chrome", "system", platform="darwin") == Path("/Library/Google/Chrome/NativeMessagingHosts")
    with pytest.raises(InstallError, match="not supported"):
        hosts_dir("chrome", platform="win32", home=home)
    with pytest.raises(InstallError, match="Unknown browser"):
        hosts_dir("safari", platform="linux", home=home)  # type: ignore[arg-type]
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert hosts_dir("chromium", platform="linux") == tmp_path / "xdg/chromium/NativeMessagingHosts"


def test_default_install_and_status_use_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if sys.platform not in ("linux", "darwin"):
        pytest.skip("Linux/macOS only")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    before = {(s.browser, s.scope): s for s in status(scopes=("user",))}
    assert not any(s.installed for s in before.values())
    res = install("brave")
    assert res.scope == "user" and res.manifest_path.startswith(str(tmp_path))
    after = {s.browser: s for s in status(scopes=("user",))}
    assert after["brave"].installed and after["brave"].ok, after["brave"].problems
    assert not after["chrome"].installed
    assert "installed" in after["brave"].describe()
    uninstall(["brave"])
    assert not any(s.installed for s in status(scopes=("user",)))


def test_status_reports_broken_installs(tmp_path: Path) -> None:
    install("chrome", target_dir=tmp_path)
    ok = inst.check_dir("chrome", "custom", tmp_path)
    assert ok.ok and ok.problems == []
    manifest = tmp_path / f"{HOST_NAME}.json"
    data = json.loads(manifest.read_text())
    data["allowed_origins"] = ["chrome-extension://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/"]
    manifest.write_text(json.dumps(data))
    os.chmod(tmp_path / f"{HOST_NAME}.sh", 0o644)
    bad = inst.check_dir("chrome", "custom", tmp_path)
    assert not bad.ok
    assert any("allowed_origins" in p for p in bad.problems)
    assert any("not executable" in p for p in bad.problems)
    assert "BROKEN" in bad.describe()
    assert any(f"{INSTALL_COMMAND} chrome" in p for p in bad.problems)


def test_install_permission_error_is_actionable(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root can write anywhere")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    with pytest.raises(InstallError, match="permission"):
        install("chrome", target_dir=ro)


@pytest.mark.skipif(Path("/Applications").exists(), reason="a real macOS: its own apps would be found too")
def test_find_browsers_on_macos_apps_and_settings(tmp_path: Path) -> None:
    (tmp_path / "Applications" / "Chromium.app").mkdir(parents=True)
    support = tmp_path / "Library" / "Application Support"
    (support / "BraveSoftware" / "Brave-Browser" / "Default").mkdir(parents=True)
    # Only a NativeMessagingHosts folder (maybe our own): not a sign of Edge.
    (support / "Microsoft Edge" / "NativeMessagingHosts").mkdir(parents=True)
    found = find_browsers(platform="darwin", home=tmp_path)
    assert found == {
        "chromium": tmp_path / "Applications" / "Chromium.app",
        "brave": support / "BraveSoftware" / "Brave-Browser",
    }


# ---------------------------------------------------------------- the real CLI


class Machine:
    """A user's machine for the CLI: HOME, XDG_CONFIG_HOME and a PATH of stub
    browser programs, all under a temporary folder."""

    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.xdg = root / "xdg"
        self.bin = root / "bin"
        for d in (self.home, self.xdg, self.bin):
            d.mkdir()

    def add_program(self, name: str) -> Path:
        path = self.bin / name
        path.write_text("#!/bin/sh\nexit 0\n")
        path.chmod(0o755)
        return path

    def hosts(self, browser: str) -> Path:
        """Where the browser reads host manifests (Chromium's rule: its settings folder)."""
        settings = {"chrome": "google-chrome", "chromium": "chromium", "edge": "microsoft-edge",
                    "brave": "BraveSoftware/Brave-Browser"}
        return self.xdg / settings[browser] / "NativeMessagingHosts"

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.xdg),
            "PATH": str(self.bin),
            "COLUMNS": "40",  # narrower than every path printed: none may wrap
        }
        return subprocess.run([str(CHATAGENT), "bridge", *args], capture_output=True, text=True, env=env)


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    if not CHATAGENT.exists():
        pytest.skip(f"{CHATAGENT} is not installed (pip install -e .)")
    return Machine(tmp_path)


def _lines(text: str) -> list[str]:
    """For lines that hold a path: they must come out whole, whatever the width."""
    return [line.strip() for line in text.splitlines()]


def _prose(text: str) -> str:
    """Prose is word-wrapped to the width: compare it with the wrapping undone."""
    return " ".join(text.split())


@linux_only
@pytest.mark.e2e
def test_cli_install_finds_browsers_and_prints_whole_paths(machine: Machine) -> None:
    chromium = machine.add_program("chromium")
    brave = machine.add_program("brave-browser")
    machine.add_program("firefox")  # present, but never chosen
    (machine.xdg / "google-chrome").mkdir()  # Chrome has run for this user
    (machine.xdg / "google-chrome" / "Local State").write_text("{}")
    machine.hosts("edge").mkdir(parents=True)  # only a hosts folder: not a sign of Edge

    run = machine.run("install")
    assert run.returncode == 0, run.stderr
    lines = _lines(run.stdout)
    for browser in ("chrome", "chromium", "brave"):
        manifest = machine.hosts(browser) / f"{HOST_NAME}.json"
        assert len(str(manifest)) > 40
        assert str(manifest) in lines, run.stdout  # whole, on a line of its own
        assert inst.check_dir(browser, "user", machine.hosts(browser)).ok
    assert f"Installed the chatagent host for chromium (found {chromium}):" in lines
    assert f"Installed the chatagent host for brave (found {brave}):" in lines
    assert f"Installed the chatagent host for chrome (found {machine.xdg / 'google-chrome'}):" in lines
    assert not (machine.hosts("edge") / f"{HOST_NAME}.json").exists()
    assert not (machine.home / ".mozilla").exists()
    assert str(EXTENSION_DIR) in lines
    assert "click Load unpacked and choose this folder:" in _prose(run.stdout)
    assert "chromium: chrome://extensions" in _prose(run.stdout) and "brave: brave://extensions" in _prose(run.stdout)


@linux_only
@pytest.mark.e2e
def test_cli_install_names_several_browsers_positional_and_flag(machine: Machine) -> None:
    run = machine.run("install", "edge", "brave", "--browser", "chrome", "--browser", "edge")
    assert run.returncode == 0, run.stderr
    installed = [b for b in inst.BROWSERS if (machine.hosts(b) / f"{HOST_NAME}.json").exists()]
    assert installed == ["chrome", "edge", "brave"]
    assert run.stdout.count("Installed the chatagent host") == 3  # edge once
    assert "Installed the chatagent host for edge (not found on this machine):" in _lines(run.stdout)


@linux_only
@pytest.mark.e2e
def test_cli_install_with_no_browser_found_names_the_choices(machine: Machine) -> None:
    machine.add_program("firefox")
    run = machine.run("install")
    assert run.returncode == 1
    assert "No supported browser found" in run.stderr
    for browser in inst.BROWSERS:
        assert browser in run.stderr
    assert f"{INSTALL_COMMAND} chromium" in _lines(run.stderr)
    assert list(machine.xdg.iterdir()) == [] and list(machine.home.iterdir()) == []


@linux_only
@pytest.mark.parametrize("args", [("firefox",), ("--browser", "firefox"), ("chromium", "firefox")])
@pytest.mark.e2e
def test_cli_refuses_firefox(machine: Machine, args: tuple[str, ...]) -> None:
    machine.add_program("firefox")
    machine.add_program("chromium")
    run = machine.run("install", *args)
    assert run.returncode == 2
    assert "Firefox is not supported yet" in run.stderr and "sidePanel" in run.stderr
    assert run.stdout == ""
    assert list(machine.xdg.iterdir()) == [] and list(machine.home.iterdir()) == []


@linux_only
@pytest.mark.e2e
def test_cli_uninstall_reports_files_and_only_its_own_folders(machine: Machine) -> None:
    chromium_settings = machine.xdg / "chromium"
    chromium_settings.mkdir()
    (chromium_settings / "Local State").write_text("{}")  # the browser's folder
    machine.hosts("edge").mkdir(parents=True)  # the user's folder, empty
    assert machine.run("install", "chromium", "edge", "brave", "chrome").returncode == 0
    (machine.xdg / "google-chrome" / "Local State").write_text("{}")  # Chrome ran after the install

    run = machine.run("uninstall")
    assert run.returncode == 0, run.stderr
    lines = _lines(run.stdout)
    for browser in ("chrome", "chromium", "edge", "brave"):
        assert f"Removed the chatagent host for {browser}:" in _prose(run.stdout)
        for name in (f"{HOST_NAME}.json", f"{HOST_NAME}.sh"):
            assert str(machine.hosts(browser) / name) in lines
    brave = [machine.xdg / "BraveSoftware", machine.xdg / "BraveSoftware/Brave-Browser", machine.hosts("brave")]
    for folder in (*brave, machine.hosts("chromium"), machine.hosts("chrome")):
        assert f"{folder}/ (a folder the install created)" in lines
        assert not folder.exists()
    assert run.stdout.count("a folder the install created") == 5
    # Kept: folders the browser or the user owns, even the empty one.
    assert (chromium_settings / "Local State").exists()
    assert (machine.xdg / "google-chrome" / "Local State").exists()
    assert machine.hosts("edge").is_dir() and list(machine.hosts("edge").iterdir()) == []

    again = machine.run("uninstall")
    assert again.returncode == 0
    assert _prose(again.stdout) == "Nothing to remove: the chatagent host is not installed in any browser (for this user)."
    named = machine.run("uninstall", "chrome")
    assert named.returncode == 0
    assert _lines(named.stdout) == [f"Nothing was installed for chrome ({machine.hosts('chrome')})."]


@linux_only
@pytest.mark.e2e
def test_cli_status_and_uninstall_of_an_old_firefox_manifest(machine: Machine) -> None:
    assert machine.run("install", "chromium").returncode == 0
    run = machine.run("status")
    assert run.returncode == 0
    lines = _lines(run.stdout)
    assert f"chromium (user): installed, {machine.hosts('chromium') / f'{HOST_NAME}.json'}" in lines
    assert "chrome (user): not installed" in lines
    assert "firefox" not in run.stdout

    old = machine.home / ".mozilla" / "native-messaging-hosts"  # written by an earlier version
    old.mkdir(parents=True)
    (old / f"{HOST_NAME}.json").write_text("{}")
    run = machine.run("status")
    assert "firefox (user): NOT SUPPORTED" in run.stdout and "chatagent bridge uninstall firefox" in run.stdout
    run = machine.run("uninstall", "firefox")
    assert run.returncode == 0
    assert str(old / f"{HOST_NAME}.json") in _lines(run.stdout)
    assert old.is_dir()  # not created by this install: kept
    assert "firefox" not in machine.run("status").stdout


# ---------------------------------------------------------------- one install command everywhere

DOCS = [ROOT / "README.md", EXTENSION_DIR / "README.md", EXTENSION_DIR / "background.js"]
# `chatagent bridge` and its words (one space apart), up to the end of a code span, a
# comment, an aligned column or a line.
COMMAND = re.compile(r"chatagent bridge(?: [^\s`'\"#()]+)*")
SYNOPSIS = re.compile(r"[\[\]|<>…]|\.\.\.")


def _shown_commands() -> dict[str, list[str]]:
    sources = {str(p.relative_to(ROOT)): p.read_text("utf-8") for p in DOCS}
    if CHATAGENT.exists():
        for args in (["bridge", "--help"], ["bridge", "install", "--help"]):
            sources[" ".join(args)] = subprocess.run([str(CHATAGENT), *args], capture_output=True, text=True,
                                                     env={**os.environ, "COLUMNS": "200"}).stdout
    return {name: COMMAND.findall(text) for name, text in sources.items()}


def test_docs_show_the_install_command_and_every_command_shown_parses() -> None:
    shown = _shown_commands()
    parser = build_parser()
    for name, commands in shown.items():
        assert INSTALL_COMMAND in commands, f"{name} does not show `{INSTALL_COMMAND}`"
        for command in commands:
            words = shlex.split(command)
            if len(words) == 2:  # the command group named in prose ("adds `chatagent bridge`")
                continue
            if SYNOPSIS.search(command):  # e.g. `chatagent bridge install|uninstall [BROWSER...]`
                action = next(w for w in words[2:] if not w.startswith(("[", "-")))
                if not action.isupper():  # not a placeholder (`ACTION`)
                    assert set(action.split("|")) <= {"install", "uninstall", "status"}, f"{name}: {command}"
                assert "firefox" not in command, f"{name}: {command}"
                continue
            try:
                args = parser.parse_args(words[1:])
            except SystemExit as exc:
                pytest.fail(f"{name} shows `{command}`, which does not parse (exit {exc.code})")
            assert args.command == "bridge", command
    assert sum(map(len, shown.values())) >= 10  # the pattern really finds the commands
