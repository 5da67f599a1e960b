"""`extractive`: the offline model, a LangChain chat model over the reader in `chatagent.offline`; it quotes, never generates.

It reads the typed page context the agent binds to it (`context=PageContext`), not the
prompt's text; in pass 2, the typed results of its own tool calls (a `ScrollResult`, a
re-read `TabContext`, on the tool messages' `artifact`). When nothing on the pages
answers, or the question is about how something looks, it asks for the browser (the
escalation marker); with tools bound it re-reads each tab, scrolls each to the bottom,
and for a visual question takes a screenshot, then says it cannot read images.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.ai import UsageMetadata
from pydantic import Field

from ..browser.base import ScrollResult
from ..citations import cite_quotes
from ..context import PageContext, TabContext
from ..prompts import ESCALATION_MARKER, message_text
from ..ranking import BM25Ranker, RankerFactory
from ..rows import has_rows
from ..offline.compose import Page, answer
from ..offline.summary import only_cited
from ..offline.passages import question_terms, terms
from ..offline.question import CHARTS, PICTURES, Question
from ..tokens import count_tokens
from .in_process import InProcessChatModel, pieces

_LOOKS = re.compile(r"\b(look(s|ed)? like|what colou?rs?\b|(which|what) colou?r|colou?r of\b)", re.I)
_PICTURE = re.compile(rf"\b({PICTURES})\b", re.I)
_SHOWN = re.compile(r"\b(show\w*|depict\w*|pictured|see|seen|visible|appears?|drawn|written|printed|displayed|in|on)\b",
                    re.I)
_PLOTTED = re.compile(rf"\b({CHARTS}|plot|plotted)\b", re.I)


def is_visual(question: str, texts: Sequence[str]) -> bool:
    """How something looks, what a picture shows, a chart on a page whose text has no table."""
    if _LOOKS.search(question) or (_PICTURE.search(question) and _SHOWN.search(question)):
        return True
    return bool(_PLOTTED.search(question)) and not any(has_rows(t) for t in texts)


def _page(tab: TabContext, text: str | None = None) -> Page:
    return Page(tab.tab_id, tab.title, tab.text if text is None else text, tab.authors, tab.published)


class ExtractiveChatModel(InProcessChatModel):
    """Offline, deterministic extractive answers over the typed page context (see module doc)."""

    ranker: RankerFactory = Field(default=BM25Ranker, exclude=True)

    @property
    def _llm_type(self) -> str:
        return "chatagent-extractive"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": "extractive"}

    def _reply(self, messages: Sequence[BaseMessage], tools: list[dict[str, Any]] | None = None,
               context: PageContext | None = None, **_: Any) -> AIMessage:
        if context is None:
            raise TypeError("The extractive model answers from the page context: call it with context=PageContext.")
        tabs = [t for t in context.tabs if t.ok]
        question = context.question or next(
            (message_text(m) for m in reversed(messages) if isinstance(m, HumanMessage)), "")
        visual = is_visual(question, [t.text for t in tabs])
        tool_names = {t["function"]["name"] for t in tools or []}
        if not tool_names:
            whole = _whole(tabs)
            said = None if visual else answer(Question.parse(question), [_page(t) for t in tabs], len(tabs), self.ranker,
                                              whole=whole)
            if said:  # each quote cites the block it comes from ([1.4]), as the prompt asks a model to
                said = cite_quotes(said, tabs)
                if whole and (cited := only_cited(said)):
                    said = cited
                return AIMessage(said)
            why = "the question is about something visual" if visual else "nothing in the page text matches the question"
            return AIMessage(f"{ESCALATION_MARKER} {why}")
        return self._use_tools(question, tabs, _activity(messages, question), tool_names, visual)

    def _use_tools(self, question: str, tabs: list[TabContext], done: list[tuple[str, dict[str, Any], Any, bool]],
                   tool_names: set[str], visual: bool) -> AIMessage:  # done: (name, args, artifact, ok) of each call
        only = tabs[0].tab_id if tabs else "1"
        if visual:
            target = max(tabs, key=lambda t: len(question_terms(question) & set(terms(f"{t.title} {t.text[:2000]}"))),
                         default=None)
            target_id = target.tab_id if target else only
            shot = [ok for name, args, _, ok in done if name == "screenshot_tool" and str(args.get("tab_id")) == target_id]
            if "screenshot_tool" in tool_names and not shot:
                return _call("screenshot_tool", {"tab_id": target_id})
            did = (f"I took a screenshot of [Tab {target_id}], but" if any(shot)
                   else f"I could not take a screenshot of [Tab {target_id}], and")
            return AIMessage(f"{did} I am the offline extractive model: I can only quote page text and cannot read "
                             "images, so I can't tell what it shows. Ask again with a vision model such as "
                             "gemini-2.5-flash (`--model`, `chatagent config` or the side panel's settings).")
        fresh: dict[str, list[str]] = {}
        for name, args, artifact, ok in done:
            text = artifact.text if ok and isinstance(artifact, (ScrollResult, TabContext)) else ""
            if text.strip():
                fresh.setdefault(artifact.tab_id if isinstance(artifact, TabContext) else str(args.get("tab_id") or only),
                                 []).append(text)
        pages = [_page(t, "\n\n".join(fresh[t.tab_id])) for t in tabs if t.tab_id in fresh]  # fresh: in tab order
        if pages and (said := answer(Question.parse(question), pages, len(tabs), self.ranker,  # a re-read's own ids
                                     whole=_whole(tabs))):
            return AIMessage(cite_quotes(said, [*tabs, *(a for *_, a, ok in done if ok and isinstance(a, TabContext))]))
        refreshed = {str(a.get("tab_id")) for n, a, _, _ in done if n == "refresh_browser_state_tool"}
        bottom = {str(a.get("tab_id") or only) for n, a, artifact, ok in done if n == "scroll_tool"
                  and (not ok or (isinstance(artifact, ScrollResult) and artifact.at_bottom))}
        for tool, did, more in (("refresh_browser_state_tool", refreshed, {}), ("scroll_tool", bottom, {"direction": "down"})):
            if tool in tool_names and (t := next((t for t in tabs if t.tab_id not in did), None)):
                return _call(tool, {"tab_id": t.tab_id, **more})
        searched = ("I read the whole text of the pages, re-read them and scrolled each to the bottom" if len(tabs) > 1
                    else "I read the whole page text, re-read the page and scrolled to the bottom")
        return AIMessage(f"{searched}, but found nothing that answers this question.")

    def _usage(self, messages: Sequence[BaseMessage], reply: AIMessage) -> UsageMetadata:
        inp = sum(count_tokens(message_text(m)) for m in messages)
        out = count_tokens(message_text(reply)) + sum(count_tokens(json.dumps(c["args"])) for c in reply.tool_calls)
        return {"input_tokens": inp, "output_tokens": out, "total_tokens": inp + out}

    def _text_pieces(self, reply: AIMessage) -> Iterator[str]:
        text = message_text(reply)
        return iter([text]) if text.startswith(ESCALATION_MARKER) else pieces(text, self.words_per_chunk)  # marker whole


def _whole(tabs: Sequence[TabContext]) -> bool:
    """Whether the question is about the pages as a whole (each tab's `scope`), for a summary."""
    return bool(tabs) and all(t.scope in ("whole", "part") for t in tabs)


def _activity(messages: Sequence[BaseMessage], question: str) -> list[tuple[str, dict[str, Any], Any, bool]]:
    """This question's tool calls so far: (name, args, the result's typed artifact, ok)."""
    start = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)
                 and message_text(m).strip() == question.strip()), default=-1)
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    out = []
    for m in messages[start + 1 :]:
        if isinstance(m, AIMessage):
            calls.update({c["id"] or "": (c["name"], c["args"]) for c in m.tool_calls})
        elif isinstance(m, ToolMessage):
            name, args = calls.get(m.tool_call_id, (m.name or "", {}))
            out.append((name, args, m.artifact, m.status != "error"))
    return out


def _call(name: str, args: dict[str, Any]) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:12]}",
                                      "type": "tool_call"}])
