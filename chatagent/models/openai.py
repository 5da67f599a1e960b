"""OpenAI-compatible servers (Ollama, LM Studio, vLLM, llama.cpp) via the
optional langchain-openai extra: `openai:MODEL` at `openai_base_url`, and the
local servers by name at their default addresses (`ollama:llama3.2`).

Each says a model's window its own way (`window`; the fields, and the
defaults where a server says nothing, are in docs/models.md): Ollama in
`/api/show` (the `num_ctx` of its Modelfile, the model's own
`*.context_length`) and `/api/ps` (the `context_length` of a loaded model),
llama.cpp in `/props` (`n_ctx`), LM Studio in `/api/v0/models`
(`loaded_context_length`) or `/api/v1/models`, vLLM in `/v1/models`
(`max_model_len`). An `openai:` server is asked all of these, its own
`/models` first. chatagent reaches each through its OpenAI-compatible `/v1`,
which sets no window per request: the window is the one the server runs the
model with, and the request is fitted into it."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import ModelConfigError
from ..limits import TOKENIZE_TIMEOUT_S
from .base import Provider

if TYPE_CHECKING:
    import httpx
    from langchain_core.language_models import BaseChatModel

    from ..settings import Settings
    from .window import Window

log = logging.getLogger(__name__)

# Windows where a server does not say (docs/models.md). On this machine, the
# servers that say nothing are llama-cpp-python's (Ollama, llama.cpp, LM Studio
# and vLLM all say), which runs a model with 2,048 tokens unless started with
# more; a hosted model's window is 128k or more (a gateway to a smaller one:
# set `context_window`).
LOCAL_DEFAULT_WINDOW = 2048
REMOTE_DEFAULT_WINDOW = 128_000


class OpenAIProvider(Provider):
    name = "openai"
    prefixes = ("openai:",)
    serves_local_models = True
    api_key = "openai_api_key"
    key_setting = "OPENAI_API_KEY (`chatagent config set openai_api_key KEY`) and openai_base_url"
    endpoint_setting = (
        "openai_base_url (`chatagent config set openai_base_url URL`, or CHATAGENT_OPENAI_BASE_URL)"
    )

    def create(self, model: str, settings: "Settings") -> BaseChatModel:
        try:
            from langchain_openai import ChatOpenAI
        except ImportError as exc:
            raise ModelConfigError(
                f"{self.prefixes[0]}* models need the optional extra: pip install 'chatagent[openai]'"
            ) from exc
        from .http_bounds import bounded_client

        return ChatOpenAI(
            model=self.served_name(model),  # never empty: `matches` wants a name after the prefix
            base_url=self.endpoint(settings),
            api_key=self.key(settings),
            # Usage in the stream where the server allows it; where it sends none, the agent counts.
            streaming=True, stream_usage=True,
            max_retries=0,  # chatagent.retry retries, visibly and within bounds
            # chatagent.retry times stalls itself: the client's per-chunk timer (an asyncio.wait_for)
            # can lose the cancellation of a question past its deadline on Python 3.11.
            stream_chunk_timeout=None,
            http_async_client=bounded_client(),  # what a server's reply may make us hold (`http_bounds`)
        )

    def served_name(self, model: str) -> str:
        """The model as its server names it: without our prefix."""
        return model.split(":", 1)[1].strip()

    def key(self, settings: "Settings") -> str:
        if elsewhere := settings.key_elsewhere(self.api_key):  # a server may need none: say why it gets none
            log.warning("%s (openai_api_key) is for %s, not %s: it is not sent there (`chatagent config set "
                        "openai_api_key KEY` saves one for it).", elsewhere.describe().capitalize(),
                        elsewhere.endpoint, settings.openai_base_url)
        # Local servers ignore the key, but the client insists on one.
        return settings.secret("openai_api_key") or "not-needed"

    def endpoint(self, settings: "Settings") -> str:
        return settings.openai_base_url

    async def serves(self, settings: "Settings", http: "httpx.AsyncClient") -> list[str]:
        from .catalog import json_of, status_problem

        key = self.key(settings)
        response = await http.get(f"{self.endpoint(settings).rstrip('/')}/models",
                                  headers={"Authorization": f"Bearer {key}"})
        status_problem(response, self)
        data = json_of(response, self).get("data", [])
        return [f"{self.prefixes[0]}{m['id']}" for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]


    def tokenizer(self, endpoint: str) -> "LlamaCppTokenizer":
        return LlamaCppTokenizer(endpoint)

    async def window(self, model: str, settings: "Settings", http: "httpx.AsyncClient") -> "Window | None":
        """An OpenAI-compatible server of any kind: its `/models` entry's
        `max_model_len` (vLLM), else what the local servers' own APIs say at
        its root (llama.cpp, Ollama, LM Studio, asked at once). The key goes
        to `/models` only, under the endpoint it is for."""
        base = self.endpoint(settings).rstrip("/")
        served = self.served_name(model)
        key = settings.secret(self.api_key) if self.api_key and not settings.key_elsewhere(self.api_key) else None
        listed = await _get_json(http, f"{base}/models", headers={"Authorization": f"Bearer {key}"} if key else None)
        entry = _entry(listed, served)
        for field in ("max_model_len", "context_length", "context_window"):  # vLLM; gateways that list it
            if (tokens := _positive(entry.get(field))) is not None:
                return _window(tokens, f"server /v1/models {field}")
        root = _root(base)
        found = await asyncio.gather(llamacpp_window(root, base, http), ollama_window(root, served, http),
                                     lmstudio_window(root, served, http), return_exceptions=True)
        windows = [w for w in found if not isinstance(w, BaseException) and w is not None]
        if windows:
            return next((w for w in windows if w.settled), windows[0])
        if errors := [e for e in found if isinstance(e, BaseException)]:
            raise errors[0]
        return None

    def default_window(self, model: str, endpoint: str) -> int:
        from ..settings import on_this_machine

        return LOCAL_DEFAULT_WINDOW if endpoint and on_this_machine(endpoint) else REMOTE_DEFAULT_WINDOW


class LlamaCppTokenizer:
    """llama.cpp's servers count tokens: llama-cpp-python's at /extras/tokenize,
    llama.cpp's own at /tokenize; other servers have neither. The route that
    answered is used from then on, and a server that has neither (both 404)
    is not asked again."""

    ROUTES = (("/extras/tokenize", "input"), ("/tokenize", "content"))

    def __init__(self, endpoint: str) -> None:
        self.root = endpoint.rstrip("/").removesuffix("/v1")
        self.routes: tuple[tuple[str, str], ...] = self.ROUTES  # those worth asking

    @property
    def available(self) -> bool:
        return bool(self.routes)

    async def count(self, text: str) -> int | None:
        import httpx

        missing = 0
        async with httpx.AsyncClient(timeout=TOKENIZE_TIMEOUT_S) as http:
            for path, field in self.routes:
                try:
                    status, body = await _bounded_post(http, self.root + path, {field: text}, _tokens_bytes(text))
                    tokens = json.loads(body).get("tokens") if status == 200 else None
                except _TokenizeRefused as exc:
                    # An answer without end (or without bound) would cost more than the count saves:
                    # cl100k counts for this server from now on.
                    log.warning("%s%s: %s; counting tokens with cl100k instead", self.root, path, exc)
                    self.routes = ()
                    return None
                except (httpx.HTTPError, ValueError, AttributeError):
                    tokens = None  # busy or down: worth asking again next time
                else:
                    missing += status in (404, 405)
                if isinstance(tokens, list):
                    self.routes = ((path, field),)
                    return len(tokens)
        if missing == len(self.routes):
            self.routes = ()
        return None


class _TokenizeRefused(Exception):
    """A /tokenize answer that passed its bound in bytes or in time."""


def _tokens_bytes(text: str) -> int:
    """The most bytes an honest answer for `text` takes: at most a token per byte of
    text, each id at most 8 characters with its separator, and the answer's frame."""
    return 1024 + 8 * len(text.encode())


