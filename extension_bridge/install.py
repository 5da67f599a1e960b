"""Install, remove and inspect the native-messaging host registration.

For each browser we write, into its native-messaging-hosts directory:

* `com.chatagent.bridge.json`, the host manifest the browser reads, and
* `com.chatagent.bridge.sh`, the launcher it points at: a `/bin/sh` script that
  execs *this* Python interpreter with `-m extension_bridge`, so the host runs
  in the same environment that ran `chatagent bridge install`.

Keeping the launcher next to its manifest makes each registration
self-contained: uninstalling one browser never breaks another.

The extension ID allowed to connect is derived from the public key committed in
`extension/manifest.json` exactly as Chrome derives it, so it cannot drift.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from .errors import InstallError

HOST_NAME = "com.chatagent.bridge"
HOST_DESCRIPTION = "chatagent: answers questions about browser tabs"
LAUNCHER_NAME = f"{HOST_NAME}.sh"
MANIFEST_NAME = f"{HOST_NAME}.json"
#: Gecko add-on id the extension must declare (browser_specific_settings) if
#: packaged for Firefox; Firefox identifies extensions by this, not by a key.
FIREFOX_EXTENSION_ID = "chatagent-bridge@chatagent.dev"

EXTENSION_DIR = Path(__file__).resolve().parent / "extension"

Browser = Literal["chrome", "chromium", "edge", "brave", "firefox"]
Scope = Literal["user", "system"]
BROWSERS: tuple[Browser, ...] = ("chrome", "chromium", "edge", "brave", "firefox")
SCOPES: tuple[Scope, ...] = ("user", "system")


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

# Relative to $XDG_CONFIG_HOME (Linux) or ~/Library/Application Support (macOS).
_LINUX_USER = {
    "chrome": "google-chrome",
    "chromium": "chromium",
    "edge": "microsoft-edge",
    "brave": "BraveSoftware/Brave-Browser",
}
_LINUX_SYSTEM = {
    "chrome": "/etc/opt/chrome/native-messaging-hosts",
    "chromium": "/etc/chromium/native-messaging-hosts",
    "edge": "/etc/opt/edge/native-messaging-hosts",
    "brave": "/etc/opt/brave.com/brave/native-messaging-hosts",
    "firefox": "/usr/lib/mozilla/native-messaging-hosts",
}
_MAC_USER = {
    "chrome": "Google/Chrome",
    "chromium": "Chromium",
    "edge": "Microsoft Edge",
    "brave": "BraveSoftware/Brave-Browser",
}
_MAC_SYSTEM = {
    "chrome": "/Library/Google/Chrome/NativeMessagingHosts",
    "chromium": "/Library/Application Support/Chromium/NativeMessagingHosts",
    "edge": "/Library/Microsoft/Edge/NativeMessagingHosts",
    "brave": "/Library/BraveSoftware/Brave-Browser/NativeMessagingHosts",
    "firefox": "/Library/Application Support/Mozilla/NativeMessagingHosts",
}


def _check(browser: str, scope: str) -> None:
    if browser not in BROWSERS:
        raise InstallError(f"Unknown browser {browser!r}; choose one of {', '.join(BROWSERS)}.")
    if scope not in SCOPES:
        raise InstallError(f"Unknown scope {scope!r}; choose 'user' or 'system'.")


def hosts_dir(
    browser: Browser, scope: Scope = "user", *, platform: str | None = None, home: Path | None = None
) -> Path:
    """The directory where `browser` looks for native-messaging host manifests."""
    _check(browser, scope)
    platform = platform or sys.platform
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
    if platform == "darwin":
        if scope == "system":
            return Path(_MAC_SYSTEM[browser])
        support = home / "Library" / "Application Support"
        if browser == "firefox":
            return support / "Mozilla" / "NativeMessagingHosts"
        return support / _MAC_USER[browser] / "NativeMessagingHosts"
    raise InstallError(
        f"Installing the host on {platform!r} is not supported (Windows needs a registry key); "
        "only Linux and macOS are."
    )


# ---------------------------------------------------------------- content


def manifest_for(browser: Browser, launcher_path: str | Path) -> dict[str, Any]:
    """The host manifest for `browser`, pointing at `launcher_path` (absolute)."""
    _check(browser, "user")
    path = Path(launcher_path)
    if not path.is_absolute():
        raise InstallError(f"The launcher path must be absolute (browsers require it), got {str(path)!r}.")
    manifest: dict[str, Any] = {
        "name": HOST_NAME,
        "description": HOST_DESCRIPTION,
        "path": str(path),
        "type": "stdio",
    }
    if browser == "firefox":
        manifest["allowed_extensions"] = [FIREFOX_EXTENSION_ID]
    else:
        manifest["allowed_origins"] = [EXTENSION_ORIGIN]
    return manifest


def launcher_script(python: str | None = None) -> str:
    """A `/bin/sh` launcher that runs the host with this interpreter.
    The package's parent directory goes first on PYTHONPATH so the launcher
    also works from a source checkout that is not pip-installed."""
    python = python or sys.executable
    root = str(Path(__file__).resolve().parent.parent)
    return (
        "#!/bin/sh\n"
        "# Written by `chatagent bridge install`: starts the chatagent native-messaging host.\n"
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

    def describe(self) -> str:
        return f"{self.browser} ({self.scope}): {self.manifest_path} → {self.launcher_path}"


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
        return f"{self.browser} ({self.scope}): BROKEN, {self.manifest_path}: " + "; ".join(self.problems)


def _write_atomic(path: Path, text: str, mode: int) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, "utf-8")
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def write_host_manifest(
    directory: str | Path, browser: Browser = "chromium", *, python: str | None = None
) -> InstallResult:
    """Write launcher + manifest into `directory` (created if missing), e.g. a
    test profile's `<user-data-dir>/NativeMessagingHosts`."""
    directory = Path(directory).resolve()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        launcher = directory / LAUNCHER_NAME
        _write_atomic(launcher, launcher_script(python), 0o755)
        manifest = manifest_for(browser, launcher)
        _write_atomic(directory / MANIFEST_NAME, json.dumps(manifest, indent=2) + "\n", 0o644)
    except PermissionError as exc:
        raise InstallError(
            f"No permission to write {exc.filename}: use --user, or run the --system install as root."
        ) from exc
    except OSError as exc:
        raise InstallError(f"Could not write the host manifest in {directory}: {exc}") from exc
    return InstallResult(
        browser=browser,
        scope="custom",
        manifest_path=str(directory / MANIFEST_NAME),
        launcher_path=str(launcher),
        extension_id=EXTENSION_ID if browser != "firefox" else FIREFOX_EXTENSION_ID,
        origin=EXTENSION_ORIGIN if browser != "firefox" else FIREFOX_EXTENSION_ID,
    )


