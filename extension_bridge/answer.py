"""The host's answer function: the same ChatAgent as the CLI, over BridgeTabs.

The agent labels tabs 1..N (what the model sees); the side panel knows Chrome
tab ids. Events are translated back so citations and screenshots point at the
right Chrome tab.

One host serves one side panel for as long as it stays connected, so what
outlives a single ask lives here: the conversation (follow-ups work), the
extraction cache, the answer cache (skipped when an ask says `noCache`) and
the model clients. The host calls `warm()` as soon as the panel connects, so
the first question does not pay for the model client, its connection or the
text pipeline's one-off loads.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from langchain_core.language_models import BaseChatModel

from chatagent.agent import ChatAgent
from chatagent.cache import AnswerCache
from chatagent.context import ContextBuilder
from chatagent.events import Done, Event, Note, Screenshot, ToolCall
from chatagent.history import History
from chatagent.models import default_model_name, get_chat_model
from chatagent.session import warm_model, warm_pipeline

from .messages import AskMessage
from .tab import BridgeTab


def _relabel(event: Event, chrome_ids: dict[str, str]) -> Event:
    def chrome(label: str | None) -> str | None:
        return chrome_ids.get(label or "", label)

    if isinstance(event, Done):
        cites = [c.model_copy(update={"tab_id": chrome(c.tab_id)}) for c in event.citations]
        return event.model_copy(update={"citations": cites})
    if isinstance(event, (Screenshot, Note)) and event.tab_id:
        return event.model_copy(update={"tab_id": chrome(event.tab_id)})
    if isinstance(event, ToolCall) and "tab_id" in event.args:
        return event.model_copy(update={"args": {**event.args, "tab_id": chrome(str(event.args["tab_id"]))}})
    return event


class AgentAnswerer:
    """`answer(ask, tabs)` for `BridgeHost`, with the state a conversation keeps."""

    def __init__(self) -> None:
        self.builder = ContextBuilder()
        self.cache = AnswerCache()
        self.history = History()
        self._models: dict[str, BaseChatModel] = {}

    def _model(self, name: str | None) -> BaseChatModel:
        name = name or default_model_name()
        if name not in self._models:
            self._models[name] = get_chat_model(name)
        return self._models[name]

    async def warm(self) -> None:
        """Ready the default model's client (its SDK imported, its connection
        open) and the tokenizer, BM25 and extraction, while the first question
        is typed: on a fresh host they cost that question ~0.8 s. Best effort."""
        name = default_model_name()
        # The import of a client SDK takes a few hundred ms: not on the loop.
        model = await asyncio.to_thread(get_chat_model, name)
        model = self._models.setdefault(name, model)  # an ask may have made one meanwhile
        await asyncio.gather(warm_model(model), warm_pipeline())

    async def __call__(self, ask: AskMessage, tabs: list[BridgeTab]) -> AsyncIterator[Event]:
        agent = ChatAgent(
            self._model(ask.model), tabs, builder=self.builder, history=self.history,
            cache=None if ask.no_cache else self.cache,
        )
        chrome_ids = {str(i): tab.tab_id for i, tab in enumerate(tabs, 1)}
        async for event in agent.ask(ask.question):
            yield _relabel(event, chrome_ids)
