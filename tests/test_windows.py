"""The window of the model that answers: each provider's, as its server says
it (against a stand-in of that server's API), asked once per model and
remembered; the documented default where a server cannot say; and the
`context_window` setting over both, from a flag, the environment, the
settings file and the side panel. Also what the stand-ins do with a prompt
longer than their window, as the servers they stand for do."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from chatagent.ask_args import ASK_FLAGS
from chatagent.daemon.early import ask_request, parse_ask
from chatagent.daemon.protocol import PER_ASK, AskRequest, AskSettings
from chatagent.models import ModelRegistry, load_model, provider_for
from chatagent.models import window as windows
from chatagent.models.openai import LlamaCpp, LMStudio, Ollama, OpenAIProvider
from chatagent.models.window import Window, ask_server
from chatagent.settings import Settings
from chatagent.testing.gemini_server import GeminiServer
from chatagent.testing.ollama_server import OllamaModel, OllamaServer
from chatagent.testing.ports import free_port
from chatagent.testing.openai_server import ChatReply, LlamaCppServer, LMStudioModel, LMStudioServer, VLLMServer
from extension_bridge import panel_settings
from extension_bridge.messages import PanelSettingValues

from test_settings import CLI, cli  # noqa: F401 - the in-process CLI fixture


def openai_at(url: str, **more: object) -> Settings:
    return Settings(**{"model": "openai:local", "openai_base_url": url, **more})


# --- each provider, against its server's API -------------------------------------------


async def test_ollama_gives_the_modelfiles_num_ctx_within_the_models_own_length() -> None:
    with OllamaServer([OllamaModel("long:latest", num_ctx=16384, context_length=131072),
                       OllamaModel("short:latest", num_ctx=16384, context_length=8192)]) as ollama:
        settings = openai_at(ollama.url)
        long = await ask_server(provider_for("openai:long"), "openai:long", settings)
        short = await ask_server(provider_for("openai:short"), "openai:short", settings)
    assert long == Window(tokens=16384, source="server /api/show num_ctx", origin="server", model_tokens=131072)
    assert short.tokens == 8192, "Ollama keeps num_ctx within the model's training length"


async def test_ollama_not_loaded_yet_is_its_default_until_ps_says_what_it_loaded() -> None:
    """No Modelfile num_ctx: a model not loaded gets Ollama's default (a
    prediction, asked again); once a request has loaded it, /api/ps says the
    window, which is then remembered and not asked again."""
    with OllamaServer([OllamaModel("llama3.2:latest", context_length=131072)], default_num_ctx=4096) as ollama:
        registry = ModelRegistry(openai_at(ollama.url, model="openai:llama3.2"))
        before = await registry.window()
        assert (before.tokens, before.origin, before.settled, before.model_tokens) == (4096, "default", False, 131072)
        assert "Ollama 0.12.6 runs a model it has not loaded yet with 4,096 tokens" in before.source
        model = registry.get()
        await model.chat.ainvoke([HumanMessage("Hello")])  # loads it, as the first question would
        loaded = await model.window()
        asked = len(ollama.requests)
        assert await registry.window() == await model.window() == loaded
        assert len(ollama.requests) == asked, "a settled window is not asked again"
    assert loaded == Window(tokens=4096, source="server /api/ps context_length", origin="server", model_tokens=131072)


async def test_an_older_ollama_runs_a_model_with_2048() -> None:
    with OllamaServer([OllamaModel("llama3:latest", context_length=8192)], version="0.6.5") as ollama:
        window = await ask_server(provider_for("openai:llama3"), "openai:llama3", openai_at(ollama.url))
    assert window.tokens == 2048 and "Ollama 0.6.5" in window.source


async def test_the_local_servers_by_name_ask_their_own_api(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ollama:`, `llamacpp:` and `lmstudio:` ask their server's own API at
    their address (here the stand-ins'), each field as its docs name it."""
    with (OllamaServer([OllamaModel("qwen2.5:7b", num_ctx=8192, context_length=32768)]) as ollama,
          LlamaCppServer(n_ctx=2048, n_ctx_train=8192) as llamacpp,
          LMStudioServer([LMStudioModel("qwen2.5-7b-instruct", loaded_context_length=16384)]) as lmstudio):
        for provider, server in ((Ollama, ollama), (LlamaCpp, llamacpp), (LMStudio, lmstudio)):
            monkeypatch.setattr(provider, "address", server.url)
        registry = ModelRegistry(Settings())
        by_ollama = await registry.window("ollama:qwen2.5:7b")
        by_llamacpp = await registry.window("llamacpp:anything")
        by_lmstudio = await registry.window("lmstudio:qwen2.5-7b-instruct")
    assert by_ollama == Window(tokens=8192, source="server /api/show num_ctx", origin="server", model_tokens=32768)
    assert by_llamacpp == Window(tokens=2048, source="server /props default_generation_settings.n_ctx",
                                 origin="server", model_tokens=8192)
    assert by_lmstudio == Window(tokens=16384, source="server /api/v0/models loaded_context_length",
                                 origin="server", model_tokens=32768)
    assert "POST /api/show" in ollama.paths() and "GET /props" in llamacpp.paths()


