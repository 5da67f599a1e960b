"""The window of the model that answers: how many tokens it reads at once,
prompt and answer together, and where that was learned.

Each provider asks its server (`Provider.window`: Ollama's `/api/show` and
`/api/ps`, llama.cpp's `/props`, LM Studio's `/api/v0/models`, vLLM's
`/v1/models`, Gemini's `models.get`); a server that cannot say gets its
provider's documented default (`Provider.default_window`, docs/models.md);
the `context_window` setting overrides both. A `WindowFinder` asks once per
model and remembers the answer for as long as whoever holds it (the model
registry of a runtime: a command, the daemon, the panel's host until its
settings change) lives.

    window = await model.window()          # or: await runtime.models.window(name)
    window.tokens, window.source           # 4096, "server /api/ps context_length"
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    import httpx

    from ..settings import Settings
    from .base import Provider

log = logging.getLogger(__name__)

# A window is asked of a server on loopback, or of Gemini: either answers at once.
# Past this the provider's default is used (and the server asked again next time).
WINDOW_TIMEOUT_S = 2.0

SETTING_SOURCE = "context_window setting"


class Window(BaseModel):
    """How many tokens a model reads at once (its context window: the prompt
    and the answer it writes share it), and where that was learned.

    `source` says it in words ("server /api/ps context_length", "provider
    default (…)", "context_window setting"); `origin` says it in one word.
    `model_tokens` is the model's own length, where the server says it: a
    server may run it with less (Ollama gives a model 4,096 tokens of its
    128k unless told otherwise). `settled`: the server's last word; False
    for a prediction it could not confirm (an Ollama model not loaded yet, a
    server that did not answer), which a `WindowFinder` asks again."""

    model_config = ConfigDict(frozen=True)

    tokens: int = Field(gt=0)
    source: str
    origin: Literal["server", "setting", "default"]
    model_tokens: int | None = Field(default=None, gt=0)
    settled: bool = True

    def describe(self) -> str:
        """In words, for a person: "4,096 tokens (server /api/ps context_length)"."""
        own = (f"; the model itself reads up to {self.model_tokens:,}"
               if self.model_tokens and self.model_tokens > self.tokens else "")
        return f"{self.tokens:,} tokens ({self.source}{own})"


def from_setting(tokens: int) -> Window:
    return Window(tokens=tokens, source=SETTING_SOURCE, origin="setting")


def fallback(provider: "Provider", model: str, settings: "Settings", why: str, *, settled: bool,
             model_tokens: int | None = None) -> Window:
    """The provider's documented default for `model`, within the model's own
    length where the server said it; `why`: why the server's word is not used."""
    tokens = provider.default_window(model, provider.endpoint(settings))
    if model_tokens:
        tokens = min(tokens, model_tokens)
    return Window(tokens=tokens, source=f"provider default: {why}", origin="default",
                  model_tokens=model_tokens, settled=settled)


async def ask_server(provider: "Provider", model: str, settings: "Settings",
                     http: "httpx.AsyncClient | None" = None) -> Window:
    """`model`'s window as its server says it, else its provider's default;
    never raises (a server that is down, slow or answers nonsense gets the
    default, not settled, so that it is asked again). The `context_window`
    setting is not applied here: `WindowFinder` applies it."""
    import httpx

    try:
        if http is None:
            # Made off the event loop: a client loads its certificates (tens of ms of CPU), which
            # would hold the question's first token when its window is asked while the tabs are read.
            own = await asyncio.to_thread(httpx.AsyncClient, timeout=WINDOW_TIMEOUT_S, follow_redirects=False)
            async with own:
                found = await asyncio.wait_for(provider.window(model, settings, own), WINDOW_TIMEOUT_S)
        else:
            found = await asyncio.wait_for(provider.window(model, settings, http), WINDOW_TIMEOUT_S)
    except (httpx.HTTPError, TimeoutError) as exc:
        why = f"its server could not be asked ({type(exc).__name__})"
        log.info("%s: the window is its provider's default: %s", model, why)
        return fallback(provider, model, settings, why, settled=False)
    except Exception as exc:  # noqa: BLE001 - a server's odd answer must not stop a question
        log.warning("%s: asking its server for its window failed (%s: %s); using its provider's default",
                    model, type(exc).__name__, exc)
        return fallback(provider, model, settings, "its server's answer could not be read", settled=False)
    return found or fallback(provider, model, settings, f"{provider.name}'s server does not say", settled=True)


class WindowFinder:
    """The window of one model, as `settings` name and reach it: asked of
    its server once and remembered. The `context_window` setting, when set,
    is the answer without asking. A window that is not `settled` (a
    prediction, or a server that did not answer) is asked again at the next
    call, so that, once Ollama has loaded the model, the window it loaded is
    the one used. Concurrent callers on one event loop share one asking."""

    def __init__(self, provider: "Provider", model: str, settings: "Settings") -> None:
        self.provider = provider
        self.model = model
        self.settings = settings
        self._known: Window | None = None
        self._asking: asyncio.Future[Window] | None = None

    async def get(self) -> Window:
        if self.settings.context_window is not None:
            return from_setting(self.settings.context_window)
        if self._known is not None:
            return self._known
        loop = asyncio.get_running_loop()
        asking = self._asking
        if asking is None or asking.done() or asking.get_loop() is not loop:
            asking = self._asking = loop.create_task(ask_server(self.provider, self.model, self.settings))
        window = await asyncio.shield(asking)  # a caller cancelled leaves the asking to the others
        if window.settled:
            self._known = window
        return window

    def known(self) -> Window | None:
        """The window if it is known without asking (the setting, or asked before and settled)."""
        if self.settings.context_window is not None:
            return from_setting(self.settings.context_window)
        return self._known
