"""`chatagent bridge install|uninstall|status`: registered with the chatagent
CLI through the `chatagent.commands` entry point, so chatagent does not
import this package (it imports chatagent)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from rich.console import Console

from chatagent.terminal import safe_text

from . import install as inst
from .errors import InstallError

EXIT_OK = 0

_INSTALL_EPILOG = f"""examples:
  {inst.INSTALL_COMMAND}                  every supported browser found on this machine
  {inst.INSTALL_COMMAND} chromium         just Chromium
  {inst.INSTALL_COMMAND} edge brave       several at once
  {inst.INSTALL_COMMAND} --system chrome  for every user (as root)

Supported: {', '.join(inst.BROWSERS)}. Firefox is not supported yet."""


def _browser_arg(*, known: bool) -> Callable[[str], str]:
    """An argparse `type` that accepts supported browser names (and, with
    `known`, Firefox, whose old installs can still be removed); an unknown
    name or an install for Firefox is a usage error (exit 2) saying why."""

    def parse(value: str) -> str:
        name = value.strip().lower()
        if name in inst.BROWSERS or (known and name in inst.KNOWN_BROWSERS):
            return name
        if name == "firefox":
            raise argparse.ArgumentTypeError(inst.FIREFOX_UNSUPPORTED)
        raise argparse.ArgumentTypeError(f"unknown browser {value!r}; choose from {', '.join(inst.BROWSERS)}")

    return parse


def register(sub: Any) -> None:
    p = sub.add_parser(
        "bridge",
        help="install the native-messaging host for the companion extension",
        description="Connect the chatagent side-panel extension to your browsers: it talks to a host\n"
        f"program that this registers with each of them. Start with:\n  {inst.INSTALL_COMMAND}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    bsub = p.add_subparsers(dest="bridge_command", metavar="ACTION", required=True)
    for action, text, epilog, default in (
        ("install", "Register the host with browsers.", _INSTALL_EPILOG,
         "every supported browser found on this machine"),
        ("uninstall", "Remove the host, and the folders its install created once they are empty.", None,
         "every browser it is installed for"),
    ):
        known = action == "uninstall"
        b = bsub.add_parser(action, help=text.rstrip(".").lower(), description=text, epilog=epilog,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        names = ", ".join(inst.BROWSERS) + (", or firefox for what an earlier version installed" if known else "")
        b.add_argument("browsers", nargs="*", metavar="BROWSER", type=_browser_arg(known=known),
                       help=f"{names}; several at once (default: {default})")
        b.add_argument("--browser", dest="browser_flags", action="append", default=[], metavar="NAME",
                       type=_browser_arg(known=known), help="the same as naming BROWSER (repeatable)")
        scope = b.add_mutually_exclusive_group()
        scope.add_argument("--user", dest="scope", action="store_const", const="user", default="user",
                           help="for this user (default)")
        scope.add_argument("--system", dest="scope", action="store_const", const="system",
                           help="for every user (needs root)")
    bsub.add_parser("status", help="show what is installed where", description="Show what is installed where.")
    p.set_defaults(handler=cmd_bridge)


def _say(out: Console, text: str) -> None:
    """Prose: word-wrapped to the terminal."""
    out.print(safe_text(text))


def _show(out: Console, text: str) -> None:
    """A line holding a path: never wrapped by rich (which would cut the path
    at its width), so it pastes whole; the terminal may fold it on screen."""
    out.print(safe_text(text), soft_wrap=True)


def cmd_bridge(args: argparse.Namespace) -> int:
    out = Console(highlight=False)
    if args.bridge_command == "status":
        return _status(out)
    names = list(dict.fromkeys([*args.browsers, *args.browser_flags]))
    if args.bridge_command == "install":
        return _install(out, names, args.scope)
    return _uninstall(out, names, args.scope)


def _install(out: Console, names: list[inst.Browser], scope: inst.Scope) -> int:
    found = inst.find_browsers()
    if not names:
        names = list(found)
        if not names:
            raise InstallError(  # the command on a line of its own, to paste
                f"No supported browser found on this machine (looked for {', '.join(inst.BROWSERS)}: "
                "their programs on PATH, their apps and their settings folders).\n"
                f"To install for one anyway, name it ({inst.SUPPORTED_NAMES}), e.g.:\n"
                f"{inst.INSTALL_COMMAND} chromium\n"
                "Firefox is not supported yet."
            )
    for browser in names:
        result = inst.install(browser, scope)
        seen = f"found {found[browser]}" if browser in found else "not found on this machine"
        _show(out, f"Installed the chatagent host for {browser} ({seen}):")
        _show(out, result.manifest_path)
    pages = {inst.EXTENSIONS_PAGE[b] for b in names}
    where = pages.pop() if len(pages) == 1 else "its extensions page (" + ", ".join(
        f"{b}: {inst.EXTENSIONS_PAGE[b]}" for b in names) + ")"
    out.print()
    _say(out, f"Next, load the extension: in each browser open {where}, turn on Developer mode, "
              "click Load unpacked and choose this folder:")
    _show(out, str(inst.EXTENSION_DIR))
    _say(out, "Then click the chatagent button in the toolbar to open the side panel "
              "(if it is open already, press Retry).")
    return EXIT_OK


def _uninstall(out: Console, names: list[inst.KnownBrowser], scope: inst.Scope) -> int:
    removals = inst.uninstall(names or inst.KNOWN_BROWSERS, scope)
    for removal in removals:
        if removal.files or removal.folders:
            _say(out, f"Removed the chatagent host for {removal.browser}:")
            for path in removal.files:
                _show(out, path)
            for folder in removal.folders:
                _show(out, f"{folder}/ (a folder the install created)")
        elif names:
            _show(out, f"Nothing was installed for {removal.browser} ({removal.directory}).")
    if not any(r.files or r.folders for r in removals):
        if not names:
            where = "for this user" if scope == "user" else "system-wide"
            _say(out, f"Nothing to remove: the chatagent host is not installed in any browser ({where}).")
        return EXIT_OK
    _say(out, "The extension itself stays loaded: remove it on the browser's extensions page.")
    return EXIT_OK


def _status(out: Console) -> int:
    _show(out, f"extension id: {inst.EXTENSION_ID}")
    _show(out, f"extension folder: {inst.EXTENSION_DIR}")
    statuses = inst.status()
    for st in statuses:
        _show(out, st.describe())
    if not any(st.installed for st in statuses):
        _show(out, f"To install: {inst.INSTALL_COMMAND}")
    return EXIT_OK
