"""A browser, its tabs and a chat model, opened together for one CLI run.

The model client is created and warmed while the tabs load, so the first
question does not pay for client start-up or connection set-up.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from langchain_core.language_models import BaseChatModel

from .agent import ChatAgent
from .browser.base import Browser, Tab, TabFailure
from .context import DEFAULT_TAB_BUDGET, ContextBuilder
from .models import get_chat_model

log = logging.getLogger(__name__)


async def warm_model(model: BaseChatModel) -> None:
    """Open the client's HTTP connection ahead of the first question, if it has one."""
    client = getattr(model, "client", None)
    aio = getattr(client, "aio", None)
    models = getattr(aio, "models", None)
    if models is None:
        return
    try:
        # A metadata GET: sets up TLS/HTTP keep-alive; costs no tokens.
        await asyncio.wait_for(models.get(model=getattr(model, "model", "")), timeout=5)
    except Exception as exc:  # noqa: BLE001 - warming is best effort
        log.debug("model warm-up skipped: %s", exc)


class Session:
    def __init__(self, browser: Browser, tabs: list[Tab | TabFailure], model: BaseChatModel, agent: ChatAgent) -> None:
        self.browser = browser
        self.tabs = tabs
        self.model = model
        self.agent = agent

    @classmethod
    async def open(
        cls,
        targets: list[str],
        *,
        model: str | BaseChatModel | None = None,
        cdp: str | None = None,
        timeout_s: float | None = None,
        budget_per_tab: int = DEFAULT_TAB_BUDGET,
        model_options: dict[str, Any] | None = None,
    ) -> "Session":
        from .browser.playwright import PlaywrightBrowser

        chat_model = model if isinstance(model, BaseChatModel) else get_chat_model(model, **(model_options or {}))
        warm = asyncio.create_task(warm_model(chat_model))
        browser = await (PlaywrightBrowser.connect_cdp(cdp) if cdp else PlaywrightBrowser.launch())
        try:
            tabs: list[Tab | TabFailure]
            if cdp and not targets:
                tabs = list(browser.existing_tabs())
            else:
                tabs = await browser.open_tabs(targets, timeout_s=timeout_s)
            await warm
        except BaseException:
            warm.cancel()
            await browser.close()
            raise
        agent = ChatAgent(chat_model, tabs, builder=ContextBuilder(budget_per_tab=budget_per_tab))
        return cls(browser, tabs, chat_model, agent)

    async def close(self) -> None:
        await self.browser.close()

    async def __aenter__(self) -> "Session":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
