"""What a page chatagent opens may reach: nothing on the user's machine or
local network (loopback, private and link-local addresses, `localhost` and
local names) but its own address, unless the user named such an address.

Local services trust their own machine: Ollama answers any origin at
`http://127.0.0.1:*`, a router's admin page any page on the network. A page
is untrusted, whoever serves it, so one chatagent opens must not reach them.
Two layers, both in the browser, neither on the path of an ordinary request:

- Chromium's own Local Network Access checks, by the address it connects
  to, so a host name that resolves to this machine is caught too: a page
  from a public address may not make requests (fetches, images, scripts,
  frames, form posts, WebSockets, workers' requests) to a more local one;
  the permission it would need is never granted in chatagent's browser. A
  local file chatagent serves from loopback is declared public by its server
  (`localfiles`: `Content-Security-Policy: treat-as-public-address`), so the
  same checks hold for it.
- Those checks leave the page's own navigations alone (the page moving
  itself, or a redirect, to `http://127.0.0.1:11434/api/tags` would be read
  like any page; a frame's are checked). Document requests alone are paused
  (`Fetch` with a resource-type pattern: subresources never are), and one of
  the main frame to a local address other than the tab's own is answered
  204 No Content, which leaves the page as it was.

A tab the user named at a local address (their own dev server, a page on
their network) is theirs: it is not scoped here, and loads as it would in
their own browser (Chromium lets a local page reach local addresses). Tabs
the user had open, read over CDP, are theirs too: chatagent opened none of them.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from contextlib import suppress
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import Error as PlaywrightError, Page, Request

log = logging.getLogger(__name__)

# Names that mean this machine or the local network whatever they resolve to (RFC 6761,
# 6762, 8375; ICANN's .internal). Other names are left to Chromium's checks by address.
_LOCAL_SUFFIXES = (".localhost", ".local", ".home.arpa", ".internal")
# Chromium's word for a request its Local Network Access checks refused.
_LNA_BLOCKED = "ERR_BLOCKED_BY_LOCAL_NETWORK_ACCESS_CHECKS"
_SHOWN = 3  # addresses a note names; the rest are counted
# Addresses kept per page: a page scanning every port of loopback costs no more than this.
_KEPT = 1000


def is_local_host(host: str) -> bool:
    """Whether `host` (a URL's host, IPv6 in brackets or not) is this machine or
    its local network: any address not on the public internet, or a local name."""
    host = host.strip("[]").rstrip(".").lower()
    if host == "localhost" or host.endswith(_LOCAL_SUFFIXES):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return not ip.is_global


def is_local_url(url: str) -> bool:
    """Whether `url` is an http(s) or ws(s) address on this machine or its network."""
    parts = urlsplit(url)
    return parts.scheme in ("http", "https", "ws", "wss") and is_local_host(parts.hostname or "")


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    try:
        port = parts.port or {"http": 80, "https": 443, "ws": 80, "wss": 443}.get(parts.scheme)
    except ValueError:
        port = None
    return parts.scheme, (parts.hostname or "").strip("[]").lower(), port


def _where(url: str) -> str:
    parts = urlsplit(url)
    return parts.netloc.rsplit("@", 1)[-1] or url[:60]


class NetworkScope:
    """One page's: navigations to local addresses other than `own` (its own
    origin, as a URL) answered 204, and every request the browser refused for
    being local recorded (`note`)."""

    def __init__(self, own: str) -> None:
        self._own = _origin(own)
        self._blocked: dict[str, None] = {}  # host:port of each refused request, in order, `_KEPT` at most
        self._more = False  # more addresses than that were refused
        self._main_frame: str | None = None  # its CDP frame id, once known
        self._replies: set[asyncio.Future[Any]] = set()

    @classmethod
    async def watch(cls, page: Page, own: str) -> "NetworkScope":
        scope = cls(own)
        await scope.attach(page)
        return scope

    async def attach(self, page: Page) -> None:
        """Keep `page` in this scope: the tab's first page, or the one that replaced it
        (a crashed page reloaded). Never fails: a page closed meanwhile needs no scope,
        and a browser that will not pause navigations for us still has its own checks."""
        page.on("requestfailed", self._failed)
        try:
            session = await page.context.new_cdp_session(page)
            session.on("Fetch.requestPaused", lambda event: self._paused(session, event))
            # Documents only: a page's subresources never wait on us. A page's main frame has its target's id.
            info, _ = await asyncio.gather(
                session.send("Target.getTargetInfo"),
                session.send("Fetch.enable", {"patterns": [{"urlPattern": "*", "resourceType": "Document"}]}))
            self._main_frame = info["targetInfo"]["targetId"]
        except PlaywrightError as exc:
            if not page.is_closed():
                log.warning("navigations of %s are not checked for local addresses: %s", page.url, exc)

    def _paused(self, session: Any, event: dict[str, Any]) -> None:
        url = event.get("request", {}).get("url", "")
        # Frames are the browser's to check (by address); the page's own navigations are not.
        top = self._main_frame is None or event.get("frameId") == self._main_frame
        if top and is_local_url(url) and _origin(url) != self._own:
            self._record(url)
            # No content: the navigation ends where it began, and the page stays readable.
            reply = session.send("Fetch.fulfillRequest", {
                "requestId": event["requestId"], "responseCode": 204, "responseHeaders": []})
        else:
            reply = session.send("Fetch.continueRequest", {"requestId": event["requestId"]})
        task = asyncio.ensure_future(reply)
        self._replies.add(task)
        task.add_done_callback(self._replied)

    def _replied(self, task: asyncio.Future[Any]) -> None:
        self._replies.discard(task)
        with suppress(asyncio.CancelledError, PlaywrightError):
            task.result()  # the page closed meanwhile: nothing left to answer

    def _failed(self, request: Request) -> None:
        if _LNA_BLOCKED in (request.failure or ""):
            self._record(request.url)

    def _record(self, url: str) -> None:
        where = _where(url)
        if where in self._blocked:
            return
        if len(self._blocked) >= _KEPT:
            self._more = True
            return
        log.info("blocked a page's request to %s (on this machine or its network)", where)
        self._blocked[where] = None

    @property
    def blocked(self) -> list[str]:
        """The addresses refused so far (host:port), first first."""
        return list(self._blocked)

    def refused(self, url: str) -> str:
        """Why the page at `url` was not loaded: it led to a local address."""
        return (f"{url} led to {next(iter(self._blocked), 'a local address')}, on this machine or its local network; chatagent does not follow "
                "a page there (it may not reach local services). To read that address, name it yourself.")

    def note(self) -> str | None:
        """What was blocked, in words for the user; None if nothing was."""
        if not self._blocked:
            return None
        addresses = self.blocked
        shown = ", ".join(addresses[:_SHOWN])
        more = len(addresses) - _SHOWN
        if more > 0:
            shown += f" and {more}{'+' if self._more else ''} more"
        return (f"The page tried to reach {shown}, on this machine or its local network; chatagent blocked it "
                "(a page it opens may not reach local services). To read a local address, name it yourself.")