async def test_lm_studio_loaded_by_its_v1_api_or_not_loaded_yet() -> None:
    with LMStudioServer([LMStudioModel("qwen", loaded_context_length=8192)], v0=False) as v1_only:
        loaded = await ask_server(provider_for("openai:qwen"), "openai:qwen", openai_at(v1_only.url))
    with LMStudioServer([LMStudioModel("cold", max_context_length=32768)]) as lmstudio:
        cold = await ask_server(provider_for("openai:cold"), "openai:cold", openai_at(lmstudio.url))
    assert (loaded.tokens, loaded.source) == (8192, "server /api/v1/models loaded_instances config.context_length")
    assert (cold.tokens, cold.origin, cold.settled, cold.model_tokens) == (4096, "default", False, 32768)


async def test_vllm_says_max_model_len_in_its_model_list() -> None:
    with VLLMServer(["Qwen/Qwen2.5-7B-Instruct"], max_model_len=32768) as vllm:
        window = await ask_server(provider_for("openai:Qwen/Qwen2.5-7B-Instruct"), "openai:Qwen/Qwen2.5-7B-Instruct",
                                  openai_at(vllm.url, openai_api_key="vllm-key-1234"))
        [listed] = [r for r in vllm.requests if r.path == "/v1/models"]
    assert window == Window(tokens=32768, source="server /v1/models max_model_len", origin="server")
    assert listed.headers["authorization"] == "Bearer vllm-key-1234", "the key goes to the endpoint it is for"
    assert [r.path for r in vllm.requests] == ["/v1/models"], "the server's own word ends the asking"


async def test_an_openai_server_at_ollamas_address_is_asked_as_ollama_and_gets_no_key() -> None:
    with OllamaServer([OllamaModel("llama3.2:latest", num_ctx=6144)]) as ollama:
        window = await ask_server(provider_for("openai:llama3.2"), "openai:llama3.2",
                                  openai_at(ollama.url, openai_api_key="secret-key-5678"))
        native = [r for r in ollama.requests if r.path.startswith("/api/")]
    assert window.tokens == 6144 and window.source == "server /api/show num_ctx"
    assert native and all("authorization" not in r.headers for r in native), "the key goes to /v1/models only"


async def test_gemini_gives_the_models_input_token_limit() -> None:
    async with GeminiServer(ttft_s=0.0, input_token_limit=32768) as gemini:
        registry = ModelRegistry(Settings(model="gemini-2.5-flash", google_api_key="test", gemini_base_url=gemini.url))
        window = await registry.window()
        [asked] = gemini.requests
    assert window == Window(tokens=32768, source="server models.get inputTokenLimit", origin="server")
    assert (asked.method, asked.model) == ("GET", "gemini-2.5-flash")


async def test_the_offline_model_has_no_window_to_fit_and_asks_nothing() -> None:
    window = await ModelRegistry(Settings(model="extractive")).window()
    assert window.tokens == 1_000_000 and "no window" in window.source


# --- asked once, remembered; the registry warms it ---------------------------------------


