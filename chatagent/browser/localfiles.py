"""Local files the user named, served to the browser from 127.0.0.1, and nothing else.

A page opened as `file://` may navigate to, frame or embed any other local file
(`location.href = "file:///etc/passwd"`), and what it shows would then reach the
model. A page served over http cannot: Chromium refuses every `file://` load
from a non-file origin. So chatagent never opens a `file://` URL in the
browser it launches. Each file the user names is served at its own
unguessable path on a loopback port (a token of its own: a page that reads its
address learns no other file's); every other path answers 404, so a named
page cannot fetch its neighbours (images or style sheets beside it, or files
named before it) either. URLs are shown to the user and the model as the `file://` URLs named.

A file is streamed in pieces (`CHUNK_BYTES`), never read whole: a file the
user named may be far larger than memory. One larger than the bound on a
response (`max_bytes`, the max_response_mb setting) is refused before it is
read: at `serve`, and again at each request, should it have grown since.
"""

from __future__ import annotations

import logging
import mimetypes
import os
import secrets
import select
import stat
import sys
import threading
from contextlib import suppress
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import BinaryIO
from urllib.parse import quote, unquote, urlsplit, urlunsplit
from urllib.request import url2pathname

from ..errors import TabError

log = logging.getLogger(__name__)

FILE_SCHEME = "file:"
CHUNK_BYTES = 1 << 16
# A file grown past the bound since `serve` gets its headers (they say its length, so the
# browser's own bound closes the page) and no body: the connection waits this long at most for it.
_HANG_UP_WAIT_S = 10.0


class LocalFileTooLarge(TabError):
    """A named file larger than the bound on a response: not served."""

    code = "too_large"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    files: dict[str, Path]  # served path -> the named file
    max_bytes: int | None  # a file larger than this is not sent

    def handle_error(self, request: object, client_address: object) -> None:
        # socketserver prints the traceback to stderr, in the middle of the user's
        # answer: the browser hanging up on a page it no longer wants (a closed tab,
        # the ask ending) is routine, and anything else is a line of the log.
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError):
            log.debug("local file server: %s hung up: %s", client_address, exc)
        else:
            log.warning("local file server: a request failed: %s", exc, exc_info=log.isEnabledFor(logging.DEBUG))


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._serve(body=True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._serve(body=False)

    def _serve(self, *, body: bool) -> None:
        path = self.server.files.get(urlsplit(self.path).path)
        try:
            # Opened once and checked on its descriptor: the file may be replaced by a
            # FIFO or a device after `serve` (reading either would never end).
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK) if path is not None else None
        except OSError as exc:
            log.info("could not read %s: %s", path, exc)
            fd = None
        if fd is None or path is None:
            self.send_error(HTTPStatus.NOT_FOUND, "Not a file the user named")
            return
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(fd)
            size = st.st_size
            if not stat.S_ISREG(st.st_mode):
                self.send_error(HTTPStatus.NOT_FOUND, "Not a file the user named")
                return
            ctype = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(size))
            self.send_header("Cache-Control", "no-store")  # a re-read sees the file as it is now
            # Served from loopback, the page would be as local as Ollama or the MCP server, which trust
            # loopback pages: declared public, the browser keeps it off local addresses (`network_scope`).
            self.send_header("Content-Security-Policy", "treat-as-public-address")
            self.end_headers()
            limit = self.server.max_bytes
            if not body:
                return
            if limit is not None and size > limit:
                self._wait_for_hang_up()  # the length said is over the browser's bound: it hangs up
            else:
                self._copy(f, size)

    def _copy(self, f: BinaryIO, size: int) -> None:
        """`size` bytes of `f` at most, a piece at a time: a file that grows as it is
        sent is cut at the length its headers said."""
        left = size
        while left > 0:
            piece = f.read(min(CHUNK_BYTES, left))
            if not piece:
                break  # it shrank: the browser sees a short body and fails the load
            self.wfile.write(piece)
            left -= len(piece)

    def _wait_for_hang_up(self) -> None:
        self.wfile.flush()
        with suppress(OSError, ValueError):
            select.select([self.connection], [], [], _HANG_UP_WAIT_S)
        self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        log.debug("local file server: " + format, *args)


class LocalFiles:
    """Serves exactly the files registered with `serve()`; started on first use."""

    def __init__(self, max_bytes: int | None = None) -> None:
        """`max_bytes`: a file larger than this is refused (`LocalFileTooLarge`); None: no bound."""
        self._max_bytes = max_bytes
        self._server: _Server | None = None
        self._to_file: dict[str, str] = {}  # served path -> file URL, for display
        self._lock = threading.Lock()

    def serve(self, file_url: str) -> str:
        """The http URL the browser opens for the named `file://` URL."""
        parts = urlsplit(file_url)
        path = Path(url2pathname(unquote(parts.path)))
        if not path.is_file():
            raise TabError(f"No such file: {path}." if not path.exists() else f"{path} is not a file.")
        if self._max_bytes is not None and path.stat().st_size > self._max_bytes:
            raise LocalFileTooLarge(f"{path} is larger than the bound on a response.")
        server = self._start()
        with self._lock:
            served = f"/{secrets.token_urlsafe(18)}/{quote(path.name)}"
            server.files[served] = path
            self._to_file[served] = urlunsplit(parts._replace(query="", fragment=""))
        host, port = server.server_address[:2]
        return urlunsplit(("http", f"{host}:{port}", served, parts.query, parts.fragment))

    def display_url(self, url: str) -> str:
        """`url` as the user named it: a served file's `file://` URL (with the
        page's own query and fragment), any other URL unchanged."""
        if self._server is None:
            return url
        parts = urlsplit(url)
        host, port = self._server.server_address[:2]
        named = self._to_file.get(parts.path) if parts.netloc == f"{host}:{port}" else None
        if named is None:
            return url
        return urlunsplit(urlsplit(named)._replace(query=parts.query, fragment=parts.fragment))

    def _start(self) -> _Server:
        with self._lock:
            if self._server is None:
                server = _Server(("127.0.0.1", 0), _Handler)
                server.files = {}
                server.max_bytes = self._max_bytes
                threading.Thread(target=server.serve_forever, name="chatagent-local-files", daemon=True).start()
                self._server = server
            return self._server

    def close(self) -> None:
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()


def is_local(url: str) -> bool:
    return url[:5].lower() == FILE_SCHEME
