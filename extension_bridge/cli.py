"""`chatagent bridge install|uninstall|status`: registered with the chatagent
CLI through the `chatagent.commands` entry point, so chatagent does not
import this package (it imports chatagent)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("bridge", help="install the native-messaging host for the companion extension")
    bsub = p.add_subparsers(dest="bridge_command", metavar="ACTION", required=True)
    for action, text in (("install", "install the host manifest and launcher"),
                         ("uninstall", "remove them"), ("status", "show what is installed where")):
        b = bsub.add_parser(action, help=text)
        if action != "status":
            b.add_argument("--browser", default="chrome",
                           choices=["chrome", "chromium", "edge", "brave", "firefox"], help="default: chrome")
            scope = b.add_mutually_exclusive_group()
            scope.add_argument("--user", dest="scope", action="store_const", const="user", default="user",
                               help="for this user (default)")
            scope.add_argument("--system", dest="scope", action="store_const", const="system",
                               help="for every user (needs root)")
    p.set_defaults(handler=cmd_bridge)


def cmd_bridge(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.text import Text

    from chatagent.terminal import safe_text

    from . import install

    out = Console(highlight=False, soft_wrap=False)
    if args.bridge_command == "status":
        for status in install.status():
            out.print(safe_text(status.describe()))
        return 0
    if args.bridge_command == "install":
        result = install.install(args.browser, args.scope)
        out.print(safe_text(f"Installed {install.HOST_NAME} for {args.browser}: {result.manifest_path}"))
        out.print(Text("Load the extension from extension_bridge/extension (chrome://extensions → "
                       "Developer mode → Load unpacked)."))
        return 0
    for path in install.uninstall(args.browser, args.scope):
        out.print(safe_text(f"Removed {path}"))
    return 0