async def test_the_registry_asks_once_for_the_window_and_warming_asks_it() -> None:
    with LlamaCppServer(n_ctx=3072) as llamacpp:
        registry = ModelRegistry(openai_at(llamacpp.url))
        model = await registry.warm()
        asked = len(llamacpp.requests)
        assert asked and not llamacpp.chat_requests, "warming asked the window, before any question"
        windows_seen = [await model.window(), await registry.window(), await registry.get().window()]
        assert len(llamacpp.requests) == asked
    assert {w.tokens for w in windows_seen} == {3072}


async def test_each_model_is_asked_for_its_own_window() -> None:
    with OllamaServer([OllamaModel("a:latest", num_ctx=2048), OllamaModel("b:latest", num_ctx=8192)]) as ollama:
        registry = ModelRegistry(openai_at(ollama.url))
        assert ((await registry.window("openai:a")).tokens, (await registry.window("openai:b")).tokens) == (2048, 8192)


# --- where a server cannot say: the documented default -------------------------------------


async def test_a_server_that_does_not_say_gets_its_providers_default_for_good() -> None:
    """llama-cpp-python's server has no /props: the default (2,048 on this
    machine), remembered: the server answered, it just does not say."""
    with LlamaCppServer(n_ctx=8192, props=False) as quiet:
        registry = ModelRegistry(openai_at(quiet.url))
        first = await registry.window()
        asked = len(quiet.requests)
        assert await registry.window() == first and len(quiet.requests) == asked
    assert first == Window(tokens=2048, source="provider default: openai's server does not say", origin="default")


async def test_a_server_that_is_not_running_gets_the_default_and_is_asked_again() -> None:
    port = free_port()
    registry = ModelRegistry(openai_at(f"http://127.0.0.1:{port}/v1"))
    window = await registry.window()
    assert (window.tokens, window.origin, window.settled) == (2048, "default", False)
    assert window.source == "provider default: its server could not be asked (ConnectError)"
    with OllamaServer([OllamaModel("local:latest", num_ctx=8192)], port=port):  # started since
        assert (await registry.window()).tokens == 8192, "a window not settled is asked again"


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A server that takes connections and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"