async def _bounded_post(http: "httpx.AsyncClient", url: str, body: dict[str, str], max_bytes: int) -> tuple[int, bytes]:
    """POST `body` to `url`: the status and at most `max_bytes` of its answer, read within
    TOKENIZE_TIMEOUT_S in all (httpx's timeout is per read: a trickle would never end it)."""
    try:
        async with asyncio.timeout(TOKENIZE_TIMEOUT_S), http.stream("POST", url, json=body) as response:
            got = bytearray()
            async for piece in response.aiter_bytes():
                got += piece
                if len(got) > max_bytes:
                    raise _TokenizeRefused(f"its answer passed {max_bytes:,} bytes")
            return response.status_code, bytes(got)
    except TimeoutError:
        raise _TokenizeRefused(f"its answer took longer than {TOKENIZE_TIMEOUT_S:g} s") from None


class LocalServer(OpenAIProvider):
    """A local server by name, at the address it listens on out of the box:
    no URL to set. Elsewhere, `openai:MODEL` with `openai_base_url` reaches it."""

    title: ClassVar[str]
    address: ClassVar[str]
    api_key = None  # the key for `openai_base_url` is never sent here

    @property
    def endpoint_setting(self) -> str:  # type: ignore[override]
        return (f"{self.prefixes[0]}MODEL reaches {self.title} at {self.address}; elsewhere, use openai:MODEL "
                "with openai_base_url (`chatagent config set openai_base_url URL`)")

    def key(self, settings: "Settings") -> str:
        return "not-needed"

    def endpoint(self, settings: "Settings") -> str:
        return self.address


