"""Install, remove and inspect the native-messaging host registration.

For each browser we write, into its native-messaging-hosts directory:

* `com.chatagent.bridge.json`, the host manifest the browser reads,
* `com.chatagent.bridge.sh`, the launcher it points at: a `/bin/sh` script that
  execs *this* Python interpreter with `-m extension_bridge`, so the host runs
  in the same environment that ran `chatagent bridge install`, and
* `com.chatagent.bridge.created-folders.json`, only when the install had to
  create that directory (or its parents): the list of folders it created, so
  uninstall removes those (once empty) and never a folder the browser or the
  user made.

Keeping the launcher next to its manifest makes each registration
self-contained: uninstalling one browser never breaks another.

The extension ID allowed to connect is derived from the public key committed in
`extension/manifest.json` exactly as Chrome derives it, so it cannot drift.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from .errors import InstallError

#: The command shown wherever a user is told how to install the host: CLI help,
#: errors, status, both READMEs and the side panel (a test checks they agree).
INSTALL_COMMAND = "chatagent bridge install"

HOST_NAME = "com.chatagent.bridge"
HOST_DESCRIPTION = "chatagent: answers questions about browser tabs"
LAUNCHER_NAME = f"{HOST_NAME}.sh"
MANIFEST_NAME = f"{HOST_NAME}.json"
CREATED_NAME = f"{HOST_NAME}.created-folders.json"
EXTENSION_DIR = Path(__file__).resolve().parent / "extension"

Browser = Literal["chrome", "chromium", "edge", "brave"]
#: Browsers whose host folders we know: the supported ones, and Firefox, for
#: which an earlier version installed a manifest (uninstall and status find it).
KnownBrowser = Literal["chrome", "chromium", "edge", "brave", "firefox"]
Scope = Literal["user", "system"]
BROWSERS: tuple[Browser, ...] = ("chrome", "chromium", "edge", "brave")
KNOWN_BROWSERS: tuple[KnownBrowser, ...] = (*BROWSERS, "firefox")
SCOPES: tuple[Scope, ...] = ("user", "system")

SUPPORTED_NAMES = f"{', '.join(BROWSERS[:-1])} or {BROWSERS[-1]}"
FIREFOX_UNSUPPORTED = (
    "Firefox is not supported yet: the extension uses Chrome's side panel API (sidePanel), which Firefox "
    f"does not have, and it has no Gecko add-on id, which Firefox requires. Use {SUPPORTED_NAMES}."
)

#: Where each browser lists its extensions (the next step after installing).
EXTENSIONS_PAGE: dict[Browser, str] = {
    "chrome": "chrome://extensions",
    "chromium": "chrome://extensions",
    "edge": "edge://extensions",
    "brave": "brave://extensions",
}


def extension_id_from_key(key_b64: str) -> str:
    """Chrome's extension ID: sha256 of the DER public key, first 32 hex
    digits, each mapped 0-f → a-p."""
    der = base64.b64decode(key_b64)
    digest = hashlib.sha256(der).hexdigest()[:32]
    return "".join(chr(ord("a") + int(c, 16)) for c in digest)


def _manifest_key() -> str:
    return str(json.loads((EXTENSION_DIR / "manifest.json").read_text("utf-8"))["key"])


EXTENSION_ID = extension_id_from_key(_manifest_key())
EXTENSION_ORIGIN = f"chrome-extension://{EXTENSION_ID}/"


# ---------------------------------------------------------------- locations

# Relative to $XDG_CONFIG_HOME (Linux) or ~/Library/Application Support (macOS):
# each browser's settings folder, whose NativeMessagingHosts it reads.
_LINUX_USER: dict[Browser, str] = {
    "chrome": "google-chrome",
    "chromium": "chromium",
    "edge": "microsoft-edge",
    "brave": "BraveSoftware/Brave-Browser",
}
_LINUX_SYSTEM: dict[KnownBrowser, str] = {
    "chrome": "/etc/opt/chrome/native-messaging-hosts",
    "chromium": "/etc/chromium/native-messaging-hosts",
    "edge": "/etc/opt/edge/native-messaging-hosts",
    "brave": "/etc/opt/brave.com/brave/native-messaging-hosts",
    "firefox": "/usr/lib/mozilla/native-messaging-hosts",
}
_MAC_USER: dict[Browser, str] = {
    "chrome": "Google/Chrome",
    "chromium": "Chromium",
    "edge": "Microsoft Edge",
    "brave": "BraveSoftware/Brave-Browser",
}
_MAC_SYSTEM: dict[KnownBrowser, str] = {
    "chrome": "/Library/Google/Chrome/NativeMessagingHosts",
    "chromium": "/Library/Application Support/Chromium/NativeMessagingHosts",
    "edge": "/Library/Microsoft/Edge/NativeMessagingHosts",
    "brave": "/Library/BraveSoftware/Brave-Browser/NativeMessagingHosts",
    "firefox": "/Library/Application Support/Mozilla/NativeMessagingHosts",
}

# How `chatagent bridge install` with no names finds browsers: a browser counts
# as installed if one of its programs is on PATH (Linux), its app is in
# /Applications or ~/Applications (macOS), or its settings folder for this user
# holds the browser's own files (both: a browser that has been run, wherever it
# was installed; a folder holding only NativeMessagingHosts may be our own
# doing). Only the stable channels: beta and dev builds keep their settings,
# and read manifests, elsewhere.
_LINUX_PROGRAMS: dict[Browser, tuple[str, ...]] = {
    "chrome": ("google-chrome", "google-chrome-stable"),
    "chromium": ("chromium", "chromium-browser"),
    "edge": ("microsoft-edge", "microsoft-edge-stable"),
    "brave": ("brave-browser", "brave-browser-stable"),
}
_MAC_APPS: dict[Browser, str] = {
    "chrome": "Google Chrome.app",
    "chromium": "Chromium.app",
    "edge": "Microsoft Edge.app",
    "brave": "Brave Browser.app",
}


def _check_browser(browser: str, *, known: bool = False) -> None:
    """Supported browsers pass; with `known`, also Firefox (to clean up after
    an earlier version)."""
    if browser in BROWSERS or (known and browser == "firefox"):
        return
    if browser == "firefox":
        raise InstallError(FIREFOX_UNSUPPORTED)
    raise InstallError(f"Unknown browser {browser!r}; choose one of {', '.join(BROWSERS)}.")


def _check_scope(scope: str) -> None:
    if scope not in SCOPES:
        raise InstallError(f"Unknown scope {scope!r}; choose 'user' or 'system'.")


def _check_platform(platform: str) -> None:
    if not (platform.startswith("linux") or platform == "darwin"):
        raise InstallError(
            f"Installing the host on {platform!r} is not supported (Windows needs a registry key); "
            "only Linux and macOS are."
        )


def hosts_dir(
    browser: KnownBrowser, scope: Scope = "user", *, platform: str | None = None, home: Path | None = None
) -> Path:
    """The directory where `browser` looks for native-messaging host manifests."""
    _check_browser(browser, known=True)
    _check_scope(scope)
    platform = platform or sys.platform
    _check_platform(platform)
    home = home or Path.home()
    if platform.startswith("linux"):
        if scope == "system":
            return Path(_LINUX_SYSTEM[browser])
        if browser == "firefox":
            return home / ".mozilla" / "native-messaging-hosts"
        # Chromium-family browsers honour XDG_CONFIG_HOME for their config dir.
        xdg = os.environ.get("XDG_CONFIG_HOME")
        base = Path(xdg) if xdg and home == Path.home() else home / ".config"
        return base / _LINUX_USER[browser] / "NativeMessagingHosts"
    if scope == "system":
        return Path(_MAC_SYSTEM[browser])
    support = home / "Library" / "Application Support"
    if browser == "firefox":
        return support / "Mozilla" / "NativeMessagingHosts"
    return support / _MAC_USER[browser] / "NativeMessagingHosts"


def find_browsers(*, platform: str | None = None, home: Path | None = None) -> dict[Browser, Path]:
    """The supported browsers on this machine, each with the first path that
    shows it is there (a program, an app, or its settings folder)."""
    platform = platform or sys.platform
    _check_platform(platform)
    home = home or Path.home()
    found: dict[Browser, Path] = {}
    for browser in BROWSERS:
        if platform == "darwin":
            app = _MAC_APPS[browser]
            candidates = [Path("/Applications") / app, home / "Applications" / app]
        else:
            candidates = [Path(p) for p in map(shutil.which, _LINUX_PROGRAMS[browser]) if p]
        seen = next((c for c in candidates if c.exists()), None)
        settings = hosts_dir(browser, platform=platform, home=home).parent
        if seen is None and settings.is_dir() and any(e.name != "NativeMessagingHosts" for e in settings.iterdir()):
            seen = settings
        if seen is not None:
            found[browser] = seen
    return found


# ---------------------------------------------------------------- content


def manifest_for(browser: Browser, launcher_path: str | Path) -> dict[str, Any]:
    """The host manifest for `browser`, pointing at `launcher_path` (absolute)."""
    _check_browser(browser)
    path = Path(launcher_path)
    if not path.is_absolute():
        raise InstallError(f"The launcher path must be absolute (browsers require it), got {str(path)!r}.")
    return {
        "name": HOST_NAME,
        "description": HOST_DESCRIPTION,
        "path": str(path),
        "type": "stdio",
        "allowed_origins": [EXTENSION_ORIGIN],
    }


def launcher_script(python: str | None = None) -> str:
    """A `/bin/sh` launcher that runs the host with this interpreter.
    The package's parent directory goes first on PYTHONPATH so the launcher
    also works from a source checkout that is not pip-installed."""
    python = python or sys.executable
    root = str(Path(__file__).resolve().parent.parent)
    return (
        "#!/bin/sh\n"
        f"# Written by `{INSTALL_COMMAND}`: starts the chatagent native-messaging host.\n"
        "# The browser passes the caller's origin as $1.\n"
        f"PYTHONPATH={shlex.quote(root)}${{PYTHONPATH:+:$PYTHONPATH}}\n"
        "export PYTHONPATH\n"
        f'exec {shlex.quote(python)} -m extension_bridge "$@"\n'
    )


class InstallResult(BaseModel):
    browser: str
    scope: str
    manifest_path: str
    launcher_path: str
    extension_id: str
    origin: str


class Removal(BaseModel):
    """What `uninstall` removed from one browser's host folder."""

    browser: str
    scope: str
    directory: str
    files: list[str] = []
    #: Folders the install had created, removed now that they are empty.
    folders: list[str] = []


