"""A hostile question for the offline model, and its pages (issue 54 row 9): a
question of many parts over many tabs of plain facts. Each part reads every
tab again, so read whole it grows with parts times tabs (60 parts over 10 of
these pages: ~7 s on 2 quiet cores, 25 s on busy ones). The tests and the benchmark of
calls beside it (`benchmarks/offline_beside.py`) use it; `serving()` puts
the pages on a loopback origin at `{base}/ledger/N`."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_WORDS = ("harbour ferry tram river bridge station ticket market tower garden museum library council "
          "school bakery lantern quarry orchard mill canal").split()
PARTS = 60
TABS = 10


def ledger_lines(i: int, rows: int = 30) -> list[str]:
    """Page `i`'s facts: every part of the question finds some of them worth ranking."""
    lines = []
    for j in range(rows):
        said = " ".join(_WORDS[(i * 7 + j * 3 + k) % len(_WORDS)] for k in range(24))
        lines.append(f"The {said} cost ${j + i},099 in {1900 + j} and weighs {j + 2} kg.")
    return lines


def ledger(i: int) -> str:
    """Page `i` as HTML: "Ledger i", and its facts."""
    body = "".join(f"<p>{line}</p>\n" for line in ledger_lines(i))
    return f"<!DOCTYPE html><html><head><title>Ledger {i}</title></head><body><h1>Ledger {i}</h1>\n{body}</body></html>"


def many_parts(n: int = PARTS) -> str:
    """A question of `n` parts, each a question of its own."""
    return " ".join(f"What is the {_WORDS[k % len(_WORDS)]} {_WORDS[(k * 5 + 1) % len(_WORDS)]} number {k}?"
                    for k in range(n))


@contextmanager
def serving() -> Iterator[str]:
    """The ledger pages on 127.0.0.1: yields the origin, `http://127.0.0.1:PORT`."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
            pass

        def do_GET(self) -> None:
            number = self.path.rsplit("/", 1)[-1]
            if not (self.path.startswith("/ledger/") and number.isdigit()):
                self.send_error(404)
                return
            body = ledger(int(number)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="ledger-pages", daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