async def test_a_server_that_does_not_answer_in_time_gets_the_default(
    silent_server: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(windows, "WINDOW_TIMEOUT_S", 0.2)
    window = await ModelRegistry(openai_at(silent_server)).window()
    assert (window.tokens, window.origin, window.settled) == (2048, "default", False)
    assert window.source.startswith("provider default: its server could not be asked")


def test_the_defaults_are_the_documented_ones() -> None:
    defaults = {
        "ollama:llama3.2": 4096, "lmstudio:qwen": 4096, "llamacpp:local": 2048, "gemini-2.5-flash": 1_048_576,
        "gemma-3-27b-it": 32_768, "extractive": 1_000_000,
    }
    assert {name: provider_for(name).default_window(name, "") for name in defaults} == defaults
    openai = OpenAIProvider()
    assert openai.default_window("openai:x", "http://127.0.0.1:8000/v1") == 2048
    assert openai.default_window("openai:x", "https://api.example.com/v1") == 128_000
    docs = (Path(__file__).resolve().parent.parent / "docs" / "models.md").read_text()
    for figure in ("4,096", "2,048", "1,048,576", "32,768", "128,000"):
        assert figure in docs


# --- context_window over all of it ------------------------------------------------------------


async def test_the_context_window_setting_overrides_the_server_which_is_not_asked() -> None:
    with LlamaCppServer(n_ctx=2048) as llamacpp:
        registry = ModelRegistry(openai_at(llamacpp.url, context_window=8192))
        model = await registry.warm()
        assert await model.window() == await registry.window() == Window(
            tokens=8192, source="context_window setting", origin="setting")
        assert not llamacpp.requests
        loaded = load_model("openai:local", openai_at(llamacpp.url, context_window=1024))
        assert (await loaded.window()).tokens == 1024


def test_context_window_from_the_environment_and_the_settings_file(
    private_settings: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    private_settings.write_text("context_window = 16384\n")
    assert Settings.load().context_window == 16384
    monkeypatch.setenv("CHATAGENT_CONTEXT_WINDOW", "12000")
    assert Settings.load().context_window == 12000
    assert Settings.load(context_window=9000).context_window == 9000
    monkeypatch.delenv("CHATAGENT_CONTEXT_WINDOW")
    private_settings.write_text("")
    assert Settings.load().context_window is None


def test_a_window_too_small_to_hold_anything_is_refused(cli: CLI) -> None:  # noqa: F811
    refused = cli("models", "--check", "openai:local", "--context-window", "100", env={})
    assert refused.returncode == 2 and "a model's window is at least 512 tokens, got 100" in refused.stderr
    bad = cli("models", "--check", "openai:local", env={"CHATAGENT_CONTEXT_WINDOW": "lots"})
    assert bad.returncode == 2 and "context_window" in bad.stderr


def test_ask_and_chat_take_the_flag_and_the_daemon_compares_it_with_its_own() -> None:
    """`--context-window` reaches the settings; a daemon does not take it per
    ask (its models' windows are its own): it is among the settings it
    compares, so an ask giving another is answered in its own process."""
    args = parse_ask(["ask", "page.html", "-q", "How much?", "--context-window", "4096"])
    assert args is not None and args.context_window == 4096
    request = AskRequest.model_validate_json(ask_request(args, cwd="/tmp", env={}))
    assert request.flags.context_window == 4096
    assert "context_window" in ASK_FLAGS and "context_window" not in PER_ASK
    assert AskSettings.of(Settings(context_window=4096)).settings != AskSettings.of(Settings()).settings


def test_the_panel_shows_saves_and_clears_the_context_window(private_settings: Path) -> None:
    panel_settings.save(PanelSettingValues(context_window="8192"))
    assert "context_window = 8192" in private_settings.read_text()
    shown = panel_settings.describe("s1", Settings.load(), {}).to_wire()["settings"]["contextWindow"]
    assert shown["value"] == "8192" and shown["source"] == "file"
    with pytest.raises(panel_settings.PanelSettingError, match="^Context window: "):
        panel_settings.save(PanelSettingValues(context_window="100"))
    panel_settings.save(PanelSettingValues(context_window=None))
    assert Settings.load().context_window is None
    assert panel_settings.describe("s2", Settings.load(), {}).to_wire()["settings"]["contextWindow"]["value"] is None


def test_models_check_prints_the_window_and_where_it_came_from(cli: CLI) -> None:  # noqa: F811
    with LlamaCppServer(n_ctx=2048, n_ctx_train=8192) as llamacpp:
        env = {"CHATAGENT_OPENAI_BASE_URL": llamacpp.url}
        shown = cli("models", "--check", "openai:local", env=env)
        overridden = cli("models", "--check", "openai:local", "--context-window", "8192", env=env)
        as_json = cli("models", "--check", "openai:local", "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    assert ("window: 2,048 tokens (server /props default_generation_settings.n_ctx; the model itself reads up to "
            "8,192)") in shown.stdout
    assert "window: 8,192 tokens (context_window setting)" in overridden.stdout
    assert "without the setting: 2,048 tokens (server /props" in overridden.stdout
    window = json.loads(as_json.stdout)["window"]
    assert window == {"tokens": 2048, "source": "server /props default_generation_settings.n_ctx",
                      "origin": "server", "model_tokens": 8192, "settled": True}


# --- the stand-ins: a prompt longer than the window, as each server treats it -------------------


async def test_ollama_cuts_a_long_prompt_silently_and_llamacpp_refuses_it() -> None:
    long = [SystemMessage("Answer from the page."), HumanMessage("word " * 3000), HumanMessage("How much?")]
    with OllamaServer([OllamaModel("llama3.2:latest")], default_num_ctx=2048,
                      replies=[ChatReply(text="It costs $5 [Tab 1].")]) as ollama:
        reply = await load_model("openai:llama3.2", openai_at(ollama.url)).chat.ainvoke(long)
        [cut] = ollama.chat_requests
    assert reply.content == "It costs $5 [Tab 1]." and reply.usage_metadata["input_tokens"] == 2048
    assert cut.truncated and not cut.fits and cut.window == 2048 and cut.prompt_tokens > 3000
    with LlamaCppServer(n_ctx=2048) as llamacpp:
        model = load_model("openai:local", openai_at(llamacpp.url))
        with pytest.raises(Exception) as refused:
            await model.chat.ainvoke(long)
        [request] = llamacpp.chat_requests
    assert request.status == 400 and not request.fits
    assert "the request exceeds the available context size" in model.classify(refused.value).message
