"""The host's answer function: a `Conversation` of the runtime, over BridgeTabs.

One host serves one side panel for as long as it stays connected, so the
conversation (follow-ups work) lives as long as the host, with the runtime's
caches and model clients. The host calls `warm()` as soon as the panel
connects, so the first question does not pay for the model client, its
connection or the text pipeline's one-off loads.

Events name tabs by their conversation labels ("1", "2"); the side panel
knows Chrome tab ids, so the tab-valued fields of events are mapped back
through the tabs themselves.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from chatagent.events import Done, Event, Note, Screenshot, ToolCall
from chatagent.runtime import Runtime

from .messages import AskMessage
from .tab import BridgeTab


def _to_chrome(event: Event, tabs: Sequence[BridgeTab]) -> Event:
    ids = {t.label: t.tab_id for t in tabs}

    def chrome(label: str | None) -> str | None:
        return ids.get(label or "", label)

    if isinstance(event, Done):
        cites = [c.model_copy(update={"tab_id": chrome(c.tab_id)}) for c in event.citations]
        return event.model_copy(update={"citations": cites})
    if isinstance(event, (Screenshot, Note)) and event.tab_id:
        return event.model_copy(update={"tab_id": chrome(event.tab_id)})
    if isinstance(event, ToolCall) and "tab_id" in event.args:
        return event.model_copy(update={"args": {**event.args, "tab_id": chrome(str(event.args["tab_id"]))}})
    return event


class AgentAnswerer:
    """`answer(ask, tabs)` for `BridgeHost`: one conversation over the runtime."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.conversation = runtime.conversation()

    async def warm(self) -> None:
        """Ready the configured model (its SDK imported, its connection open)
        and the tokenizer, BM25 and extraction while the first question is
        typed: on a fresh host they cost that question ~0.8 s."""
        await self.runtime.warm()

    async def __call__(self, ask: AskMessage, tabs: list[BridgeTab]) -> AsyncIterator[Event]:
        stream = self.conversation.ask(ask.question, tabs=tabs, model=ask.model, cache=not ask.no_cache)
        try:
            async for event in stream:
                yield _to_chrome(event, tabs)
        finally:
            await stream.aclose()
