"""A local server that speaks enough of the Gemini REST API for the real client.

``langchain_google_genai.ChatGoogleGenerativeAI`` (through the ``google-genai``
SDK and httpx) is pointed at it with ``base_url=server.url`` or the
``GOOGLE_GEMINI_BASE_URL`` environment variable and any API key. Replies are
scripted (a FIFO queue, then a default responder), every request is recorded,
and the server can misbehave on purpose: HTTP errors, stalls, malformed SSE,
dropped connections, raw bodies of any shape, and the safety filter's answers
(a blocked prompt, a reply withheld).

The server is a stdlib ``ThreadingHTTPServer`` running in a background thread,
so it never blocks the caller's asyncio event loop and serves concurrent
requests (one thread per connection).

Endpoints (any API version prefix, the SDK uses ``v1beta`` by default):

* ``POST /{ver}/models/{model}:streamGenerateContent?alt=sse`` -- SSE stream
* ``POST /{ver}/models/{model}:generateContent`` -- one JSON response
* ``POST /{ver}/models/{model}:countTokens``
* ``GET /{ver}/models/{model}`` and ``GET /{ver}/models``
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import collections
import json
import math
import re
import signal
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Union
from urllib.parse import parse_qs, urlsplit

# --------------------------------------------------------------------------
# Scripted replies
# --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Paced:
    """Pacing shared by replies that stream text; ``None`` = the server default."""

    ttft_s: float | None = None  # delay from request arrival to the first chunk
    tokens_per_s: float | None = None  # generation speed after the first chunk
    tokens_per_chunk: int | None = None  # "tokens" (words) per SSE chunk


@dataclass(frozen=True, kw_only=True)
class TextReply(_Paced):
    """A normal text answer, streamed in chunks of words."""

    text: str
    finish_reason: str = "STOP"


@dataclass(frozen=True)
class FunctionCall:
    """One ``functionCall`` part; ``id`` is omitted from the JSON when ``None``
    (the Gemini API does not send ids; LangChain then makes up its own)."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True, kw_only=True)
class FunctionCallReply(_Paced):
    """One or more function calls, optionally preceded by streamed text."""

    calls: Sequence[FunctionCall]
    text: str = ""
    finish_reason: str = "STOP"


