"""OpenAI-compatible servers (Ollama, LM Studio, vLLM, llama.cpp) via the
optional langchain-openai extra: `openai:MODEL` at `openai_base_url`, and the
local servers by name at their default addresses (`ollama:llama3.2`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, ClassVar

from ..errors import ModelConfigError
from .base import Provider

if TYPE_CHECKING:
    import httpx
    from langchain_core.language_models import BaseChatModel

    from ..settings import Settings

log = logging.getLogger(__name__)


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
        return ChatOpenAI(
            model=self.served_name(model),  # never empty: `matches` wants a name after the prefix
            base_url=self.endpoint(settings),
            api_key=self.key(settings),
            # Usage in the stream where the server allows it; where it sends none, the agent counts.
            streaming=True, stream_usage=True,
            max_retries=0,  # chatagent.retry retries, visibly and within bounds
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


class LlamaCppTokenizer:
    """llama.cpp's servers count tokens: llama-cpp-python's at /extras/tokenize,
    llama.cpp's own at /tokenize; other servers have neither. The route that
    answered is used from then on, and a server that has neither (both 404)
    is not asked again."""

    ROUTES = (("/extras/tokenize", "input"), ("/tokenize", "content"))

    def __init__(self, endpoint: str) -> None:
        self.root = endpoint.rstrip("/").removesuffix("/v1")
        self.routes: tuple[tuple[str, str], ...] = self.ROUTES  # those worth asking

    async def count(self, text: str) -> int | None:
        import httpx

        missing = 0
        async with httpx.AsyncClient(timeout=10) as http:
            for path, field in self.routes:
                try:
                    r = await http.post(self.root + path, json={field: text})
                    tokens = r.json().get("tokens") if r.status_code == 200 else None
                except (httpx.HTTPError, ValueError, AttributeError):
                    tokens = None  # busy or down: worth asking again next time
                else:
                    missing += r.status_code in (404, 405)
                if isinstance(tokens, list):
                    self.routes = ((path, field),)
                    return len(tokens)
        if missing == len(self.routes):
            self.routes = ()
        return None


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


class LMStudio(LocalServer):
    name = "lmstudio"
    title = "LM Studio"
    prefixes = ("lmstudio:",)
    address = "http://127.0.0.1:1234/v1"


class LlamaCpp(LocalServer):
    lists_every_name = False  # it answers any name with the model it loaded
    name = "llamacpp"
    title = "llama.cpp's server"
    prefixes = ("llamacpp:",)
    address = "http://127.0.0.1:8080/v1"
