"""The three browser tools of pass 2, and the runner that enforces them.

Only these three names can ever run: the whitelist is checked in code, whatever
the model (or a page speaking through it) asks for. Browser tools share the
tabs' state, so the runner executes them strictly one at a time.
"""

from __future__ import annotations

import base64
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from .blocks import next_block
from .browser.base import ScrollResult, Tab
from .context import ContextBuilder, PageContext, TabContext
from .errors import ChatAgentError, ToolError


_TAB_ID = "The tab number, e.g. '1'; may be left out when one tab is open."


class screenshot_tool(BaseModel):  # noqa: N801 - the name the model sees
    """Take a screenshot of a tab's visible viewport (of a PDF: its current page) and look at it. Use for images, charts, canvases, colours, layout and scanned PDFs."""

    tab_id: str | None = Field(default=None, description=_TAB_ID)


class scroll_tool(BaseModel):  # noqa: N801
    """Scroll a tab and return the text that is then visible (a PDF scrolls by pages). Use to reach content further down the page, including content that loads only when scrolled to."""

    tab_id: str | None = Field(default=None, description=_TAB_ID)
    direction: Literal["down", "up", "top", "bottom"] = Field(
        default="down", description="Scroll by one screen down or up, or jump to the top or bottom."
    )
    to_text: str | None = Field(default=None, description="Optional: scroll to the first place this text appears instead.")


class refresh_browser_state_tool(BaseModel):  # noqa: N801
    """Re-read a tab's current content, e.g. when the page may have changed since it was first read."""

    tab_id: str | None = Field(default=None, description=_TAB_ID)


TOOL_SCHEMAS: tuple[type[BaseModel], ...] = (screenshot_tool, scroll_tool, refresh_browser_state_tool)
TOOL_NAMES: frozenset[str] = frozenset(t.__name__ for t in TOOL_SCHEMAS)


class ToolOutcome(BaseModel):
    """What one tool call produced: text for the model, plus extras for the UI."""

    name: str
    ok: bool
    tab_id: str = ""  # the tab's label, when the call named one that exists
    text: str  # the tool result the model reads
    summary: str  # a short line for the user
    png: bytes | None = None
    fresh: TabContext | None = None  # refreshed page text, for a browser-state message
    scroll: ScrollResult | None = None  # where a scroll left the tab: the tool message's artifact

    @property
    def png_base64(self) -> str | None:
        return base64.b64encode(self.png).decode() if self.png else None