def install(
    browser: Browser, scope: Scope = "user", target_dir: str | Path | None = None, *, python: str | None = None
) -> InstallResult:
    """Register the host for `browser`. `target_dir` overrides the browser's
    directory (tests, unusual profiles)."""
    _check(browser, scope)
    directory = Path(target_dir) if target_dir is not None else hosts_dir(browser, scope)
    result = write_host_manifest(directory, browser, python=python)
    return result.model_copy(update={"scope": scope if target_dir is None else "custom"})


def uninstall(browser: Browser, scope: Scope = "user", target_dir: str | Path | None = None) -> list[str]:
    """Remove the manifest and launcher; returns the paths removed (none if
    nothing was installed)."""
    _check(browser, scope)
    directory = Path(target_dir) if target_dir is not None else hosts_dir(browser, scope)
    removed: list[str] = []
    for name in (MANIFEST_NAME, LAUNCHER_NAME):
        path = directory / name
        try:
            path.unlink()
            removed.append(str(path))
        except FileNotFoundError:
            pass
        except PermissionError as exc:
            raise InstallError(f"No permission to remove {path}: run as root for a --system install.") from exc
    return removed


def check_dir(browser: Browser, scope: str, directory: Path) -> HostStatus:
    """Inspect one registration: present, and if so, will it actually work?"""
    manifest_path = directory / MANIFEST_NAME
    st = HostStatus(browser=browser, scope=scope, manifest_path=str(manifest_path), installed=manifest_path.exists())
    if not st.installed:
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
    if browser == "firefox":
        if FIREFOX_EXTENSION_ID not in (data.get("allowed_extensions") or []):
            problems.append(f"allowed_extensions lacks {FIREFOX_EXTENSION_ID}")
    elif data.get("allowed_origins") != [EXTENSION_ORIGIN]:
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
                    problems.append(f"the launcher's Python {parts[1]} no longer exists; reinstall")
    st.problems = problems
    st.ok = not problems
    return st


def status(*, browsers: tuple[Browser, ...] = BROWSERS, scopes: tuple[Scope, ...] = SCOPES) -> list[HostStatus]:
    """One entry per browser and scope on this platform."""
    out: list[HostStatus] = []
    for browser in browsers:
        for scope in scopes:
            out.append(check_dir(browser, scope, hosts_dir(browser, scope)))
    return out


# ---------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    """`python -m extension_bridge.install install|uninstall|status` (the
    `chatagent bridge` CLI calls the same functions)."""
    p = argparse.ArgumentParser(prog="chatagent bridge", description="Manage the native-messaging host.")
    sub = p.add_subparsers(dest="cmd", required=True)
    for cmd in ("install", "uninstall"):
        sp = sub.add_parser(cmd)
        sp.add_argument(
            "browsers",
            nargs="*",
            metavar="BROWSER",
            help=f"one or more of {', '.join(BROWSERS)} (default: chrome chromium)",
        )
        g = sp.add_mutually_exclusive_group()
        g.add_argument("--user", dest="scope", action="store_const", const="user", default="user")
        g.add_argument("--system", dest="scope", action="store_const", const="system")
        sp.add_argument("--dir", help="write into this directory instead of the browser's")
    sub.add_parser("status")
    args = p.parse_args(argv)
    try:
        if args.cmd == "status":
            print(f"extension id: {EXTENSION_ID}")
            for st in status():
                print(st.describe())
            return 0
        browsers = args.browsers or ["chrome", "chromium"]
        for b in browsers:
            if args.cmd == "install":
                print("installed", install(b, args.scope, args.dir).describe())
            else:
                removed = uninstall(b, args.scope, args.dir)
                print(f"{b}: " + (", ".join(removed) if removed else "nothing to remove"))
    except InstallError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