class Ollama(LocalServer):
    name = "ollama"
    title = "Ollama"
    prefixes = ("ollama:",)
    address = "http://127.0.0.1:11434/v1"

    async def window(self, model: str, settings: "Settings", http: "httpx.AsyncClient") -> "Window | None":
        return await ollama_window(_root(self.address), self.served_name(model), http)

    def default_window(self, model: str, endpoint: str) -> int:
        return OLLAMA_DEFAULT_WINDOW


class LMStudio(LocalServer):
    name = "lmstudio"
    title = "LM Studio"
    prefixes = ("lmstudio:",)
    address = "http://127.0.0.1:1234/v1"

    async def window(self, model: str, settings: "Settings", http: "httpx.AsyncClient") -> "Window | None":
        return await lmstudio_window(_root(self.address), self.served_name(model), http)

    def default_window(self, model: str, endpoint: str) -> int:
        return LMSTUDIO_DEFAULT_WINDOW


class LlamaCpp(LocalServer):
    lists_every_name = False  # it answers any name with the model it loaded
    name = "llamacpp"
    title = "llama.cpp's server"
    prefixes = ("llamacpp:",)
    address = "http://127.0.0.1:8080/v1"

    async def window(self, model: str, settings: "Settings", http: "httpx.AsyncClient") -> "Window | None":
        return await llamacpp_window(_root(self.address), self.address, http)

    def default_window(self, model: str, endpoint: str) -> int:
        return LLAMACPP_DEFAULT_WINDOW


# --- windows, as each server says them ------------------------------------------------

# Ollama runs a model with 4,096 tokens unless its Modelfile (`num_ctx`),
# OLLAMA_CONTEXT_LENGTH or (0.15.5 on) 24 GiB or more of GPU memory give more;
# 2,048 before 0.6.7. Its /v1 takes no `num_ctx` (docs/models.md).
OLLAMA_DEFAULT_WINDOW = 4096
OLLAMA_OLD_DEFAULT_WINDOW = 2048
OLLAMA_4K_SINCE = (0, 6, 7)
# LM Studio loads a model with 4,096 tokens unless its settings for the model say more.
LMSTUDIO_DEFAULT_WINDOW = 4096
# A llama.cpp server without /props is llama-cpp-python's, whose n_ctx is 2,048 unless set.
LLAMACPP_DEFAULT_WINDOW = LOCAL_DEFAULT_WINDOW


