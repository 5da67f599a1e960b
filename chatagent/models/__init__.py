"""Chat models by name, from the providers in `PROVIDERS`. Every one is a
LangChain chat model, so the agent is provider-agnostic: `extractive`
(offline, the default), `gemini-*`, `openai:MODEL`, and local servers by name
(`ollama:MODEL`, `lmstudio:MODEL`, `llamacpp:MODEL`).

Light to import: naming a model (`provider_for`, which the CLI's `--model` and
`config set model` check) loads no model library; those load when a model is
made (`load_model`).

Each model's window (how many tokens it reads at once) is `await
model.window()`, or `await registry.window(name)` without making its client:
asked of its server once per registry and remembered (`window.py`)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ..errors import ModelConfigError
from .base import Model, Provider
from .gemini import DEFAULT_MODEL as DEFAULT_GEMINI
from .gemini import GeminiProvider
from .offline import ExtractiveProvider
from .openai import LlamaCpp, LMStudio, Ollama, OpenAIProvider

if TYPE_CHECKING:
    from ..settings import Settings
    from .window import Window, WindowFinder

PROVIDERS: tuple[Provider, ...] = (
    ExtractiveProvider(), GeminiProvider(), OpenAIProvider(), Ollama(), LMStudio(), LlamaCpp(),
)


# The names a provider serves, as a user reads them in an error.
KNOWN_MODELS = (
    f"'extractive' (offline), a Gemini model such as '{DEFAULT_GEMINI}', 'openai:MODEL' for an "
    "OpenAI-compatible server, or 'ollama:MODEL', 'lmstudio:MODEL', 'llamacpp:MODEL' for a local one"
)


def provider_for(name: str) -> Provider:
    for provider in PROVIDERS:
        if provider.matches(name):
            return provider
    raise ModelConfigError(
        f"Unknown model {name!r}. Use {KNOWN_MODELS}; set it with --model or `chatagent config set model NAME`.",
        reason=f"Unknown model {name!r}. Use {KNOWN_MODELS}.", setting="model",
    )


def load_model(name: str | None = None, settings: "Settings | None" = None, *,
               windows: "WindowFinder | None" = None) -> Model:
    """The model called `name` (None: the one the settings name). `windows`:
    the finder of its window to share (a registry's); else one of its own."""
    if settings is None:
        from ..settings import Settings

        settings = Settings.load()
    name = (name or settings.model).strip()
    provider = provider_for(name)
    if windows is None:
        from .window import WindowFinder

        windows = WindowFinder(provider, name, settings)
    return Model(provider.create(name, settings), provider, provider.label(name), provider.endpoint(settings),
                 windows=windows)


class ModelRegistry:
    """The models one runtime has created, by name: a client (and its open
    connection) is made once and reused by every conversation."""

    def __init__(self, settings: "Settings") -> None:
        self.settings = settings
        self._models: dict[str, Model] = {}
        self._windows: dict[str, WindowFinder] = {}
        self._lock = threading.Lock()  # `get` may run on a worker thread (SDK imports are slow)
        # Held only to look a finder up: `window`, on the event loop, never waits for a model being made.
        self._windows_lock = threading.Lock()

    def get(self, name: str | None = None) -> Model:
        name = (name or self.settings.model).strip()
        with self._lock:
            if name not in self._models:
                self._models[name] = load_model(name, self.settings, windows=self._finder(name))
            return self._models[name]

    async def window(self, name: str | None = None) -> "Window":
        """The window of the model called `name` (None: the settings' model),
        as `Model.window` gives it, without making its client: the same
        finder serves both, so its server is asked once. A name no provider
        serves raises `ModelConfigError`, as `get` does."""
        return await self._finder((name or self.settings.model).strip()).get()

    def _finder(self, name: str) -> "WindowFinder":
        with self._windows_lock:
            if name not in self._windows:
                from .window import WindowFinder

                self._windows[name] = WindowFinder(provider_for(name), name, self.settings)
            return self._windows[name]

    async def warm(self, name: str | None = None) -> Model:
        """Create the model off the event loop and open its connection. A
        model made before is returned at once: its client, and the connection
        it keeps alive, are reused (a daemon's next ask pays no round trip)."""
        import asyncio

        with self._lock:
            made = self._models.get((name or self.settings.model).strip())
        if made is not None:
            return made
        model = await asyncio.to_thread(self.get, name)
        # Its window too, meanwhile: the first question finds it known (asking never raises).
        await asyncio.gather(model.provider.warm(model.chat), model.window())
        return model


__all__ = [
    "DEFAULT_GEMINI", "PROVIDERS", "Model", "ModelRegistry", "Provider", "load_model",
    "provider_for",
]