# HTTP status -> google.rpc.Code name, as the real API puts in error.status.
_STATUS_NAMES: dict[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


@dataclass(frozen=True, kw_only=True)
class ErrorReply:
    """An HTTP error with a Google-style body ``{"error": {code, message, status}}``."""

    code: int
    message: str | None = None
    status: str | None = None  # derived from ``code`` when None
    retry_delay_s: float | None = None  # adds a google.rpc.RetryInfo detail (429s)
    reason: str | None = None  # adds a google.rpc.ErrorInfo detail, e.g. API_KEY_INVALID
    delay_s: float = 0.0  # wait before answering
    # The message ends with the request's header of this name (e.g. x-goog-api-key),
    # as a provider or proxy does that echoes what it was sent.
    echo_header: str | None = None

    def body(self, headers: dict[str, str] | None = None) -> dict[str, Any]:
        """`headers`: the request's (lower-case names), for `echo_header`."""
        status = self.status or _STATUS_NAMES.get(self.code, "UNKNOWN")
        message = self.message or f"Scripted error {self.code} {status}."
        if self.echo_header is not None:
            message += f" {self.echo_header}: {(headers or {}).get(self.echo_header.lower(), '')}"
        error: dict[str, Any] = {"code": self.code, "message": message, "status": status}
        details: list[dict[str, Any]] = []
        if self.retry_delay_s is not None:
            details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{self.retry_delay_s:g}s"})
        if self.reason is not None:
            details.append({"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": self.reason,
                            "domain": "googleapis.com"})
        if details:
            error["details"] = details
        return {"error": error}


@dataclass(frozen=True, kw_only=True)
class StallReply(_Paced):
    """Send the headers (and ``text_before`` as first chunks, if any), then hang
    for ``stall_s`` seconds, then finish normally with ``text_after``.

    For ``generateContent`` the status line and headers are sent, then the body
    is held back for ``stall_s``.
    """

    stall_s: float
    text_before: str = ""
    text_after: str = ""


@dataclass(frozen=True, kw_only=True)
class MalformedReply(_Paced):
    """Stream ``text_before`` normally, then an SSE data line that is not JSON,
    then end the stream cleanly. For ``generateContent`` the whole body is ``raw``."""

    text_before: str = ""
    raw: str = '{"candidates": [{"content": {"parts": [{"text": "trunc'


@dataclass(frozen=True, kw_only=True)
class DropReply(_Paced):
    """Close the socket mid-response: after ``text_before`` has been streamed, or,
    with ``send_headers=False``, before any response byte at all."""

    text_before: str = ""
    send_headers: bool = True


@dataclass(frozen=True, kw_only=True)
class RawReply(_Paced):
    """Each of ``chunks``, JSON-encoded, as one SSE event, then the end of the
    stream: bodies a client must survive (``[]``, ``{}``, ``{"candidates": 5}``;
    no chunks at all is an empty stream). For ``generateContent`` the body is
    ``chunks[0]`` (``{}`` when there is none)."""

    chunks: Sequence[Any] = ()


@dataclass(frozen=True, kw_only=True)
class BlockedReply:
    """The prompt is refused by the safety filter: one chunk with
    ``promptFeedback.blockReason`` and no candidates, as the real API answers
    (200 OK, streamed or not). ``categories`` are rated HIGH and blocked."""

    reason: str = "SAFETY"
    message: str | None = None  # promptFeedback.blockReasonMessage
    categories: Sequence[str] = ("HARM_CATEGORY_DANGEROUS_CONTENT",)


@dataclass(frozen=True, kw_only=True)
class FinishReply(_Paced):
    """``text_before`` (if any), then a last candidate with ``finish_reason``
    and no content: how the real API ends a reply its output filter withheld
    (``SAFETY``, ``PROHIBITED_CONTENT``, …, with the blocked ``categories`` in
    safetyRatings) or could not produce (``UNEXPECTED_TOOL_CALL``, ``MAX_TOKENS``)."""

    finish_reason: str = "SAFETY"
    text_before: str = ""
    categories: Sequence[str] = ("HARM_CATEGORY_DANGEROUS_CONTENT",)


Reply = Union[
    TextReply, FunctionCallReply, ErrorReply, StallReply, MalformedReply, DropReply,
    RawReply, BlockedReply, FinishReply,
]

# ``responder(request) -> Reply`` answers when the scripted queue is empty.
Responder = Callable[["RecordedRequest"], Reply]


# --------------------------------------------------------------------------
# Recorded requests
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class InlineImage:
    mime_type: str
    data: bytes


def _parts(contents: Iterable[Any]) -> Iterator[dict[str, Any]]:
    for content in contents:
        if isinstance(content, dict):
            for part in content.get("parts") or []:
                if isinstance(part, dict):
                    yield part


def _get(d: dict[str, Any], camel: str, snake: str) -> Any:
    # The SDK sends camelCase on the wire; accept snake_case too for hand-made requests.
    return d.get(camel, d.get(snake))


@dataclass
class RecordedRequest:
    """One request as the server saw it. Times are ``time.perf_counter()`` values,
    comparable with the caller's own ``perf_counter()`` (same process, same clock)."""

    method: str
    path: str  # including the query string
    model: str | None  # e.g. "gemini-2.5-flash" (without "models/")
    action: str | None  # "generateContent", "streamGenerateContent", "countTokens"; None for GETs
    streamed: bool
    body: dict[str, Any] | None
    headers: dict[str, str]
    arrived_at: float
    arrived_wall: float  # time.time(), for logs
    reply: Reply | None = None  # what the server answered with (generate requests only)
    status: int | None = None  # HTTP status sent
    first_chunk_at: float | None = None  # perf_counter right before the first body chunk was written
    completed_at: float | None = None  # perf_counter just before the response was finished
    client_disconnected: bool = False  # the client went away mid-response

    # -- body accessors ----------------------------------------------------
    @property
    def contents(self) -> list[dict[str, Any]]:
        return list((self.body or {}).get("contents") or [])

    @property
    def system_instruction(self) -> dict[str, Any] | None:
        value = _get(self.body or {}, "systemInstruction", "system_instruction")
        return value if isinstance(value, dict) else None

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list((self.body or {}).get("tools") or [])

    @property
    def tool_config(self) -> dict[str, Any] | None:
        value = _get(self.body or {}, "toolConfig", "tool_config")
        return value if isinstance(value, dict) else None

    @property
    def generation_config(self) -> dict[str, Any] | None:
        value = _get(self.body or {}, "generationConfig", "generation_config")
        return value if isinstance(value, dict) else None

    # -- helpers -------------------------------------------------------------
    def text(self) -> str:
        """All text parts of ``contents`` (not the system instruction), joined by newlines."""
        return "\n".join(p["text"] for p in _parts(self.contents) if isinstance(p.get("text"), str))

    def last_user_text(self) -> str:
        """Text of the last ``user`` turn (what a benchmark's responder usually wants)."""
        for content in reversed(self.contents):
            if content.get("role", "user") == "user":
                texts = [p["text"] for p in _parts([content]) if isinstance(p.get("text"), str)]
                if texts:
                    return "\n".join(texts)
        return ""

    def system_text(self) -> str:
        si = self.system_instruction
        if not si:
            return ""
        return "\n".join(p["text"] for p in _parts([si]) if isinstance(p.get("text"), str))

    def function_declarations(self) -> list[dict[str, Any]]:
        decls: list[dict[str, Any]] = []
        for tool in self.tools:
            decls.extend(_get(tool, "functionDeclarations", "function_declarations") or [])
        return decls

    def tool_names(self) -> list[str]:
        """Declared function names, ``[]`` when the request declares none."""
        return [d.get("name", "") for d in self.function_declarations()]

    def function_responses(self) -> list[dict[str, Any]]:
        """``functionResponse`` parts sent back by the client (tool results)."""
        return [
            fr for p in _parts(self.contents) if (fr := _get(p, "functionResponse", "function_response"))
        ]

    def images(self) -> list[InlineImage]:
        """Inline image parts (``inlineData`` with an ``image/*`` mime type)."""
        found: list[InlineImage] = []
        for part in _parts(self.contents):
            inline = _get(part, "inlineData", "inline_data")
            if not isinstance(inline, dict):
                continue
            mime = str(_get(inline, "mimeType", "mime_type") or "")
            if not mime.startswith("image/"):
                continue
            raw = str(inline.get("data") or "")
            try:
                # The SDK serialises bytes as URL-safe base64; accept both alphabets.
                data = base64.b64decode(raw.replace("-", "+").replace("_", "/") + "==")
            except (binascii.Error, ValueError):
                data = b""
            found.append(InlineImage(mime, data))
        return found

    def has_image(self) -> bool:
        return bool(self.images())

    @property
    def is_generate(self) -> bool:
        return self.action in ("generateContent", "streamGenerateContent")

    @property
    def server_ttft_s(self) -> float | None:
        """Server-side arrival -> first chunk written."""
        if self.first_chunk_at is None:
            return None
        return self.first_chunk_at - self.arrived_at


def echo_responder(request: RecordedRequest) -> Reply:
    """A default responder that answers any question by echoing it."""
    return TextReply(text=f"Echo: {request.last_user_text()}")


# --------------------------------------------------------------------------
# Response JSON
# --------------------------------------------------------------------------

_WORD_RE = re.compile(r"\S+\s*|\s+")


def _split_tokens(text: str) -> list[str]:
    # Words with their trailing whitespace: joining the pieces gives back ``text``.
    return _WORD_RE.findall(text)


def _estimate_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4)) if text else 0


