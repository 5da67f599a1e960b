"""`chatagent models`: what each provider serves here, asked of its server,
and a connection test for one model that says what is wrong in words."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from chatagent.testing.ports import free_port
from chatagent.models import load_model, provider_for
from chatagent.models.catalog import check
from chatagent.settings import Settings
from chatagent.testing.gemini_server import GeminiServer

from test_settings import run_cli


@contextlib.contextmanager
def openai_models_server(*ids: str, path: str = "/v1/models") -> Iterator[str]:
    """An OpenAI-compatible server's model list (`GET /v1/models`), and nothing else."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"object": "list", "data": [{"id": i, "object": "model"} for i in ids]}).encode()
            self.send_response(200 if self.path == path else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

    with serving(Handler) as url:
        yield url


@contextlib.contextmanager
def serving(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """A stand-in OpenAI-compatible server on loopback, its requests answered by
    `handler` (quietly); its base URL, `http://127.0.0.1:PORT/v1`."""
    quiet = type("Quiet", (handler,), {"log_message": lambda self, *args: None})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.e2e
def test_models_lists_what_each_server_serves_as_model_takes_the_names(gemini: GeminiServer, tmp_path: Path) -> None:
    with openai_models_server("qwen2.5-0.5b", "<b>odd</b>\x1b[31m") as url:
        env = {"GOOGLE_API_KEY": "test", "GOOGLE_GEMINI_BASE_URL": gemini.url, "CHATAGENT_OPENAI_BASE_URL": url,
               "XDG_CONFIG_HOME": str(tmp_path), "CHATAGENT_CONFIG": ""}
        listed = run_cli("models", "--json", env=env)
        shown = run_cli("models", env=env)
    assert listed.returncode == 0, listed.stderr
    by = {s["provider"]: s for s in json.loads(listed.stdout)}
    assert by["extractive"]["models"] == ["extractive"]
    assert by["gemini"]["models"] == ["gemini-2.5-flash", "gemini-2.5-pro"] and by["gemini"]["problem"] is None
    assert by["openai"]["models"][0] == "openai:qwen2.5-0.5b" and by["openai"]["endpoint"] == url
    assert {"ollama", "lmstudio", "llamacpp"} <= set(by), "the local servers, each at its default address"
    assert by["llamacpp"]["endpoint"] == "http://127.0.0.1:8080/v1"
    assert "openai:qwen2.5-0.5b" in shown.stdout and "\x1b[31m" not in shown.stdout, "a server's words, made safe"


@pytest.mark.asyncio(loop_scope="session")
async def test_a_connection_test_says_what_is_wrong_in_words(gemini: GeminiServer) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    served = await check("openai:llama3.2", Settings(openai_base_url=dead))
    assert served.problem == "Nothing is listening there: is the server running?" and served.endpoint == dead
    with openai_models_server("qwen2.5-0.5b") as url:
        assert (await check("openai:qwen2.5-0.5b", Settings(openai_base_url=url))).problem is None
        missing = await check("openai:llama3.2", Settings(openai_base_url=url))
        assert missing.problem == "The server has no model 'openai:llama3.2'; it serves: openai:qwen2.5-0.5b."
    with openai_models_server("qwen2.5-0.5b", path="/elsewhere") as url:
        wrong = await check("openai:qwen2.5-0.5b", Settings(openai_base_url=url))
        assert wrong.problem == "It has no /v1/models (404): is it the model server's URL?"
    no_key = await check("gemini-2.5-flash", Settings(gemini_base_url=gemini.url, google_api_key=None))
    assert no_key.problem and "No Gemini API key" in no_key.problem


def test_local_servers_by_name_need_no_url() -> None:
    settings = Settings(openai_base_url="https://gateway.example/v1")
    for name, url in (("ollama:llama3.2", "http://127.0.0.1:11434/v1"), ("lmstudio:qwen2.5", "http://127.0.0.1:1234/v1"),
                      ("llamacpp:smollm2", "http://127.0.0.1:8080/v1")):
        model = load_model(name, settings)
        assert model.endpoint == url and model.name == name
        assert model.chat.model_name == name.split(":", 1)[1]
        assert str(model.chat.openai_api_base) == url
    assert load_model("openai:llama3.2", settings).endpoint == "https://gateway.example/v1"
    assert provider_for("ollama:x").endpoint_setting.startswith("ollama:MODEL reaches Ollama at http://127.0.0.1:11434/v1")


@contextlib.contextmanager
def tokenize_server(route: str | None) -> Iterator[tuple[str, list[str]]]:
    """A server that counts tokens at `route` (llama.cpp's own: /tokenize), or nowhere; the paths asked."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            asked.append(self.path)
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200 if self.path == route else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps({"tokens": [1, 2, 3]}).encode())

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", asked
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.asyncio(loop_scope="session")
async def test_a_servers_token_counting_route_is_found_once_and_one_without_any_is_not_asked_again() -> None:
    with tokenize_server("/tokenize") as (url, asked):
        model = load_model("openai:local", Settings(openai_base_url=url))
        assert [await model.count_tokens("three words here") for _ in range(3)] == [3, 3, 3]
    assert asked == ["/extras/tokenize", "/tokenize", "/tokenize", "/tokenize"]
    with tokenize_server(None) as (url, asked):
        model = load_model("openai:elsewhere", Settings(openai_base_url=url))
        assert [await model.count_tokens("three words here") for _ in range(3)] == [3, 3, 3]  # cl100k's count
    assert asked == ["/extras/tokenize", "/tokenize"]
