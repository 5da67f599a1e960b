"""The host's answer function: the same ChatAgent as the CLI, over BridgeTabs.

The agent labels tabs 1..N (what the model sees); the side panel knows Chrome
tab ids. Events are translated back so citations and screenshots point at the
right Chrome tab.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from chatagent.agent import ChatAgent
from chatagent.events import Done, Event, Note, Screenshot, ToolCall
from chatagent.models import get_chat_model

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


async def agent_answer(ask: AskMessage, tabs: list[BridgeTab]) -> AsyncIterator[Event]:
    agent = ChatAgent(get_chat_model(ask.model), tabs)
    chrome_ids = {str(i): tab.tab_id for i, tab in enumerate(tabs, 1)}
    async for event in agent.ask(ask.question):
        yield _relabel(event, chrome_ids)