class HostStatus(BaseModel):
    browser: str
    scope: str
    manifest_path: str
    installed: bool
    ok: bool = False
    launcher_path: str | None = None
    problems: list[str] = []

    def describe(self) -> str:
        if not self.installed:
            return f"{self.browser} ({self.scope}): not installed"
        if self.ok:
            return f"{self.browser} ({self.scope}): installed, {self.manifest_path}"
        state = "NOT SUPPORTED" if self.browser == "firefox" else "BROKEN"
        return f"{self.browser} ({self.scope}): {state}, {self.manifest_path}: " + "; ".join(self.problems)


def _write_atomic(path: Path, text: str, mode: int) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, "utf-8")
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _missing_folders(directory: Path) -> list[Path]:
    """`directory` and those of its parents that do not exist yet, outermost
    first: what `mkdir(parents=True)` is about to create."""
    missing: list[Path] = []
    for folder in (directory, *directory.parents):
        if folder.exists():
            break
        missing.append(folder)
    return missing[::-1]


def write_host_manifest(
    directory: str | Path, browser: Browser = "chromium", *, python: str | None = None
) -> InstallResult:
    """Write launcher + manifest into `directory` (created if missing, and
    then recorded for uninstall), e.g. a test profile's
    `<user-data-dir>/NativeMessagingHosts`."""
    _check_browser(browser)
    directory = Path(directory).resolve()
    try:
        created = _missing_folders(directory)
        directory.mkdir(parents=True, exist_ok=True)
        if created:  # a folder that already existed is never recorded: it is not ours
            record = {"created_folders": [str(f) for f in created]}
            _write_atomic(directory / CREATED_NAME, json.dumps(record, indent=2) + "\n", 0o644)
        launcher = directory / LAUNCHER_NAME
        _write_atomic(launcher, launcher_script(python), 0o755)
        manifest = manifest_for(browser, launcher)
        _write_atomic(directory / MANIFEST_NAME, json.dumps(manifest, indent=2) + "\n", 0o644)
    except PermissionError as exc:
        raise InstallError(
            f"No permission to write {exc.filename}: install for your user (without --system), "
            "or run the --system install as root."
        ) from exc
    except OSError as exc:
        raise InstallError(f"Could not write the host manifest in {directory}: {exc}") from exc
    return InstallResult(
        browser=browser,
        scope="custom",
        manifest_path=str(directory / MANIFEST_NAME),
        launcher_path=str(launcher),
        extension_id=EXTENSION_ID,
        origin=EXTENSION_ORIGIN,
    )


