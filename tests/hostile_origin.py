"""A hostile origin in a process of its own (`python tests/hostile_origin.py`),
so what it sends is not paced by the test's own threads and GIL:

- `/builds-text`: a page of a few hundred bytes whose script builds TEXT_MB of
  rendered text and HIDDEN_MB more in a hidden block: nothing large crosses
  the network;
- `/frames-text`: a small page showing `/builds-text` in a frame;
- `/flood?mb=N`: N MB of HTML, chunked with no Content-Length, written as fast
  as the connection takes it;
- `/heavy?n=K`: K MB of ordinary HTML with a Content-Length (a large, honest page);
- `/sent?path=P`: JSON `{"sent": bytes, "finished": bool}` for a flood once it
  has ended (404 while it is still going).

It prints its port on its first line of output.
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

TEXT_MB = 2
HIDDEN_MB = 20
BUILDS_TEXT = (
    "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Ledger</title></head><body><h1>Ledger</h1><script>"
    "const line='Entry of a ledger that its own script writes. ';"
    f"const shown=line.repeat({TEXT_MB}e6/line.length), hidden=line.repeat({HIDDEN_MB}e6/line.length);"
    "for(let i=0;i<200;i++){const p=document.createElement('p');p.textContent=shown.slice(0,shown.length/200);"
    "document.body.appendChild(p)}"
    "const h=document.createElement('div');h.hidden=true;h.textContent=hidden;document.body.appendChild(h);"
    "</script></body></html>"
).encode()
# A small page that shows /builds-text in a frame.
FRAMES_TEXT = (b"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Framed</title></head><body>"
               b"<h1>Framed ledger</h1><p>The ledger follows.</p>"
               b"<iframe src='/builds-text' style='width:600px;height:400px'></iframe></body></html>")
HEAD = b"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Flood</title></head><body><h1>A flood</h1><pre>\n"
ROW = b"<p>" + b"Row of an endless ledger, line after line after line. " * 60 + b"</p>\n"
# A flood is one text without markup, what a browser parses fastest: the bytes go as fast as it takes them.
BLOCK = b"Row of an endless ledger, line after line after line.\n" * 20_000  # ~1 MB per write


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    sent: dict[str, tuple[int, bool]]
    lock: threading.Lock


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        if parts.path == "/builds-text":
            self._send(BUILDS_TEXT)
        elif parts.path == "/frames-text":
            self._send(FRAMES_TEXT)
        elif parts.path == "/flood":
            self._flood(int(query.get("mb", "300")))
        elif parts.path == "/heavy":
            self._send(HEAD + ROW * int(float(query.get("n", "3")) * 1_000_000 / len(ROW)) + b"</body></html>")
        elif parts.path == "/sent":
            with self.server.lock:
                record = self.server.sent.get(query.get("path", ""))
            if record is None:
                self.send_error(404)
            else:
                self._send(json.dumps({"sent": record[0], "finished": record[1]}).encode(), "application/json")
        else:
            self.send_error(404)

    def _send(self, body: bytes, ctype: str = "text/html; charset=utf-8") -> None:
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _flood(self, mb: int) -> None:
        total = mb * 1_000_000
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sent = 0
        try:
            while sent < total:
                block = ((HEAD if sent == 0 else b"") + BLOCK)[: total - sent]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(block), block))
                sent += len(block)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            pass  # the browser hung up
        with self.server.lock:
            self.server.sent[self.path] = (sent, sent >= total)


def main() -> None:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.sent, server.lock = {}, threading.Lock()
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
