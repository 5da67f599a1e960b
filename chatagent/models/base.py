"""What chatagent knows about a model provider, in one record per provider.

A `Provider` recognises its model names, creates the LangChain chat model from
`Settings`, names the setting that holds its key and the one that sets its
endpoint, warms a client up, asks its server for a model's window, and
classifies its clients' errors. A `Model` is a chat model together with its
provider (and the finder of its window): what the agent is given. Adding a
provider is one module with one `Provider` subclass, listed in
`models.PROVIDERS`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar, Protocol

from ..errors import ModelError, ModelUnavailableError

if TYPE_CHECKING:  # LangChain loads with the agent: naming models (`provider_for`) stays light
    import httpx
    from langchain_core.language_models import BaseChatModel

    from ..settings import Settings
    from .window import Window, WindowFinder

# The window of a model whose provider says nothing of it (a caller's own chat
# model): as large as hosted models' windows commonly are.
DEFAULT_WINDOW = 128_000


class ServerTokenizer(Protocol):
    async def count(self, text: str) -> int | None:
        """`text`'s tokens by the model's own tokenizer; None: not counted (the caller's tokenizer counts)."""

    @property
    def available(self) -> bool:
        """Whether it may count: False once its server showed it cannot."""


class Provider:
    """One model provider. Subclasses set the class attributes and `create`."""

    name: ClassVar[str]
    prefixes: ClassVar[tuple[str, ...]] = ()  # model names it serves start with one of these
    key_setting: ClassVar[str] = "the model's API key"  # what to fix when credentials are refused
    api_key: ClassVar[str | None] = None  # the setting holding its API key, if it takes one
    required_key: ClassVar[str | None] = None  # the setting holding a key it cannot answer without
    endpoint_setting: ClassVar[str] = ""  # how to point it elsewhere
    # Tokens of page text per tab its models read at least, whatever the `budget`
    # setting (which bounds what a model that costs per token is sent). None: the setting.
    reads_per_tab: ClassVar[int | None] = None
    # Whether what it is sent costs (money, a remote service's time): then pass 2 stops
    # at the input-token budget. A local model's reading is free; its turns stay bounded.
    metered: ClassVar[bool] = True
    # Whether its chat model reads the typed page context: the agent then binds it
    # (`context=PageContext`), and tool results carry their typed `artifact`.
    reads_context: ClassVar[bool] = False
    # Whether its servers may be local model servers (Ollama, llama.cpp): one on
    # loopback then reads a long prompt on this machine's cores, for minutes.
    serves_local_models: ClassVar[bool] = False
    # Whether its server answers only to the names it lists (`catalog.check`):
    # llama.cpp's server answers any name with the one model it loaded.
    lists_every_name: ClassVar[bool] = True

    def matches(self, model: str) -> bool:
        # A prefix alone ("openai:", "gemini-") names no model.
        return any(model.startswith(p) and model[len(p):].strip() for p in self.prefixes)

    def create(self, model: str, settings: "Settings") -> BaseChatModel:
        raise NotImplementedError

    def endpoint(self, settings: "Settings") -> str:
        """The URL its client talks to ('' for none)."""
        return ""

    def tokenizer(self, endpoint: str) -> "ServerTokenizer | None":
        """The model's own tokenizer, where its server at `endpoint` offers
        one (for a server that reports no usage); None: it offers none."""
        return None

    async def serves(self, settings: "Settings", http: "httpx.AsyncClient") -> list[str]:
        """The model names it serves here, as `--model` takes them, asked of
        its server (`catalog`); raises `catalog.ListingError` in words."""
        return []

    async def window(self, model: str, settings: "Settings", http: "httpx.AsyncClient") -> "Window | None":
        """`model`'s window as its server says it (`window.Window`); None:
        its server does not say (its `default_window` applies). May raise
        httpx's errors: `window.ask_server` turns them into the default."""
        return None

    def default_window(self, model: str, endpoint: str) -> int:
        """`model`'s window when its server (at `endpoint`) does not say; docs/models.md lists each provider's."""
        return DEFAULT_WINDOW

    def label(self, model: str) -> str:
        """The model as users name it."""
        return model

    def served_name(self, model: str) -> str:
        """The model as its server names it (`openai:llama3.2` → `llama3.2`)."""
        return model

    async def warm(self, chat: BaseChatModel) -> None:
        """Open the client's connection and build what its first request needs. Best effort."""

    def classify(self, exc: BaseException) -> ModelError | None:
        """This provider's own reading of an error (None: the generic one applies)."""
        return None


class _Custom(Provider):
    """A chat model built by the caller (tests, embedding apps): generic handling."""

    name = "custom"


@dataclass(frozen=True)
class Model:
    """A chat model and its provider, and the finder of its window (made by
    `load_model`, shared with the model registry's `window`)."""

    chat: BaseChatModel
    provider: Provider
    name: str  # as users name it: 'extractive', 'gemini-2.5-flash', 'openai:llama3.1'
    endpoint: str = ""
    windows: "WindowFinder | None" = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, chat: "BaseChatModel | Model") -> "Model":
        """A caller's own chat model, with generic error handling."""
        if isinstance(chat, Model):
            return chat
        name = str(getattr(chat, "model", None) or getattr(chat, "model_name", None) or type(chat).__name__)
        return cls(chat, _Custom(), name)

    @cached_property
    def _server_tokenizer(self) -> "ServerTokenizer | None":
        # One per model, so what it learns of its server (which route counts) lasts.
        return self.provider.tokenizer(self.endpoint) if self.endpoint else None

    @property
    def counts_own_tokens(self) -> bool:
        """Whether its server may count tokens with the model's own tokenizer (llama.cpp's)."""
        return self._server_tokenizer is not None and self._server_tokenizer.available

    async def own_tokens(self, text: str) -> int | None:
        """`text`'s tokens by the model's own tokenizer, asked of its server; None: it cannot say."""
        return await self._server_tokenizer.count(text) if self._server_tokenizer else None

    async def count_tokens(self, text: str) -> int:
        """`text`'s tokens: by the model's server where it can count them, else by the tokenizer (cl100k)."""
        own = await self.own_tokens(text)
        if own is not None:
            return own
        from ..tokens import count_tokens_off_loop

        return await count_tokens_off_loop(text)

    def known_window(self) -> "Window | None":
        """The window when it is known without asking its server (set, or asked before)."""
        return self.windows.known() if self.windows is not None else None

    async def window(self) -> "Window":
        """How many tokens this model reads at once, prompt and answer
        together, and where that was learned (`window.Window`): the
        `context_window` setting, else its server's word, asked once and
        remembered, else its provider's default. Never raises; takes at most
        `window.WINDOW_TIMEOUT_S` when its server must be asked."""
        if self.windows is not None:
            return await self.windows.get()
        from .window import Window  # a caller's own chat model (`Model.of`): no settings, no server to ask

        return Window(tokens=self.provider.default_window(self.name, self.endpoint),
                      source="provider default: no settings to ask its server with", origin="default")

    @property
    def on_this_machine(self) -> bool:
        """Served on this machine's own cores (a local server on loopback): it
        reads a long prompt for minutes before its first token."""
        from ..settings import on_this_machine

        return self.provider.serves_local_models and bool(self.endpoint) and on_this_machine(self.endpoint)

    @property
    def identity(self) -> str:
        """Name plus endpoint: the same name served elsewhere is another model (answer cache key)."""
        return f"{self.name}@{self.endpoint}" if self.endpoint else self.name

    def classify(self, exc: BaseException) -> ModelError:
        """A typed error with a message the user can act on: a connection
        failure names the URL tried and the setting that changes it."""
        from ..retry import classify as classify_generic
        from ..retry import detail, is_connection_error

        err = self.provider.classify(exc) or classify_generic(exc, self.provider.key_setting, self.provider.api_key)
        if isinstance(err, ModelUnavailableError) and is_connection_error(exc) and self.endpoint:
            from ..settings import KEY_ENDPOINTS

            err.message = err.reason = f"Could not connect to the model service at {self.endpoint} ({detail(exc)})."
            err.setting = KEY_ENDPOINTS.get(self.provider.api_key or "")
            err.advice = (
                f"Is the server running there? To use another, set {self.provider.endpoint_setting}."
                if self.provider.endpoint_setting else ""
            )
        return err