async def ollama_window(root: str, served: str, http: "httpx.AsyncClient") -> "Window | None":
    """The window Ollama at `root` gives `served` through its /v1: the
    Modelfile's `num_ctx` where it sets one (`/api/show`; within the model's
    own length, as Ollama keeps it), else the loaded model's (`/api/ps`), else
    its default for a model it has not loaded yet, which it may raise (not
    settled: asked again, and once loaded `/api/ps` says). None: not Ollama,
    or no such model."""
    show_r, ps, version = await asyncio.gather(
        http.post(f"{root}/api/show", json={"model": served, "name": served}),
        _get_json(http, f"{root}/api/ps"), _get_json(http, f"{root}/api/version"))
    if not isinstance(version, dict) or not isinstance(version.get("version"), str):
        return None  # not Ollama
    show = _json(show_r) if show_r.status_code == 200 else None
    if not isinstance(show, dict):
        return None  # no such model (404): `chatagent models --check` says so
    own = _ollama_model_length(show.get("model_info"))
    num_ctx = _ollama_num_ctx(show.get("parameters"))
    if num_ctx is not None:
        return _window(min(num_ctx, own or num_ctx), "server /api/show num_ctx", own)
    loaded = _ollama_loaded(ps, served)
    if (tokens := _positive(loaded.get("context_length"))) is not None:
        return _window(tokens, "server /api/ps context_length", own)
    from .window import Window

    release = version["version"]
    default = OLLAMA_DEFAULT_WINDOW if _release(release) >= OLLAMA_4K_SINCE else OLLAMA_OLD_DEFAULT_WINDOW
    return Window(tokens=min(default, own or default), origin="default", model_tokens=own, settled=False,
                  source=f"provider default: Ollama {release} runs a model it has not loaded yet with {default:,} "
                         "tokens, unless OLLAMA_CONTEXT_LENGTH or its GPU's memory give more (asked again once loaded)")


async def llamacpp_window(root: str, base: str, http: "httpx.AsyncClient") -> "Window | None":
    """llama.cpp's server: `/props` (`default_generation_settings.n_ctx`, a
    slot's: what one request gets; `n_ctx` in some builds), the model's own
    length from `/v1/models` (`meta.n_ctx_train`). None: no /props (llama-cpp-python's server)."""
    props, listed = await asyncio.gather(_get_json(http, f"{root}/props"), _get_json(http, f"{base.rstrip('/')}/models"))
    if not isinstance(props, dict):
        return None
    meta = _entry(listed, None).get("meta")
    own = _positive(meta.get("n_ctx_train")) if isinstance(meta, dict) else None
    settings = props.get("default_generation_settings")
    if isinstance(settings, dict) and (tokens := _positive(settings.get("n_ctx"))) is not None:
        return _window(tokens, "server /props default_generation_settings.n_ctx", own)
    if (tokens := _positive(props.get("n_ctx"))) is not None:
        return _window(tokens, "server /props n_ctx", own)
    return None


