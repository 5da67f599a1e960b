"""Stand-ins for OpenAI-compatible model servers, for the real client
(``langchain_openai.ChatOpenAI``) and for chatagent's questions to each
server's own API: llama.cpp's server (``/props``, ``/tokenize``), LM Studio
(``/api/v0/models``, ``/api/v1/models``) and vLLM (``/v1/models`` with
``max_model_len``); Ollama's is ``ollama_server.OllamaServer``.

Each runs a model with a window and treats a prompt longer than it as its
server does: llama.cpp and vLLM refuse it (400, in their words), LM Studio
and Ollama cut it silently; every request is recorded with its tokens
(cl100k, of the messages' text) and the window it met. Replies are scripted
(`ChatReply`: text, or tool calls), streamed as server-sent events with usage
when asked (``stream_options.include_usage``), or sent whole.

    with LlamaCppServer(n_ctx=2048) as server:           # a free port on 127.0.0.1
        settings = Settings(model="openai:local", openai_base_url=server.url)
        ...
        assert all(r.fits for r in server.chat_requests)

A stdlib ``ThreadingHTTPServer`` on a background thread: it never blocks the
caller's event loop.
"""

from __future__ import annotations

import asyncio
import collections
import json
import math
import select
import socket
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar
from urllib.parse import unquote, urlsplit

STOP_GRACE_S = 5.0  # how long `stop` waits for the replies still going to see their clients gone


@dataclass(frozen=True)
class ToolCall:
    name: str
    args: dict[str, Any] = field(default_factory=dict)
    id: str | None = None  # made up when None


@dataclass(frozen=True)
class ChatReply:
    """One answer: `text`, streamed a few words a chunk, then `tool_calls` if any."""

    text: str = ""
    tool_calls: Sequence[ToolCall] = ()


class HostileReply:
    """A reply that writes its own stream, as a broken or hostile server would
    (`send`: the events after the first, role-only one)."""

    def send(self, handler: _Handler, chunk: Any) -> None:
        raise NotImplementedError


@dataclass(frozen=True)
class StallReply(HostileReply):
    """`text`, then nothing for `stall_s` (the connection held open, an SSE
    comment every `keepalive_s` if set: bytes, but no chunk), then the end."""

    text: str = ""
    stall_s: float = 600.0
    keepalive_s: float | None = None

    def send(self, handler: _Handler, chunk: Any) -> None:
        if self.text:
            handler.write_event(chunk({"content": self.text}))
        end = time.monotonic() + self.stall_s
        while (left := end - time.monotonic()) > 0 and not handler.hung_up(min(left, self.keepalive_s or 0.05)):
            if self.keepalive_s:
                handler.write_raw(b": keep-alive\n\n")


@dataclass(frozen=True)
class EmptyChunkFlood(HostileReply):
    """`chunks` chunks with no content at all (None: until the client hangs up), `per_write`
    at a time, every `pace_s` (0: as fast as the socket takes them)."""

    chunks: int | None = None
    per_write: int = 64
    pace_s: float = 0.0

    def send(self, handler: _Handler, chunk: Any) -> None:
        empty = f"data: {json.dumps(chunk({'content': ''}))}\n\n".encode() * self.per_write
        sent = 0
        while (self.chunks is None or sent < self.chunks) and not handler.gone:
            handler.write_raw(empty)
            sent += self.per_write
            if self.pace_s:
                time.sleep(self.pace_s)


