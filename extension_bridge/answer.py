"""The host's answer function: a `Conversation` of the runtime, over BridgeTabs.

One host serves one side panel for as long as it stays connected; each of the
panel's threads is a conversation (follow-ups carry its history), and all
share the runtime's caches and model clients. The host calls `warm()` as soon as the panel
connects, so the first question does not pay for the model client, its
connection or the text pipeline's one-off loads.

Events name tabs by their conversation labels ("1", "2"); the side panel
knows Chrome tab ids, so the tab-valued fields of events are mapped back
through the tabs themselves.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from typing import Any

from chatagent.events import Done, Event, Note, Screenshot, ToolCall
from chatagent.runtime import Conversation, Runtime
from chatagent.selection import Selection
from chatagent.settings import Settings

from . import panel_settings
from .messages import (
    AskMessage,
    ModelCheckedMessage,
    ModelCheckMessage,
    SettingsGetMessage,
    SettingsMessage,
    SettingsSetMessage,
)
from .tab import BridgeTab


def _to_chrome(event: Event, tabs: Sequence[BridgeTab]) -> Event:
    ids = {t.label: t.tab_id for t in tabs}

    def chrome(label: str | None) -> str | None:
        return ids.get(label or "", label)

    if isinstance(event, Done):
        cites = [c.model_copy(update={"tab_id": chrome(c.tab_id)}) for c in event.citations]
        overviews = [o.model_copy(update={"tab_id": chrome(o.tab_id)}) for o in event.overviews]
        shares = [s.model_copy(update={"tab_id": chrome(s.tab_id)}) for s in event.shares]
        return event.model_copy(update={"citations": cites, "overviews": overviews, "shares": shares})
    if isinstance(event, (Screenshot, Note)) and event.tab_id:
        return event.model_copy(update={"tab_id": chrome(event.tab_id)})
    if isinstance(event, ToolCall):
        tab = next((t for t in tabs if t.label == str(event.args.get("tab_id", ""))), None)
        if tab is None and len(tabs) == 1:
            tab = tabs[0]
        words = event.in_words(where=_panel_name(tab))
        if "tab_id" in event.args:
            return event.model_copy(update={"args": {**event.args, "tab_id": chrome(str(event.args["tab_id"]))}, "words": words})
        return event.model_copy(update={"words": words})
    return event


def _panel_name(tab: BridgeTab | None) -> str:
    """A tab as the side panel names it: by its title."""
    if tab is None or not tab.title:
        return "the tab"
    title = tab.title if len(tab.title) <= 40 else f"{tab.title[:39]}…"
    return f"the “{title}” tab"


MAX_CONVERSATIONS = 32  # threads a panel keeps; the oldest is forgotten first


class AgentAnswerer:
    """`answer(ask, tabs)` for `BridgeHost`: the panel's conversations over the
    runtime, one per thread id, and the panel's settings."""

    def __init__(self, runtime: Runtime, flags: dict[str, Any] | None = None) -> None:
        self.runtime = runtime
        self.flags = flags or {}  # the host's own flags, which stay above whatever the panel saves
        self.conversations: OrderedDict[str | None, Conversation] = OrderedDict()

    async def warm(self) -> None:
        """Ready the configured model (its SDK imported, its connection open)
        and the tokenizer, BM25 and extraction while the first question is
        typed: on a fresh host they cost that question ~0.8 s."""
        await self.runtime.warm()

    def _conversation(self, ask: AskMessage) -> Conversation:
        conversation = self.conversations.pop(ask.conversation, None)
        if conversation is None:
            conversation = self.runtime.conversation()
            for turn in ask.earlier:  # a thread the panel kept while this host was not running
                conversation.history.recall(turn.question, turn.answer)
        self.conversations[ask.conversation] = conversation
        while len(self.conversations) > MAX_CONVERSATIONS:
            self.conversations.popitem(last=False)
        return conversation

    async def __call__(self, ask: AskMessage, tabs: list[BridgeTab]) -> AsyncIterator[Event]:
        await self.runtime.load()  # loading since the host started: wait here, not blocking the loop
        conversation = self._conversation(ask)
        # BridgeTabs are known by their Chrome tab ids (as strings).
        selection = Selection(tab_id=str(ask.selection.tab_id), text=ask.selection.text) if ask.selection else None
        stream = conversation.ask(
            ask.question, tabs=tabs, model=ask.model, cache=not ask.no_cache, selection=selection
        )
        try:
            async for event in stream:
                yield _to_chrome(event, tabs)
        finally:
            await stream.aclose()

    async def settings(
        self, request: SettingsGetMessage | SettingsSetMessage | ModelCheckMessage,
    ) -> SettingsMessage | ModelCheckedMessage:
        """The panel's settings; saved first when it sent new ones, and used
        from the next question on (conversations keep their history). Or its
        "Test connection", of the form as typed (nothing saved)."""
        if isinstance(request, ModelCheckMessage):
            return await panel_settings.check_model(request, self.flags)
        if isinstance(request, SettingsSetMessage):
            await asyncio.to_thread(panel_settings.save, request.values)
            await self.runtime.load()
            self.runtime.reconfigure(Settings.load(**self.flags))
        return panel_settings.describe(request.id, self.runtime.settings, self.flags)

