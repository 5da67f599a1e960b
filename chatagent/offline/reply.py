"""What the offline model replies, from the typed page context and its own tool calls so far.

Plain data in, plain data out, and no LangChain: it runs in a worker process
(`offline.worker`), where a question's cancellation or deadline can stop it.
`models.extractive` turns it into a chat model's reply.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..browser.base import ScrollResult
from ..citations import cite_quotes
from ..context import PageContext, TabContext
from ..ranking import BM25Ranker, RankerFactory
from ..rows import has_rows
from .compose import Page, answer
from .passages import question_terms, terms
from .question import CHARTS, PICTURES, Question
from .summary import only_cited

_LOOKS = re.compile(r"\b(look(s|ed)? like|what colou?rs?\b|(which|what) colou?r|colou?r of\b)", re.I)
_PICTURE = re.compile(rf"\b({PICTURES})\b", re.I)
_SHOWN = re.compile(r"\b(show\w*|depict\w*|pictured|see|seen|visible|appears?|drawn|written|printed|displayed|in|on)\b",
                    re.I)
_PLOTTED = re.compile(rf"\b({CHARTS}|plot|plotted)\b", re.I)

# One of this question's tool calls: (name, args, the result's typed artifact, ok).
Done = tuple[str, dict[str, Any], Any, bool]


@dataclass(frozen=True)
class Reply:
    """The text said, or the browser asked for (`escalate`: why), or one tool call (`tool`, `args`)."""

    text: str = ""
    escalate: str = ""
    tool: str = ""
    args: dict[str, Any] = field(default_factory=dict)


def is_visual(question: str, texts: Sequence[str]) -> bool:
    """How something looks, what a picture shows, a chart on a page whose text has no table."""
    if _LOOKS.search(question) or (_PICTURE.search(question) and _SHOWN.search(question)):
        return True
    return bool(_PLOTTED.search(question)) and not any(has_rows(t) for t in texts)


def reply(question: str, context: PageContext, done: list[Done], tool_names: frozenset[str],
          ranker: RankerFactory = BM25Ranker, *, time_s: float | None = None) -> Reply:
    """The offline model's reply to `question` about the tabs of `context`; `done`: its tool
    calls so far in this question, `tool_names`: the tools bound (none in pass 1). `time_s`:
    the parts of a many-part question not reached after this long are named, not answered."""
    tabs = [t for t in context.tabs if t.ok]
    visual = is_visual(question, [t.text for t in tabs])
    if not tool_names:
        whole = _whole(tabs)
        said = None if visual else answer(Question.parse(question), [_page(t) for t in tabs], len(tabs), ranker,
                                          whole=whole, time_s=time_s)
        if said:  # each quote cites the block it comes from ([1.4]), as the prompt asks a model to
            said = cite_quotes(said, tabs)
            if whole and (cited := only_cited(said)):
                said = cited
            return Reply(said)
        return Reply(escalate="the question is about something visual" if visual
                     else "nothing in the page text matches the question")
    return _use_tools(question, tabs, done, tool_names, visual, ranker, time_s)


def reply_within(asked: tuple[str, PageContext, list[Done], frozenset[str]], ranker: RankerFactory,
                 time_s: float | None) -> Reply:
    """`reply` as one picklable call, for a worker (`offline.worker`)."""
    return reply(*asked, ranker, time_s=time_s)


def warm() -> None:
    """Load what a reply needs (run in a worker as it starts, so a first question finds it loaded)."""
    tab = TabContext(tab_id="1", url="http://localhost/warm-up", title="Warm-up", text="# Warm-up\n\nIt costs $3.")
    reply("How much is it?", PageContext(tabs=[tab], budget_per_tab=100), [], frozenset())


def _use_tools(question: str, tabs: list[TabContext], done: list[Done], tool_names: frozenset[str], visual: bool,
               ranker: RankerFactory, time_s: float | None) -> Reply:
    only = tabs[0].tab_id if tabs else "1"
    if visual:
        target = max(tabs, key=lambda t: len(question_terms(question) & set(terms(f"{t.title} {t.text[:2000]}"))),
                     default=None)
        target_id = target.tab_id if target else only
        shot = [ok for name, args, _, ok in done if name == "screenshot_tool" and str(args.get("tab_id")) == target_id]
        if "screenshot_tool" in tool_names and not shot:
            return Reply(tool="screenshot_tool", args={"tab_id": target_id})
        did = (f"I took a screenshot of [Tab {target_id}], but" if any(shot)
               else f"I could not take a screenshot of [Tab {target_id}], and")
        return Reply(f"{did} I am the offline extractive model: I can only quote page text and cannot read "
                     "images, so I can't tell what it shows. Ask again with a vision model such as "
                     "gemini-2.5-flash (`--model`, `chatagent config` or the side panel's settings).")
    fresh: dict[str, list[str]] = {}
    for name, args, artifact, ok in done:
        text = artifact.text if ok and isinstance(artifact, (ScrollResult, TabContext)) else ""
        if text.strip():
            fresh.setdefault(artifact.tab_id if isinstance(artifact, TabContext) else str(args.get("tab_id") or only),
                             []).append(text)
    pages = [_page(t, "\n\n".join(fresh[t.tab_id])) for t in tabs if t.tab_id in fresh]  # fresh: in tab order
    if pages and (said := answer(Question.parse(question), pages, len(tabs), ranker,  # a re-read's own ids
                                 whole=_whole(tabs), time_s=time_s)):
        return Reply(cite_quotes(said, [*tabs, *(a for *_, a, ok in done if ok and isinstance(a, TabContext))]))
    refreshed = {str(a.get("tab_id")) for n, a, _, _ in done if n == "refresh_browser_state_tool"}
    bottom = {str(a.get("tab_id") or only) for n, a, artifact, ok in done if n == "scroll_tool"
              and (not ok or (isinstance(artifact, ScrollResult) and artifact.at_bottom))}
    for tool, did, more in (("refresh_browser_state_tool", refreshed, {}), ("scroll_tool", bottom, {"direction": "down"})):
        if tool in tool_names and (t := next((t for t in tabs if t.tab_id not in did), None)):
            return Reply(tool=tool, args={"tab_id": t.tab_id, **more})
    searched = ("I read the whole text of the pages, re-read them and scrolled each to the bottom" if len(tabs) > 1
                else "I read the whole page text, re-read the page and scrolled to the bottom")
    return Reply(f"{searched}, but found nothing that answers this question.")


def _page(tab: TabContext, text: str | None = None) -> Page:
    return Page(tab.tab_id, tab.title, tab.text if text is None else text, tab.authors, tab.published)


def _whole(tabs: Sequence[TabContext]) -> bool:
    """Whether the question is about the pages as a whole (each tab's `scope`), for a summary."""
    return bool(tabs) and all(t.scope in ("whole", "part") for t in tabs)