def install(
    browser: Browser, scope: Scope = "user", target_dir: str | Path | None = None, *, python: str | None = None
) -> InstallResult:
    """Register the host for `browser`. `target_dir` overrides the browser's
    directory (tests, unusual profiles)."""
    _check_browser(browser)
    _check_scope(scope)
    directory = Path(target_dir) if target_dir is not None else hosts_dir(browser, scope)
    result = write_host_manifest(directory, browser, python=python)
    return result.model_copy(update={"scope": scope if target_dir is None else "custom"})


def _created_folders(directory: Path) -> list[Path]:
    """The folders the install recorded as its own: `directory` or its parents
    only, whatever the record says."""
    try:
        data = json.loads((directory / CREATED_NAME).read_text("utf-8"))
        recorded = [Path(str(p)) for p in data["created_folders"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return [f for f in recorded if f == directory or f in directory.parents]


def uninstall(
    browsers: Sequence[KnownBrowser], scope: Scope = "user", target_dir: str | Path | None = None
) -> list[Removal]:
    """For each browser, remove the manifest, the launcher, and the folders
    the install created that are now empty. Folders go after every browser's
    files, so one that two installs share (`~/.config`, made by the first)
    goes too. Firefox is accepted, to remove what an earlier version wrote."""
    _check_scope(scope)
    removals: list[Removal] = []
    owner: dict[Path, Removal] = {}
    for browser in browsers:
        _check_browser(browser, known=True)
        directory = (Path(target_dir) if target_dir is not None else hosts_dir(browser, scope)).resolve()
        removal = Removal(browser=browser, scope=scope if target_dir is None else "custom", directory=str(directory))
        removals.append(removal)
        for folder in _created_folders(directory):
            owner.setdefault(folder, removal)
        for name in (MANIFEST_NAME, LAUNCHER_NAME, CREATED_NAME):
            path = directory / name
            try:
                path.unlink()
                removal.files.append(str(path))
            except FileNotFoundError:
                pass
            except PermissionError as exc:
                raise InstallError(f"No permission to remove {path}: run as root for a --system install.") from exc
    for folder in sorted(owner, key=lambda f: len(f.parts), reverse=True):
        try:
            folder.rmdir()
            owner[folder].folders.append(str(folder))
        except OSError:  # gone already, or not empty: the browser or the user keeps files there now
            pass
    return removals


def check_dir(browser: KnownBrowser, scope: str, directory: Path) -> HostStatus:
    """Inspect one registration: present, and if so, will it actually work?"""
    manifest_path = directory / MANIFEST_NAME
    st = HostStatus(browser=browser, scope=scope, manifest_path=str(manifest_path), installed=manifest_path.exists())
    if not st.installed:
        return st
    if browser == "firefox":
        st.problems = ["left by an earlier version: Firefox is not supported; "
                       "`chatagent bridge uninstall firefox` removes it"]
        return st
    problems: list[str] = []
    try:
        data = json.loads(manifest_path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        st.problems = [f"manifest unreadable: {exc}"]
        return st
    launcher = Path(str(data.get("path", "")))
    st.launcher_path = str(launcher)
    if data.get("name") != HOST_NAME:
        problems.append(f"manifest name is {data.get('name')!r}, not {HOST_NAME!r}")
    if data.get("type") != "stdio":
        problems.append("manifest type is not 'stdio'")
    if data.get("allowed_origins") != [EXTENSION_ORIGIN]:
        problems.append(f"allowed_origins is {data.get('allowed_origins')!r}, expected [{EXTENSION_ORIGIN!r}]")
    if not launcher.is_absolute() or not launcher.is_file():
        problems.append(f"launcher {launcher} is missing")
    elif not os.access(launcher, os.X_OK):
        problems.append(f"launcher {launcher} is not executable")
    else:
        for line in launcher.read_text("utf-8", "replace").splitlines():
            if line.startswith("exec "):
                parts = shlex.split(line)
                if len(parts) > 1 and not os.access(parts[1], os.X_OK):
                    problems.append(f"the launcher's Python {parts[1]} no longer exists")
    if problems:
        problems.append(f"run `{INSTALL_COMMAND} {browser}` again")
    st.problems = problems
    st.ok = not problems
    return st


def status(*, scopes: tuple[Scope, ...] = SCOPES) -> list[HostStatus]:
    """One entry per supported browser and scope on this platform, plus any
    Firefox manifest an earlier version left."""
    out: list[HostStatus] = []
    for scope in scopes:
        for browser in KNOWN_BROWSERS:
            st = check_dir(browser, scope, hosts_dir(browser, scope))
            if browser != "firefox" or st.installed:
                out.append(st)
    return out