@dataclass(frozen=True)
class ToolCallFlood(HostileReply):
    """One reply asking for `calls` tool calls (`scroll_tool`), each in its own chunks, as OpenAI streams them."""

    calls: int = 5000
    name: str = "scroll_tool"

    def send(self, handler: _Handler, chunk: Any) -> None:
        for i in range(self.calls):
            if handler.gone:
                return
            handler.write_event(chunk({"tool_calls": [{"index": i, "id": f"call_{i}", "type": "function",
                                                       "function": {"name": self.name, "arguments": ""}}]}))
            for piece in ('{"tab_id": ', '"1", "direction": ', '"down"}'):
                handler.write_event(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
        handler.write_event(chunk({}, "tool_calls"))


@dataclass(frozen=True)
class HugeArgument(HostileReply):
    """One tool call whose argument is `mb` MB of text, in pieces of `piece_bytes`."""

    mb: float = 50.0
    piece_bytes: int = 4096
    name: str = "scroll_tool"

    def send(self, handler: _Handler, chunk: Any) -> None:
        handler.write_event(chunk({"tool_calls": [{"index": 0, "id": "call_0", "type": "function",
                                                   "function": {"name": self.name, "arguments": '{"to_text": "'}}]}))
        piece = "x" * self.piece_bytes
        for _ in range(int(self.mb * 1_000_000 / self.piece_bytes)):
            if handler.gone:
                return
            handler.write_event(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
        handler.write_event(chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"}'}}]}))
        handler.write_event(chunk({}, "tool_calls"))


@dataclass
class Recorded:
    """One request as the server received it."""

    method: str
    path: str
    body: Any
    headers: dict[str, str]
    status: int | None = None  # set once answered
    prompt_tokens: int = 0  # chat requests: cl100k tokens of the messages' text (images not counted)
    window: int | None = None  # chat requests: the window the model ran with (None: unbounded)
    truncated: bool = False  # chat requests: cut to fit (Ollama, LM Studio), as the server does silently
    hung_up: bool = False  # a hostile reply, or an endless answer: the client closed the connection before its end
    sent_bytes: int = 0  # an endless answer: what went out before the client hung up
    at: float = field(default_factory=time.monotonic)  # when it arrived (time.monotonic)

    @property
    def is_chat(self) -> bool:
        return self.method == "POST" and self.path.rstrip("/").endswith("/chat/completions")

    @property
    def fits(self) -> bool:
        """Whether the prompt fitted the window it met."""
        return self.window is None or self.prompt_tokens <= self.window

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, dict) else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        found = self.body.get("messages") if isinstance(self.body, dict) else None
        return [m for m in found if isinstance(m, dict)] if isinstance(found, list) else []

    def text(self) -> str:
        """Every message's text, in order."""
        return "\n".join(message_text(m) for m in self.messages)

    def tool_names(self) -> list[str]:
        tools = self.body.get("tools") if isinstance(self.body, dict) else None
        return [t.get("function", {}).get("name", "") for t in tools or [] if isinstance(t, dict)]


def message_text(message: dict[str, Any]) -> str:
    """A chat message's text: its content (string or text parts) and its tool calls' arguments."""
    content = message.get("content")
    parts = [content] if isinstance(content, str) else [
        p.get("text", "") for p in content or [] if isinstance(p, dict) and p.get("type") == "text"]
    for call in message.get("tool_calls") or []:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        parts.append(f"{function.get('name', '')} {function.get('arguments', '')}")
    return "\n".join(p for p in parts if p)


def count_tokens(text: str) -> int:
    from ..tokens import count_tokens as cl100k

    return cl100k(text)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], standin: OpenAICompatibleServer) -> None:
        self.standin = standin
        super().__init__(address, _Handler)


