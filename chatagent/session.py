"""A browser, its tabs and a chat model, opened together for one CLI run.

The model client is created and warmed while the tabs load, so the first
question does not pay for client start-up or connection set-up; the text
pipeline (tokenizer, BM25, and the extraction worker processes with
trafilatura's fallbacks loaded) is warmed at the same time, so it does not pay
for their one-off loads. With `prefetch`, the tabs themselves are read (and
extracted, and analysed) as soon as they are open, while the user types the
first question.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import suppress
from typing import Any

from langchain_core.language_models import BaseChatModel

from .agent import DEFAULT_DEADLINE_S, INPUT_BUDGET_FACTOR, ChatAgent
from .browser.base import Browser, Tab, TabFailure
from .cache import AnswerCache
from .context import DEFAULT_TAB_BUDGET, ContextBuilder
from .extraction import ExtractionPool, Extractor, warm_extraction
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


_WARM_TEXT = "\n\n".join(
    f"Paragraph {i} reports the population of city number {i} and how it changed over the years."
    for i in range(40)
)


def _warm_pipeline_sync(extraction: bool) -> None:
    from .budget import fit_text
    from .tokens import encoding

    encoding()  # tiktoken's BPE tables: ~0.15-0.45 s on first use
    if extraction:
        warm_extraction()
    fit_text(_WARM_TEXT, 128, "Which city has the largest population?")  # stemmer, BM25


async def warm_pipeline(pool: ExtractionPool | None = None) -> None:
    """Load the text pipeline's lazy parts ahead of the first question: the
    tokenizer and budgeting on the default executor (where budgeting runs, so
    its first worker thread exists too), and extraction where it will run:
    `pool`'s workers, else that same executor. Best effort: a failure only
    costs the first question."""
    loop = asyncio.get_running_loop()
    jobs = [loop.run_in_executor(None, _warm_pipeline_sync, pool is None)]
    if pool is not None:
        jobs.append(pool.start())
    for outcome in await asyncio.gather(*jobs, return_exceptions=True):
        if isinstance(outcome, BaseException):
            log.debug("pipeline warm-up failed: %s", outcome)


class Session:
    def __init__(
        self, browser: Browser, tabs: list[Tab | TabFailure], model: BaseChatModel, agent: ChatAgent,
        pool: ExtractionPool | None = None,
    ) -> None:
        self.browser = browser
        self.tabs = tabs
        self.model = model
        self.agent = agent
        self._pool = pool

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
        input_budget_factor: float = INPUT_BUDGET_FACTOR,
        prefetch: bool = False,
    ) -> "Session":
        from .browser.playwright import PlaywrightBrowser

        chat_model = model if isinstance(model, BaseChatModel) else get_chat_model(model, **(model_options or {}))
        # Worker processes extract tabs in parallel; one tab gains nothing from
        # them, and starting them costs ~0.3 s of CPU next to Chromium's start.
        pool = ExtractionPool() if cdp or len(targets) > 1 else None
        warm = asyncio.gather(warm_model(chat_model), warm_pipeline(pool))
        browser: PlaywrightBrowser | None = None
        try:
            browser = await (PlaywrightBrowser.connect_cdp(cdp) if cdp else PlaywrightBrowser.launch())
            tabs: list[Tab | TabFailure]
            if cdp and not targets:
                tabs = list(browser.existing_tabs())
            else:
                tabs = await browser.open_tabs(targets, timeout_s=timeout_s)
            await warm
        except BaseException:
            warm.cancel()
            # Collect the cancelled warm-up: left unawaited, asyncio reports it at
            # exit ("exception was never retrieved", with tracebacks) after the clear error.
            with suppress(asyncio.CancelledError, Exception):
                await warm
            if browser is not None:
                await browser.close()
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
            raise
        agent = ChatAgent(
            chat_model, tabs, builder=ContextBuilder(Extractor(pool), budget_per_tab=budget_per_tab),
            cache=AnswerCache() if cache else None, deadline_s=deadline_s, input_budget_factor=input_budget_factor,
        )
        if prefetch:
            agent.builder.prefetch(tabs)
        return cls(browser, tabs, chat_model, agent, pool)

    async def close(self) -> None:
        self.agent.builder.cancel_prefetch()
        try:
            await self.browser.close()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)

    async def __aenter__(self) -> "Session":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