class ToolRunner:
    """Runs whitelisted tool calls against the session's tabs, one at a time.

    `tabs` maps the labels the model sees ("1", "2", …) to tabs.
    """

    def __init__(self, tabs: dict[str, Tab], builder: ContextBuilder, question: str | None = None) -> None:
        self.tabs = tabs
        self.builder = builder
        self.question = question
        self._bottom: dict[str, ScrollResult] = {}  # label -> the scroll that reached the bottom
        self._seen: dict[str, str] = {}  # label -> content hash of the text the model has
        self._next_block: dict[str, int] = {}  # label -> where a re-read's block ids start (after those it was given)

    def start(self, question: str, context: PageContext) -> None:
        """A new question's pass 2: its model has seen `context`, and no scrolls."""
        self.question = question
        self._bottom.clear()
        self._seen = {t.tab_id: t.content_hash for t in context.tabs if t.ok}
        self._next_block = {t.tab_id: next_block(t) for t in context.tabs if t.ok}

    async def run(self, name: str, args: dict[str, Any]) -> ToolOutcome:
        if name not in TOOL_NAMES:
            msg = f"Tool {name!r} does not exist. The only tools are: {', '.join(sorted(TOOL_NAMES))}."
            return ToolOutcome(name=name, ok=False, text=msg, summary=f"refused unknown tool {name}")
        schema = next(t for t in TOOL_SCHEMAS if t.__name__ == name)
        try:
            parsed = schema.model_validate(args or {})
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'args'}: {e['msg']}" for e in exc.errors())
            return ToolOutcome(name=name, ok=False, text=f"Bad arguments for {name}: {problems}", summary="bad arguments")
        valid = ", ".join(sorted(self.tabs)) or "none"
        given = str(getattr(parsed, "tab_id", None) or "").strip().removeprefix("Tab ").strip()
        if not given and len(self.tabs) != 1:
            return ToolOutcome(name=name, ok=False, text=f"Say which tab: tab_id is one of {valid}.", summary="no tab named")
        tab_id = given or next(iter(self.tabs))
        tab = self.tabs.get(tab_id)
        if tab is None:
            return ToolOutcome(name=name, ok=False, text=f"There is no tab {tab_id!r}. Open tabs: {valid}.", summary=f"no tab {tab_id}")
        async with tab.turn:  # another question's tools on this tab wait their turn
            try:
                return await getattr(self, f"_{name}")(tab_id, tab, parsed)
            except ChatAgentError as exc:
                # The model gets the error and can try something else.
                return ToolOutcome(name=name, ok=False, tab_id=tab_id, text=exc.message, summary=exc.message)

    async def _screenshot_tool(self, label: str, tab: Tab, args: screenshot_tool) -> ToolOutcome:
        png = await tab.screenshot()
        return ToolOutcome(
            name="screenshot_tool", ok=True, png=png, tab_id=label,
            text=f"Screenshot of tab {label} taken; the image follows.",
            summary=f"screenshot of tab {label}",
        )

    async def _scroll_tool(self, label: str, tab: Tab, args: scroll_tool) -> ToolOutcome:
        result = await tab.scroll(args.direction, args.to_text)
        how = f"to {args.to_text!r}" if args.to_text else args.direction
        before = self._bottom.pop(label, None)
        if result.at_bottom:
            self._bottom[label] = result
            if before is not None and args.direction in ("down", "bottom") and not args.to_text \
                    and result.page_height <= before.page_height:
                # Scrolling on at the bottom only repeats text the model has: say so, briefly.
                return ToolOutcome(
                    name="scroll_tool", ok=False, tab_id=label, scroll=result,
                    text=f"Tab {label} is already at the bottom of the page and nothing more loaded; "
                    "there is nothing further down. Answer with what you have.",
                    summary=f"tab {label} is already at the bottom",
                )
        return ToolOutcome(
            name="scroll_tool", ok=True, tab_id=label, scroll=result,
            text=f"Tab {label} scrolled {how}. {result.describe()}",
            summary=f"scrolled tab {label} {how}" + (" (bottom)" if result.at_bottom else ""),
        )

    async def _refresh_browser_state_tool(self, label: str, tab: Tab, args: refresh_browser_state_tool) -> ToolOutcome:
        ctx = await self.builder.build([tab], self.question)
        # Its block ids follow those the model was given: an id names one passage in a request.
        fresh = ctx.tabs[0].model_copy(update={"tab_id": label, "first_block": self._next_block.get(label, 1)})
        if not fresh.ok:
            raise ToolError(fresh.error or f"Tab {label} could not be read.")
        if self._seen.get(label) == fresh.content_hash:
            # Sending the same text again would only cost tokens.
            return ToolOutcome(
                name="refresh_browser_state_tool", ok=True, tab_id=label,
                text=f"Tab {label} has not changed since it was read: its text is the one you already have.",
                summary=f"tab {label} unchanged",
            )
        self._seen[label] = fresh.content_hash
        self._next_block[label] = next_block(fresh)
        return ToolOutcome(
            name="refresh_browser_state_tool", ok=True, fresh=fresh, tab_id=label,
            text=f"Tab {label} re-read ({fresh.url}, {fresh.tokens} tokens); its fresh text follows.",
            summary=f"re-read tab {label}",
        )


def tool_specs() -> list[dict[str, Any]]:
    """OpenAI-style function specs, accepted by every LangChain chat model's bind_tools."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    return [convert_to_openai_tool(t) for t in TOOL_SCHEMAS]
