"""A browser, its tabs and a chat model, opened together for one CLI run.

The model client is created and warmed while the tabs load, so the first
question does not pay for client start-up or connection set-up; the text
pipeline (tokenizer, trafilatura's fallbacks, BM25, the extraction thread
pool) is warmed at the same time, so it does not pay for their one-off loads.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from langchain_core.language_models import BaseChatModel

from .agent import DEFAULT_DEADLINE_S, ChatAgent
from .browser.base import Browser, Tab, TabFailure
from .cache import AnswerCache
from .context import DEFAULT_TAB_BUDGET, ContextBuilder
from .models import get_chat_model

log = logging.getLogger(__name__)


async def warm_model(model: BaseChatModel) -> None:
    """Open the client's HTTP connection ahead of the first question, if it has
    one, and build what its first generate request would otherwise build."""
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
    _warm_generate_path(model)


def _warm_generate_path(model: BaseChatModel) -> None:
    """The first streamed request of a process spends ~60-200 ms building
    google-genai's pydantic models (they are built on first use) and importing
    LangChain's tracing helpers; do that now, offline. Best effort: these are
    the client libraries' internals, and nothing breaks if they move."""
    from langchain_core.messages import HumanMessage, SystemMessage

    try:
        from langchain_core.callbacks.manager import AsyncCallbackManager

        AsyncCallbackManager.configure()
        from google.genai import types

        prepare = getattr(model, "_prepare_request", None)
        request = prepare([SystemMessage("warm-up"), HumanMessage("warm-up")]) if callable(prepare) else None
        params = getattr(types, "_GenerateContentParameters", None)
        if params is not None and isinstance(request, dict):
            # Validate and serialise as the SDK will: fills pydantic's and abc's caches.
            from google.genai import _common

            _common.convert_to_dict(params(**request))
        chunk = {
            "candidates": [{"content": {"parts": [{"text": "ok"}], "role": "model"}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
            "modelVersion": "warm-up",
            "responseId": "warm-up",
        }
        types.GenerateContentResponse._from_response(response=chunk, kwargs={})
    except Exception as exc:  # noqa: BLE001 - warming is best effort
        log.debug("generate-path warm-up skipped: %s", exc)


# A small page that takes every path of the pipeline once: trafilatura with its
# readability and justext fallbacks (the text is short), the missed-table pass,
# and a question-aware fit (tokenizer, stemmer, BM25).
_WARM_HTML = """<!DOCTYPE html><html><head><title>Warm-up</title></head><body>
<nav><a href="/">Home</a> <a href="/a">About</a></nav>
<h1>Warm-up page</h1><p>This page only warms the extraction pipeline up.</p>
<h2>Results</h2><table><tr><th>City</th><th>Population</th></tr>
<tr><td>Springfield</td><td>30,720</td></tr><tr><td>Shelbyville</td><td>25,113</td></tr></table>
<footer>Copyright nobody</footer></body></html>"""
_WARM_TEXT = "\n\n".join(
    f"Paragraph {i} reports the population of city number {i} and how it changed over the years."
    for i in range(40)
)


def _warm_pipeline_sync() -> None:
    from .browser.base import PageSnapshot
    from .budget import fit_text
    from .extraction import extract_snapshot
    from .tokens import encoding

    encoding()  # tiktoken's BPE tables: ~0.15-0.45 s on first use
    # trafilatura loads every justext stoplist on its first fallback (~0.15-0.4 s).
    extract_snapshot(PageSnapshot(
        tab_id="warm-up", url="http://localhost/warm-up", title="Warm-up", html=_WARM_HTML,
        visible_text="Home About\nWarm-up page\nThis page only warms the extraction pipeline up.\n"
        "Results\nCity Population\nSpringfield 30,720\nShelbyville 25,113\nCopyright nobody",
    ))
    fit_text(_WARM_TEXT, 128, "Which city has the largest population?")


async def warm_pipeline() -> None:
    """Load the text pipeline's lazy parts ahead of the first question, on the
    default executor (the one extraction and budgeting run on), so its first
    worker thread exists too. Best effort: a failure only costs the first question."""
    loop = asyncio.get_running_loop()
    try:
        await loop.run_in_executor(None, _warm_pipeline_sync)
    except Exception as exc:  # noqa: BLE001 - warming is best effort
        log.debug("pipeline warm-up failed: %s", exc)


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
        cache: bool = False,
        deadline_s: float | None = DEFAULT_DEADLINE_S,
    ) -> "Session":
        from .browser.playwright import PlaywrightBrowser

        chat_model = model if isinstance(model, BaseChatModel) else get_chat_model(model, **(model_options or {}))
        warm = asyncio.gather(warm_model(chat_model), warm_pipeline())
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
        agent = ChatAgent(
            chat_model, tabs, builder=ContextBuilder(budget_per_tab=budget_per_tab),
            cache=AnswerCache() if cache else None, deadline_s=deadline_s,
        )
        return cls(browser, tabs, chat_model, agent)

    async def close(self) -> None:
        await self.browser.close()

    async def __aenter__(self) -> "Session":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