def _chunks(tokens: list[str], per_chunk: int) -> list[str]:
    per_chunk = max(1, per_chunk)
    return ["".join(tokens[i : i + per_chunk]) for i in range(0, len(tokens), per_chunk)]


class _Abort(Exception):
    """The server is stopping or the client went away: stop answering this request."""


# --------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # Don't wait for idle keep-alive connections on close; stop() shuts them down.
    block_on_close = False
    # socketserver's default backlog of 5 resets connections when a benchmark opens many at once.
    request_queue_size = 1024

    def __init__(self, address: tuple[str, int], gemini: GeminiServer) -> None:
        self.gemini = gemini
        super().__init__(address, _Handler)


class GeminiServer:
    """Gemini-API-compatible fake server.

    Usage::

        async with GeminiServer(ttft_s=0.0) as server:
            server.enqueue(TextReply(text="Hello there"))
            llm = ChatGoogleGenerativeAI(model="gemini-2.5-flash", google_api_key="test",
                                         base_url=server.url, max_retries=1)
            msg = await llm.ainvoke("hi")
            assert server.last_request.text() == "hi"
    """

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        responder: Responder | None = None,
        default_text: str = "OK",
        ttft_s: float = 0.3,
        tokens_per_s: float | None = 200.0,
        tokens_per_chunk: int = 4,
        models: Sequence[str] | None = None,
        api_key: str | None = None,
        input_token_limit: int = 1048576,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        """
        Args:
            replies: initial scripted replies (FIFO), consumed by generate requests only.
            responder: answers generate requests once the queue is empty; defaults to
                ``TextReply(text=default_text)``. Runs in a server thread, concurrently
                for concurrent requests, so it must be thread-safe and must not touch
                the caller's event loop.
            ttft_s: default delay from request arrival to the first chunk.
            tokens_per_s: default generation speed (words/s); ``None`` = no delay.
            tokens_per_chunk: default words per SSE chunk.
            models: if given, other model names get 404 NOT_FOUND like the real API.
            api_key: if given, requests with another ``x-goog-api-key`` get 400.
            input_token_limit: every model's ``inputTokenLimit`` (``GET .../models/{model}``).
        """
        self.ttft_s = ttft_s
        self.tokens_per_s = tokens_per_s
        self.tokens_per_chunk = tokens_per_chunk
        self.default_text = default_text
        self.responder = responder
        self.models = list(models) if models is not None else None
        self.api_key = api_key
        self.input_token_limit = input_token_limit
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._queue: collections.deque[Reply] = collections.deque(replies)
        self._requests: list[RecordedRequest] = []
        self._new_request = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------
    def start(self) -> GeminiServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _HTTPServer((self._host, self._port), self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"GeminiServer:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._stopping.set()  # wakes stalls and pacing sleeps
        httpd.shutdown()
        with self._lock:
            conns = list(self._connections)
        for conn in conns:  # wake handler threads blocked reading keep-alive connections
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> GeminiServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> GeminiServer:
        return self.start()  # binding and starting a thread do not block

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.stop)  # shutdown() waits for the serve loop

    # -- addresses -------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("GeminiServer is not running")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """Base URL to give the client (``base_url=`` / ``GOOGLE_GEMINI_BASE_URL``)."""
        return f"http://{self._host}:{self.port}"

    def env(self, api_key: str = "test") -> dict[str, str]:
        """Environment variables that point google-genai clients at this server."""
        return {"GOOGLE_GEMINI_BASE_URL": self.url, "GOOGLE_API_KEY": api_key}

    # -- scripting -------------------------------------------------------------
    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending_replies(self) -> int:
        with self._lock:
            return len(self._queue)

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            return self.responder(request)
        return TextReply(text=self.default_text)

    # -- recordings ------------------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request so far (a copy of the list, in arrival order)."""
        with self._lock:
            return list(self._requests)

    @property
    def generate_requests(self) -> list[RecordedRequest]:
        """Only ``generateContent`` / ``streamGenerateContent`` requests."""
        return [r for r in self.requests if r.is_generate]

    @property
    def last_request(self) -> RecordedRequest:
        """The last generate request (raises if there is none)."""
        reqs = self.generate_requests
        if not reqs:
            raise LookupError("no generate request recorded")
        return reqs[-1]

    def clear(self) -> None:
        """Forget recorded requests and queued replies."""
        with self._lock:
            self._requests.clear()
            self._queue.clear()

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until at least ``n`` requests were recorded (call via
        ``asyncio.to_thread`` from async code)."""
        with self._new_request:
            ok = self._new_request.wait_for(lambda: len(self._requests) >= n, timeout)
            if not ok:
                raise TimeoutError(f"{len(self._requests)} requests recorded, expected {n}")
            return list(self._requests)

    def _record(self, request: RecordedRequest) -> None:
        with self._new_request:
            self._requests.append(request)
            self._new_request.notify_all()

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)


_PATH_RE = re.compile(r"^/(?P<ver>v[0-9][a-z0-9]*)/models(?:/(?P<model>[^:/]+)(?::(?P<action>[A-Za-z]+))?)?/?$")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked encoding, as httpx expects
    server_version = "FakeGemini/1.0"
    server: _HTTPServer

    # -- plumbing --------------------------------------------------------------
    @property
    def gemini(self) -> GeminiServer:
        return self.server.gemini

    def setup(self) -> None:
        super().setup()
        # Small SSE writes must leave at once; Nagle + delayed ACK would add ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.gemini._track(self.connection, True)

    def handle(self) -> None:
        try:
            super().handle()
        except ConnectionError:
            pass  # the client reset an idle keep-alive connection: normal, not worth a traceback

    def finish(self) -> None:
        self.gemini._track(self.connection, False)
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # keep test output clean

    def _write(self, data: bytes) -> None:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except OSError as exc:  # BrokenPipe / ConnectionReset: the client gave up
            raise _Abort() from exc

    def _sleep(self, seconds: float) -> None:
        if seconds > 0 and self.gemini._stopping.wait(seconds):
            raise _Abort()

    def _sleep_until(self, deadline: float) -> None:
        self._sleep(deadline - time.perf_counter())

    def _send_json(self, status: int, payload: Any, rec: RecordedRequest | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if rec is not None:
            rec.status = status
            rec.first_chunk_at = rec.completed_at = time.perf_counter()
        self._write(data)

    def _send_error_json(self, code: int, message: str, rec: RecordedRequest | None = None) -> None:
        self._send_json(code, ErrorReply(code=code, message=message).body(), rec)

    def _drop(self) -> None:
        # Abrupt close: no terminating chunk, no further requests on this connection.
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # -- request dispatch --------------------------------------------------------
    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        arrived_at, arrived_wall = time.perf_counter(), time.time()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        split = urlsplit(self.path)
        match = _PATH_RE.match(split.path)
        model = match["model"] if match else None
        action = match["action"] if match else None
        streamed = action == "streamGenerateContent"
        body: dict[str, Any] | None = None
        bad_json = False
        if raw:
            try:
                parsed = json.loads(raw)
                body = parsed if isinstance(parsed, dict) else {"_": parsed}
            except ValueError:
                bad_json = True
        rec = RecordedRequest(
            method=method,
            path=self.path,
            model=model,
            action=action,
            streamed=streamed,
            body=body,
            headers={k.lower(): v for k, v in self.headers.items()},
            arrived_at=arrived_at,
            arrived_wall=arrived_wall,
        )
        self.gemini._record(rec)
        try:
            self._route(rec, method, match, split.query, bad_json)
        except (_Abort, OSError):  # OSError: headers written straight to a dead socket
            rec.client_disconnected = not self.gemini._stopping.is_set()
            self.close_connection = True

    def _route(
        self,
        rec: RecordedRequest,
        method: str,
        match: re.Match[str] | None,
        query: str,
        bad_json: bool,
    ) -> None:
        g = self.gemini
        if match is None:
            self._send_error_json(404, f"Unknown path {rec.path}", rec)
            return
        key = self.headers.get("x-goog-api-key") or parse_qs(query).get("key", [None])[0]
        if g.api_key is not None and key != g.api_key:
            # As Google answers a bad key: 400 INVALID_ARGUMENT, with the reason in an ErrorInfo.
            reply = ErrorReply(code=400, message="API key not valid. Please pass a valid API key.", reason="API_KEY_INVALID")
            self._send_json(400, reply.body(), rec)
            return
        model = rec.model
        if model is not None and g.models is not None and model not in g.models:
            self._send_error_json(
                404,
                f"models/{model} is not found for API version {match['ver']}, or is not "
                "supported for generateContent.",
                rec,
            )
            return
        action = rec.action
        if method == "GET":
            if action is not None:
                self._send_error_json(404, f"Unknown path {rec.path}", rec)
            elif model is None:
                names = g.models or ["gemini-2.5-flash", "gemini-2.5-pro"]
                self._send_json(200, {"models": [_model_info(n, g.input_token_limit) for n in names]}, rec)
            else:
                self._send_json(200, _model_info(model, g.input_token_limit), rec)
            return
        if bad_json:
            self._send_error_json(400, "Invalid JSON payload received.", rec)
            return
        if action == "countTokens":
            # countTokens wraps the request as {"contents": ...} or {"generateContentRequest": ...}.
            inner = (rec.body or {}).get("generateContentRequest") or rec.body or {}
            view = RecordedRequest("POST", rec.path, model, action, False, inner, {}, 0.0, 0.0)
            n = _estimate_tokens(view.text() + view.system_text())
            self._send_json(
                200, {"totalTokens": n, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": n}]}, rec
            )
            return
        if action not in ("generateContent", "streamGenerateContent") or model is None:
            self._send_error_json(404, f"Unknown method {action!r}", rec)
            return
        if problem := _turn_structure_problem(rec.contents):
            self._send_error_json(400, problem, rec)  # the real API's check: see _turn_structure_problem
            return
        try:
            reply = g._next_reply(rec)
        except Exception as exc:  # a broken responder is a test bug: say so loudly
            self._send_error_json(500, f"responder raised {exc!r}", rec)
            return
        rec.reply = reply
        _Generation(self, rec, reply).run()


def _turn_structure_problem(contents: list[dict[str, Any]]) -> str | None:
    """The pairing rules the real API enforces with a 400 INVALID_ARGUMENT:
    every function call turn is answered by as many function responses in the
    next turn, and function responses only ever answer such a turn. A client
    that prunes history carelessly (orphaned calls or results) fails here as
    it would against Gemini."""
    calls_before = 0
    for content in contents:
        parts = content.get("parts") or []
        responses = sum(1 for p in parts if _get(p, "functionResponse", "function_response"))
        if responses != calls_before:
            return (
                "Please ensure that the number of function response parts is equal to the number "
                "of function call parts of the function call turn."
            )
        calls = sum(1 for p in parts if _get(p, "functionCall", "function_call"))
        if calls and content.get("role") != "model":
            return "Function calls can only appear in model turns."
        calls_before = calls
    if calls_before:
        return "Please ensure that function call turn is followed by a function response turn."
    return None


def _model_info(name: str, input_token_limit: int = 1048576) -> dict[str, Any]:
    return {
        "name": f"models/{name}",
        "version": "001",
        "displayName": name,
        "description": "Fake model served by chatagent.testing.gemini_server",
        "inputTokenLimit": input_token_limit,
        "outputTokenLimit": 65536,
        "supportedGenerationMethods": ["generateContent", "countTokens"],
    }


class _Generation:
    """Answers one generate request with a reply, streamed or not."""

    def __init__(self, handler: _Handler, rec: RecordedRequest, reply: Reply) -> None:
        self.h = handler
        self.rec = rec
        self.reply = reply
        g = handler.gemini
        paced = reply if isinstance(reply, _Paced) else _Paced()
        self.ttft_s = g.ttft_s if paced.ttft_s is None else paced.ttft_s
        self.tokens_per_s = g.tokens_per_s if paced.tokens_per_s is None else paced.tokens_per_s
        self.per_chunk = g.tokens_per_chunk if paced.tokens_per_chunk is None else paced.tokens_per_chunk
        self.response_id = uuid.uuid4().hex[:22]
        self.prompt_tokens = _estimate_tokens(rec.text() + rec.system_text())
        self.out_tokens = 0
        self.headers_sent = False
        self.next_at = 0.0  # perf_counter when the next chunk is due

    # -- JSON ------------------------------------------------------------------
    def _payload(self, parts: list[dict[str, Any]], finish_reason: str | None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish_reason:
            candidate["finishReason"] = finish_reason
        # Usage is cumulative per chunk, like the real API (LangChain subtracts).
        return {
            "candidates": [candidate],
            "usageMetadata": self._usage(),
            "modelVersion": self.rec.model or "unknown",
            "responseId": self.response_id,
        }

    def _usage(self) -> dict[str, int]:
        return {
            "promptTokenCount": self.prompt_tokens,
            "candidatesTokenCount": self.out_tokens,
            "totalTokenCount": self.prompt_tokens + self.out_tokens,
        }

    def _blocked_payload(self, r: BlockedReply) -> dict[str, Any]:
        feedback: dict[str, Any] = {"blockReason": r.reason, "safetyRatings": _ratings(r.categories)}
        if r.message is not None:
            feedback["blockReasonMessage"] = r.message
        return {"promptFeedback": feedback, "usageMetadata": self._usage(),
                "modelVersion": self.rec.model or "unknown", "responseId": self.response_id}

    def _finish_payload(self, r: FinishReply, text: str = "") -> dict[str, Any]:
        payload = self._payload([{"text": text}] if text else [], r.finish_reason)
        candidate = payload["candidates"][0]
        if not text:
            del candidate["content"]  # the real API sends no content at all here
        candidate["safetyRatings"] = _ratings(r.categories)
        return payload

    def _chunk_delay(self) -> float:
        if not self.tokens_per_s:
            return 0.0
        return self.per_chunk / self.tokens_per_s

    # -- streaming primitives ----------------------------------------------------
    def _stream_headers(self) -> None:
        if self.headers_sent:
            return
        h = self.h
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Transfer-Encoding", "chunked")
        h.send_header("Cache-Control", "no-cache")
        h.end_headers()  # end_headers() flushes through the unbuffered wfile
        self.headers_sent = True
        self.rec.status = 200

    def _http_chunk(self, data: bytes) -> None:
        # One write per chunk so each SSE event leaves in one TCP segment.
        self.h._write(b"%x\r\n%s\r\n" % (len(data), data))

    def _event(self, payload: dict[str, Any] | str) -> None:
        """Write one SSE event when it is due; first event at arrival + TTFT."""
        if self.rec.first_chunk_at is None:
            self.h._sleep_until(self.rec.arrived_at + self.ttft_s)
        else:
            self.h._sleep_until(self.next_at)
        self._stream_headers()
        text = payload if isinstance(payload, str) else json.dumps(payload)
        data = f"data: {text}\r\n\r\n".encode()
        if self.rec.first_chunk_at is None:
            # Stamped just before the write so it never postdates the client's receipt.
            self.rec.first_chunk_at = self.next_at = time.perf_counter()
        self._http_chunk(data)
        self.next_at += self._chunk_delay()

    def _stream_text(self, text: str, final: str | None) -> None:
        """Stream ``text``; the last chunk carries ``final`` as finishReason."""
        chunks = _chunks(_split_tokens(text), self.per_chunk)
        for i, chunk in enumerate(chunks):
            self.out_tokens += _estimate_tokens(chunk)
            last = i == len(chunks) - 1
            self._event(self._payload([{"text": chunk}], final if last else None))

    def _end_stream(self) -> None:
        self.rec.completed_at = time.perf_counter()
        self.h._write(b"0\r\n\r\n")

    # -- replies -----------------------------------------------------------------
    def run(self) -> None:
        r = self.reply
        if isinstance(r, ErrorReply):
            self.h._sleep(r.delay_s)
            self.h._send_json(r.code, r.body(self.rec.headers), self.rec)
        elif self.rec.streamed:
            self._run_stream(r)
        else:
            self._run_unary(r)

    def _run_stream(self, r: Reply) -> None:
        if isinstance(r, TextReply):
            self._stream_text(r.text, r.finish_reason)
            if not r.text:
                self._event(self._payload([{"text": ""}], r.finish_reason))
            self._end_stream()
        elif isinstance(r, FunctionCallReply):
            self._stream_text(r.text, None)
            self.out_tokens += sum(_estimate_tokens(json.dumps(c.args)) + 2 for c in r.calls)
            self._event(self._payload([_call_part(c) for c in r.calls], r.finish_reason))
            self._end_stream()
        elif isinstance(r, StallReply):
            self._stream_text(r.text_before, None if r.text_after else "STOP")
            if not r.text_before:
                self.h._sleep_until(self.rec.arrived_at + self.ttft_s)
                self._stream_headers()
            self.h._sleep(r.stall_s)
            if r.text_after:
                self.next_at = time.perf_counter()  # resume at once after the stall
                self._stream_text(r.text_after, "STOP")
            self._end_stream()
        elif isinstance(r, MalformedReply):
            self._stream_text(r.text_before, None)
            self._event(r.raw)
            self._end_stream()
        elif isinstance(r, RawReply):
            for chunk in r.chunks:
                self._event(json.dumps(chunk))
            if not r.chunks:
                self.h._sleep_until(self.rec.arrived_at + self.ttft_s)
                self._stream_headers()
            self._end_stream()
        elif isinstance(r, BlockedReply):
            self._event(self._blocked_payload(r))
            self._end_stream()
        elif isinstance(r, FinishReply):
            self._stream_text(r.text_before, None)
            self._event(self._finish_payload(r))
            self._end_stream()
        elif isinstance(r, DropReply):
            if r.send_headers:
                self._stream_text(r.text_before, None)
                if not r.text_before:
                    self.h._sleep_until(self.rec.arrived_at + self.ttft_s)
                    self._stream_headers()
            else:
                self.h._sleep_until(self.rec.arrived_at + self.ttft_s)
            self.h._drop()
        else:  # pragma: no cover - exhaustive over Reply
            raise TypeError(f"unknown reply {r!r}")

    def _run_unary(self, r: Reply) -> None:
        # The whole answer arrives at once after TTFT plus the generation time.
        h = self.h
        text = ""
        parts: list[dict[str, Any]] = []
        finish = "STOP"
        if isinstance(r, TextReply):
            text, finish = r.text, r.finish_reason
        elif isinstance(r, FunctionCallReply):
            text, finish = r.text, r.finish_reason
        elif isinstance(r, (StallReply, MalformedReply, DropReply, FinishReply)):
            text = r.text_before
        if text:
            parts.append({"text": text})
        if isinstance(r, FunctionCallReply):
            parts.extend(_call_part(c) for c in r.calls)
        if not parts:
            parts.append({"text": ""})
        n_chunks = len(_chunks(_split_tokens(text), self.per_chunk))
        h._sleep_until(self.rec.arrived_at + self.ttft_s + max(0, n_chunks - 1) * self._chunk_delay())
        self.out_tokens = _estimate_tokens(text)
        if isinstance(r, DropReply) and not r.send_headers:
            h._drop()
            return
        if isinstance(r, MalformedReply):
            data = r.raw.encode()
        elif isinstance(r, RawReply):
            data = json.dumps(r.chunks[0] if r.chunks else {}).encode()
        elif isinstance(r, BlockedReply):
            data = json.dumps(self._blocked_payload(r)).encode()
        elif isinstance(r, FinishReply):
            data = json.dumps(self._finish_payload(r, text)).encode()
        else:
            if isinstance(r, StallReply) and r.text_after:
                parts = [{"text": text + r.text_after}]
            data = json.dumps(self._payload(parts, finish)).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/json; charset=UTF-8")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        self.rec.status = 200
        if isinstance(r, StallReply):
            h._sleep(r.stall_s)  # headers are out, the body is held back
        self.rec.first_chunk_at = time.perf_counter()
        if isinstance(r, DropReply):
            h._write(data[: len(data) // 2])
            h._drop()
            return
        self.rec.completed_at = time.perf_counter()
        h._write(data)


def _ratings(categories: Sequence[str]) -> list[dict[str, Any]]:
    return [{"category": c, "probability": "HIGH", "blocked": True} for c in categories]


def _call_part(call: FunctionCall) -> dict[str, Any]:
    fc: dict[str, Any] = {"name": call.name, "args": call.args}
    if call.id is not None:
        fc["id"] = call.id
    return {"functionCall": fc}


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m chatagent.testing.gemini_server",
        description="Serve a fake Gemini API until Ctrl-C.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 = pick a free port")
    parser.add_argument("--ttft-ms", type=float, default=300.0, help="time to first token")
    parser.add_argument("--tokens-per-s", type=float, default=100.0, help="0 = no pacing")
    parser.add_argument("--tokens-per-chunk", type=int, default=4)
    parser.add_argument("--text", default=None, help="fixed answer (default: echo the question)")
    parser.add_argument("--api-key", default=None, help="require this API key")
    args = parser.parse_args(argv)

    fixed_text: str | None = args.text

    def responder(request: RecordedRequest) -> Reply:
        return echo_responder(request) if fixed_text is None else TextReply(text=fixed_text)

    server = GeminiServer(
        responder=responder,
        ttft_s=args.ttft_ms / 1000.0,
        tokens_per_s=args.tokens_per_s or None,
        tokens_per_chunk=args.tokens_per_chunk,
        api_key=args.api_key,
        host=args.host,
        port=args.port,
    )
    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt  # SIGTERM stops as cleanly as Ctrl-C

    signal.signal(signal.SIGTERM, interrupt)
    with server:
        # Ctrl-C is taken from the first line printed on: whoever reads that line may
        # stop the server at once, before this thread has reached its sleep.
        try:
            print(f"Fake Gemini API at {server.url}", file=sys.stderr)
            print(f"  export GOOGLE_GEMINI_BASE_URL={server.url} GOOGLE_API_KEY=test", file=sys.stderr)
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
