"""The `extractive` model's provider: the offline default. Light on purpose:
the model itself (`chatagent.offline`: ~40 ms of imports) is loaded only when
it is made, not whenever a model is named."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Provider

if TYPE_CHECKING:
    import httpx
    from langchain_core.language_models import BaseChatModel

    from ..settings import Settings
    from .window import Window

# It reads the typed page context in process, not a prompt: no window bounds it.
# This many tokens stands for none (20 tabs of the 16,000 it reads at least).
OFFLINE_WINDOW = 1_000_000


class ExtractiveProvider(Provider):
    """The offline model: no key, no endpoint, nothing to warm."""

    name = "extractive"
    # Its reading is local and costs nothing, so it answers from up to a long
    # article's text: a count or a "most" over a table needs every row, not the
    # rows a 2,000-token cut keeps (WikiTableQuestions: 0.493 → 0.510, docs/offline-answers.md).
    reads_per_tab = 16_000
    metered = False  # pass 2 over several tabs re-reads each: no input budget to run out of
    reads_context = True  # it answers from the typed page context, not from the prompt's text

    def matches(self, model: str) -> bool:
        return model == "extractive"

    async def serves(self, settings: "Settings", http: object) -> list[str]:
        return ["extractive"]

    async def window(self, model: str, settings: "Settings", http: "httpx.AsyncClient") -> "Window":
        from .window import Window

        return Window(tokens=OFFLINE_WINDOW, origin="default",
                      source="provider default: the offline model reads the page context in process, no window")

    def default_window(self, model: str, endpoint: str) -> int:
        return OFFLINE_WINDOW

    def create(self, model: str, settings: "Settings") -> "BaseChatModel":
        from .extractive import ExtractiveChatModel

        return ExtractiveChatModel(timeout_s=settings.offline_timeout)

    async def warm(self, chat: "BaseChatModel") -> None:
        """Start its reading worker (`offline.worker`) while the pages load."""
        from .extractive import ExtractiveChatModel

        if isinstance(chat, ExtractiveChatModel):
            await chat.warm()