class OpenAICompatibleServer:
    """An OpenAI-compatible server serving `models`, each with a window of
    `window` tokens (None: unbounded); subclasses are a kind of server."""

    owned_by: ClassVar[str] = "organization-owner"

    def __init__(self, models: Sequence[str] = ("local",), *, window: int | None = None,
                 replies: Iterable[ChatReply | HostileReply] = (), default_text: str = "OK", words_per_chunk: int = 3,
                 host: str = "127.0.0.1", port: int = 0) -> None:
        self.models = list(models)
        self.window = window
        self.default_text = default_text
        self.words_per_chunk = words_per_chunk
        self._host, self._port = host, port
        self._lock = threading.Lock()
        self._queue: collections.deque[ChatReply | HostileReply] = collections.deque(replies)
        self._requests: list[Recorded] = []
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()
        self._replying = 0  # requests being answered now
        self._answered = threading.Condition(self._lock)
        self._stopping = False  # connections closed by `stop`: a reply cut then was not hung up on

    # -- lifecycle -------------------------------------------------------------
    def start(self) -> OpenAICompatibleServer:
        if self._httpd is None:
            self._stopping = False
            self._httpd = _HTTPServer((self._host, self._port), self)
            self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                            name=f"{type(self).__name__}:{self.port}", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        with self._lock:
            # A reply still going ends once it sees its client gone, and says so (`hung_up`): a
            # busy machine may take a while to show it. One that goes on is cut, not hung up on.
            self._answered.wait_for(lambda: not self._replying, timeout=STOP_GRACE_S)
            self._stopping = True
            conns = list(self._connections)
        for conn in conns:  # wake handlers blocked on keep-alive connections
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> OpenAICompatibleServer:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    async def __aenter__(self) -> OpenAICompatibleServer:
        return self.start()

    async def __aexit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        await asyncio.to_thread(self.stop)

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError(f"{type(self).__name__} is not running")
        return int(self._httpd.server_address[1])

    @property
    def root(self) -> str:
        return f"http://{self._host}:{self.port}"

    @property
    def url(self) -> str:
        """The OpenAI-compatible base URL (`openai_base_url`)."""
        return f"{self.root}/v1"

    # -- scripting and recordings -------------------------------------------------
    def enqueue(self, *replies: ChatReply | HostileReply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def _next_reply(self) -> ChatReply | HostileReply:
        with self._lock:
            return self._queue.popleft() if self._queue else ChatReply(text=self.default_text)

    @property
    def requests(self) -> list[Recorded]:
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.is_chat]

    def paths(self) -> list[str]:
        """Every request's method and path, in order: `GET /api/ps`."""
        return [f"{r.method} {r.path}" for r in self.requests]

    def _record(self, rec: Recorded) -> None:
        with self._lock:
            self._requests.append(rec)

    # -- what a kind of server overrides ------------------------------------------
    def serves(self, model: str) -> bool:
        return model in self.models

    def window_for(self, model: str) -> int | None:
        """The window `model` runs with, as a request meets it (and loads it)."""
        return self.window

    def count(self, text: str) -> int:
        """`text`'s tokens as the model served counts them (cl100k here)."""
        return count_tokens(text)

    def model_entry(self, model: str) -> dict[str, Any]:
        """`model`'s entry in `GET /v1/models`."""
        return {"id": model, "object": "model", "created": 1_700_000_000, "owned_by": self.owned_by}

    def refuse(self, rec: Recorded) -> tuple[int, dict[str, Any]] | None:
        """The answer to a prompt longer than its window, if the server refuses it; None: it cuts it silently."""
        return None

    def route(self, handler: _Handler, rec: Recorded) -> bool:
        """Serve a path of the server's own API; False: not one."""
        return False

    def not_found(self, model: str) -> dict[str, Any]:
        return {"error": {"message": f"The model `{model}` does not exist.", "type": "invalid_request_error",
                          "code": "model_not_found"}}

    # -- chat -------------------------------------------------------------------------
    def _chat(self, handler: _Handler, rec: Recorded) -> None:
        body = rec.body if isinstance(rec.body, dict) else {}
        model = str(body.get("model", ""))
        if not self.serves(model):
            handler.send_json(404, self.not_found(model), rec)
            return
        rec.window = self.window_for(model)
        rec.prompt_tokens = self.count(rec.text())
        if not rec.fits:
            refused = self.refuse(rec)
            if refused is not None:
                handler.send_json(*refused, rec)
                return
            rec.truncated = True
        reply = self._next_reply()
        if isinstance(reply, HostileReply):
            self._hostile(handler, rec, reply, model)
            return
        prompt = min(rec.prompt_tokens, rec.window) if rec.window else rec.prompt_tokens
        usage = {"prompt_tokens": prompt, "completion_tokens": max(1, count_tokens(reply.text)),
                 "total_tokens": prompt + max(1, count_tokens(reply.text))}
        calls = [{"id": c.id or f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                  "function": {"name": c.name, "arguments": json.dumps(c.args)}} for c in reply.tool_calls]
        finish = "tool_calls" if calls else "stop"
        ident, created = f"chatcmpl-{uuid.uuid4().hex[:12]}", int(time.time())
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": reply.text}
            if calls:
                message["tool_calls"] = calls
            handler.send_json(200, {"id": ident, "object": "chat.completion", "created": created, "model": model,
                                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                                    "usage": usage}, rec)
            return

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

        words = reply.text.split(" ")
        pieces = [" ".join(words[i:i + self.words_per_chunk]) + (" " if i + self.words_per_chunk < len(words) else "")
                  for i in range(0, len(words), self.words_per_chunk)] if reply.text else []
        events = [chunk({"role": "assistant", "content": ""})]
        events += [chunk({"content": piece}) for piece in pieces]
        events += [chunk({"tool_calls": [{**call, "index": i}]}) for i, call in enumerate(calls)]
        events.append(chunk({}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append({"id": ident, "object": "chat.completion.chunk", "created": created, "model": model,
                           "choices": [], "usage": usage})
        handler.send_events(events, rec)


    def _hostile(self, handler: _Handler, rec: Recorded, reply: HostileReply, model: str) -> None:
        ident, created = f"chatcmpl-{uuid.uuid4().hex[:12]}", int(time.time())

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

        handler.start_events(rec)
        try:
            handler.write_event(chunk({"role": "assistant", "content": ""}))
            reply.send(handler, chunk)
            handler.write_raw(b"data: [DONE]\n\n")
        except OSError:  # the client hung up: what a hostile reply is for
            handler.gone = True
        rec.hung_up = handler.client_gone
        handler.close_connection = True


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        with self.server.standin._lock:
            self.server.standin._connections.add(self.connection)

    def finish(self) -> None:
        with self.server.standin._lock:
            self.server.standin._connections.discard(self.connection)
        super().finish()

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        standin = self.server.standin
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        rec = Recorded(method, unquote(urlsplit(self.path).path), body, {k.lower(): v for k, v in self.headers.items()})
        with standin._lock:
            standin._replying += 1
        try:
            standin._record(rec)
            self._answer(standin, rec, method)
        finally:
            with standin._lock:
                standin._replying -= 1
                standin._answered.notify_all()

    def _answer(self, standin: OpenAICompatibleServer, rec: Recorded, method: str) -> None:
        if standin.route(self, rec):
            return
        if method == "GET" and rec.path.rstrip("/") == "/v1/models":
            self.send_json(200, {"object": "list", "data": [standin.model_entry(m) for m in standin.models]}, rec)
        elif method == "GET" and rec.path.startswith("/v1/models/"):
            model = rec.path.removeprefix("/v1/models/")
            if standin.serves(model):
                self.send_json(200, standin.model_entry(model), rec)
            else:
                self.send_json(404, standin.not_found(model), rec)
        elif rec.is_chat and rec.path.startswith("/v1/"):
            standin._chat(self, rec)
        else:
            self.send_json(404, {"error": {"message": f"Not found: {rec.path}", "type": "not_found_error"}}, rec)

    def send_json(self, status: int, body: Any, rec: Recorded) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        rec.status = status

    gone = False  # the client hung up (a hostile reply stops writing)

    def start_events(self, rec: Recorded) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        rec.status = 200

    @property
    def client_gone(self) -> bool:
        """Whether the client closed the connection (not `stop`)."""
        return self.gone and not self.server.standin._stopping

    def hung_up(self, wait_s: float) -> bool:
        """Whether the client closed its end, waiting up to `wait_s` to see."""
        if not self.gone and select.select([self.connection], [], [], wait_s)[0]:
            try:
                self.gone = self.connection.recv(1, socket.MSG_PEEK) == b""
            except OSError:
                self.gone = True
        return self.gone

    def write_event(self, event: dict[str, Any]) -> None:
        self.write_raw(f"data: {json.dumps(event)}\n\n".encode())

    def write_raw(self, data: bytes) -> None:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:
            self.gone = True

    def send_endless(self, head: bytes, piece: bytes, rec: Recorded) -> None:
        """A 200 JSON answer that starts with `head` and goes on with `piece` until the client hangs up."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        rec.status = 200
        chunk = b"%x\r\n%s\r\n" % (len(piece), piece)
        self.write_raw(b"%x\r\n%s\r\n" % (len(head), head))
        while not self.gone:
            self.write_raw(chunk)
            rec.sent_bytes += len(piece)
        rec.hung_up = self.client_gone
        self.close_connection = True

    def send_events(self, events: list[dict[str, Any]], rec: Recorded) -> None:
        self.start_events(rec)
        for event in events:
            self.write_event(event)
        self.write_raw(b"data: [DONE]\n\n")
        self.close_connection = True


# --- kinds of servers ----------------------------------------------------------------------


class LlamaCppServer(OpenAICompatibleServer):
    """llama.cpp's `llama-server` run with `-c n_ctx` (one slot): `/props`
    says `n_ctx`, `/tokenize` counts (cl100k here), `/v1/models` gives the
    model's own `n_ctx_train`; a prompt longer than `n_ctx` is refused with
    its `exceed_context_size_error`. It answers any model name. With `token_ratio`,
    its model's tokenizer counts that many times cl100k's tokens (a smaller vocabulary's,
    as SmolLM2's), in /tokenize and against `n_ctx` alike."""

    owned_by = "llamacpp"

    def __init__(self, *, n_ctx: int = 4096, n_ctx_train: int = 8192, alias: str = "local", props: bool = True,
                 token_ratio: float = 1.0, endless_tokenize: bool = False, **kwargs: Any) -> None:
        super().__init__([alias], window=n_ctx, **kwargs)
        self.n_ctx_train = n_ctx_train
        # A hostile or broken server: `/tokenize` answers a list of tokens that never ends.
        self.endless_tokenize = endless_tokenize
        self.props = props  # False: a server without /props (as llama-cpp-python's)
        self.token_ratio = token_ratio

    def count(self, text: str) -> int:
        return math.ceil(count_tokens(text) * self.token_ratio)

    def serves(self, model: str) -> bool:
        return True

    def model_entry(self, model: str) -> dict[str, Any]:
        return {**super().model_entry(model), "meta": {"n_ctx_train": self.n_ctx_train, "n_vocab": 100_277}}

    def refuse(self, rec: Recorded) -> tuple[int, dict[str, Any]] | None:
        return 400, {"error": {"code": 400, "type": "exceed_context_size_error",
                               "message": "the request exceeds the available context size, try increasing it",
                               "n_prompt_tokens": rec.prompt_tokens, "n_ctx": rec.window}}

    def route(self, handler: _Handler, rec: Recorded) -> bool:
        if rec.method == "GET" and rec.path == "/props" and self.props:
            handler.send_json(200, {"default_generation_settings": {"n_ctx": self.window, "params": {"n_predict": -1}},
                                    "total_slots": 1, "model_path": f"/models/{self.models[0]}.gguf",
                                    "build_info": "b0000-standin"}, rec)
            return True
        if rec.method == "POST" and rec.path in ("/tokenize", "/extras/tokenize") and self.endless_tokenize:
            handler.send_endless(b'{"tokens": [', b"1, " * 20_000, rec)
            return True
        if rec.method == "POST" and rec.path == "/tokenize":
            text = rec.body.get("content", "") if isinstance(rec.body, dict) else ""
            handler.send_json(200, {"tokens": list(range(self.count(str(text))))}, rec)
            return True
        if rec.method == "GET" and rec.path == "/health":
            handler.send_json(200, {"status": "ok"}, rec)
            return True
        return False


class VLLMServer(OpenAICompatibleServer):
    """vLLM run with `--max-model-len`: `/v1/models` says `max_model_len`; a
    prompt longer than it is refused (400, in vLLM's words)."""

    owned_by = "vllm"

    def __init__(self, models: Sequence[str] = ("Qwen/Qwen2.5-7B-Instruct",), *, max_model_len: int = 8192,
                 **kwargs: Any) -> None:
        super().__init__(models, window=max_model_len, **kwargs)

    def model_entry(self, model: str) -> dict[str, Any]:
        return {**super().model_entry(model), "root": model, "parent": None, "max_model_len": self.window,
                "permission": []}

    def refuse(self, rec: Recorded) -> tuple[int, dict[str, Any]] | None:
        return 400, {"object": "error", "type": "BadRequestError", "param": None, "code": 400,
                     "message": f"This model's maximum context length is {rec.window} tokens. However, you requested "
                                f"{rec.prompt_tokens} tokens in the messages. Please reduce the length of the messages."}


@dataclass
class LMStudioModel:
    id: str
    max_context_length: int = 32_768
    loaded_context_length: int | None = None  # None: not loaded (a request loads it with `default_context`)


class LMStudioServer(OpenAICompatibleServer):
    """LM Studio: `/api/v0/models` (`state`, `max_context_length`,
    `loaded_context_length` once loaded) and `/api/v1/models` (`loaded_instances`);
    a request for a model not loaded loads it with `default_context` tokens.
    A prompt longer than the window is cut silently (recorded `truncated`)."""

    owned_by = "organization_owner"

    def __init__(self, models: Sequence[LMStudioModel] = (LMStudioModel("qwen2.5-7b-instruct"),), *,
                 default_context: int = 4096, v0: bool = True, **kwargs: Any) -> None:
        self.lm_models = {m.id: m for m in models}
        self.default_context = default_context
        self.v0 = v0  # False: a server with only the v1 REST API
        super().__init__(list(self.lm_models), **kwargs)

    def window_for(self, model: str) -> int | None:
        spec = self.lm_models[model]
        if spec.loaded_context_length is None:
            spec.loaded_context_length = min(self.default_context, spec.max_context_length)
        return spec.loaded_context_length

    def _v0(self, spec: LMStudioModel) -> dict[str, Any]:
        entry: dict[str, Any] = {"id": spec.id, "object": "model", "type": "llm", "publisher": "lmstudio-community",
                                 "arch": "qwen2", "compatibility_type": "gguf", "quantization": "Q4_K_M",
                                 "state": "loaded" if spec.loaded_context_length else "not-loaded",
                                 "max_context_length": spec.max_context_length}
        if spec.loaded_context_length:
            entry["loaded_context_length"] = spec.loaded_context_length
        return entry

    def route(self, handler: _Handler, rec: Recorded) -> bool:
        if rec.method != "GET":
            return False
        if self.v0 and rec.path == "/api/v0/models":
            handler.send_json(200, {"object": "list", "data": [self._v0(m) for m in self.lm_models.values()]}, rec)
            return True
        if self.v0 and rec.path.startswith("/api/v0/models/"):
            spec = self.lm_models.get(rec.path.removeprefix("/api/v0/models/"))
            if spec is None:
                handler.send_json(404, {"error": "Model not found"}, rec)
            else:
                handler.send_json(200, self._v0(spec), rec)
            return True
        if rec.path == "/api/v1/models":
            handler.send_json(200, {"models": [{
                "type": "llm", "key": m.id, "display_name": m.id, "max_context_length": m.max_context_length,
                "loaded_instances": [{"id": m.id, "config": {"context_length": m.loaded_context_length}}]
                if m.loaded_context_length else [],
            } for m in self.lm_models.values()]}, rec)
            return True
        return False