async def lmstudio_window(root: str, served: str, http: "httpx.AsyncClient") -> "Window | None":
    """LM Studio: a loaded model's `loaded_context_length` (`/api/v0/models/ID`),
    or its loaded instance's `config.context_length` (`/api/v1/models`, 0.4
    on); not loaded, the context length it loads a model with by default,
    within the model's `max_context_length` (not settled). None: not LM Studio, or no such model."""
    from urllib.parse import quote

    v0, v1 = await asyncio.gather(_get_json(http, f"{root}/api/v0/models/{quote(served, safe='/')}"),
                                  _get_json(http, f"{root}/api/v1/models"))
    if not isinstance(v0, dict) or "max_context_length" not in v0 and "state" not in v0:
        v0 = {}
    v1_entry = next((m for m in (v1.get("models") if isinstance(v1, dict) else None) or []
                     if isinstance(m, dict) and (m.get("key") == served or any(
                         isinstance(i, dict) and i.get("id") == served for i in m.get("loaded_instances") or []))), {})
    if not v0 and not v1_entry:
        return None
    own = _positive(v0.get("max_context_length")) or _positive(v1_entry.get("max_context_length"))
    if v0.get("state") == "loaded" and (tokens := _positive(v0.get("loaded_context_length"))) is not None:
        return _window(tokens, "server /api/v0/models loaded_context_length", own)
    for instance in v1_entry.get("loaded_instances") or []:
        config = instance.get("config") if isinstance(instance, dict) else None
        if isinstance(config, dict) and (tokens := _positive(config.get("context_length"))) is not None:
            return _window(tokens, "server /api/v1/models loaded_instances config.context_length", own)
    from .window import Window

    default = LMSTUDIO_DEFAULT_WINDOW
    return Window(tokens=min(default, own or default), origin="default", model_tokens=own, settled=False,
                  source=f"provider default: LM Studio loads a model with {default:,} tokens unless its settings "
                         "for the model say more (asked again once loaded)")


def _window(tokens: int, source: str, own: int | None = None) -> "Window":
    from .window import Window

    return Window(tokens=tokens, source=source, origin="server", model_tokens=own)


def _root(endpoint: str) -> str:
    """The server's own root: `http://127.0.0.1:11434/v1` → `http://127.0.0.1:11434`."""
    return endpoint.rstrip("/").removesuffix("/v1")


async def _get_json(http: "httpx.AsyncClient", url: str, headers: dict[str, str] | None = None) -> Any:
    """`url`'s JSON body if it answers 200 with JSON, else None; a server
    that cannot be reached raises (httpx's errors)."""
    response = await http.get(url, headers=headers)
    return _json(response) if response.status_code == 200 else None


def _json(response: "httpx.Response") -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _entry(listed: Any, served: str | None) -> dict[str, Any]:
    """The `/models` entry named `served` (None: the first, a one-model server's)."""
    data = listed.get("data") if isinstance(listed, dict) else None
    entries = [m for m in data if isinstance(m, dict)] if isinstance(data, list) else []
    if served is None:
        return entries[0] if entries else {}
    return next((m for m in entries if m.get("id") == served), {})


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _ollama_num_ctx(parameters: Any) -> int | None:
    """`num_ctx` in /api/show's `parameters`, a Modelfile's lines (`num_ctx    8192`)."""
    found = re.search(r"^\s*num_ctx\s+(\d+)\s*$", parameters, re.MULTILINE) if isinstance(parameters, str) else None
    return _positive(int(found[1])) if found else None


def _ollama_model_length(info: Any) -> int | None:
    """The model's own length in /api/show's `model_info`: `<architecture>.context_length`."""
    if not isinstance(info, dict):
        return None
    arch = info.get("general.architecture")
    if isinstance(arch, str) and (own := _positive(info.get(f"{arch}.context_length"))) is not None:
        return own
    return next((n for k, v in info.items() if k.endswith(".context_length") and (n := _positive(v))), None)


def _ollama_loaded(ps: Any, served: str) -> dict[str, Any]:
    """`served`'s entry in /api/ps (names compared as Ollama does: `llama3.2` is `llama3.2:latest`)."""
    models = ps.get("models") if isinstance(ps, dict) else None
    wanted = _ollama_name(served)
    return next((m for m in models or [] if isinstance(m, dict)
                 and wanted in (_ollama_name(str(m.get("name", ""))), _ollama_name(str(m.get("model", ""))))), {})


def _ollama_name(name: str) -> str:
    name = name.strip().lower()
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def _release(version: str) -> tuple[int, ...]:
    """"0.6.7-rc1" → (0, 6, 7); what cannot be read counts as the newest."""
    parts = re.findall(r"\d+", version.split("-", 1)[0])[:3]
    return tuple(int(p) for p in parts) if parts else (999,)
