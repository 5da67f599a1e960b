"""Typed events streamed by `ChatAgent`: the one vocabulary the CLI, `--json`
and the extension bridge all speak. A run ends with exactly one `done` or `error`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, computed_field, model_validator

from .errors import ChatAgentError


class _Event(BaseModel):
    # `pass` is a Python keyword: the field is `pass_`, spelled "pass" on the wire.
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    def to_json(self) -> str:
        return self.model_dump_json(exclude_none=True)


class PassStart(_Event):
    type: Literal["pass_start"] = "pass_start"
    pass_: int = Field(alias="pass", serialization_alias="pass")
    reason: str | None = None


class Token(_Event):
    type: Literal["token"] = "token"
    text: str


class ToolCall(_Event):
    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    words: str = ""  # the call as a person is told it; front ends that name tabs otherwise replace it

    @model_validator(mode="after")
    def _told(self) -> "ToolCall":
        self.words = self.words or self.in_words()
        return self

    def in_words(self, where: str | None = None) -> str:
        """The call as a person is told it while it runs ("Scrolling down Tab 1…").
        `where` names the tab as the front end does (the side panel says its
        title); by default its label, as the terminal and MCP name it."""
        if where is None:
            tab = str(self.args.get("tab_id") or "").strip().removeprefix("Tab ").strip()
            where = f"Tab {tab}" if tab else "the tab"
        tool = self.name.removesuffix("_tool")
        if tool == "scroll":
            if to := str(self.args.get("to_text") or ""):
                return f"Scrolling {where} to “{to[:40]}”…"
            return {"up": f"Scrolling up {where}…", "top": f"Going to the top of {where}…",
                    "bottom": f"Going to the end of {where}…"}.get(str(self.args.get("direction")),
                                                                  f"Scrolling down {where}…")
        if tool == "screenshot":
            return f"Looking at {where}…"
        if tool == "refresh_browser_state":
            return f"Reading {where} again…"
        return f"Working on {where}…"


class ToolResult(_Event):
    type: Literal["tool_result"] = "tool_result"
    id: str
    name: str
    text: str  # short, human-readable; never raw image bytes
    ok: bool = True


class Screenshot(_Event):
    type: Literal["screenshot"] = "screenshot"
    tab_id: str
    png_base64: str


class Note(_Event):
    """Something the user should know that is not part of the answer
    (a tab that failed to load, a cut page, a cached answer)."""

    type: Literal["note"] = "note"
    text: str
    tab_id: str | None = None


class Citation(BaseModel):
    """A source of the answer: a whole tab ([Tab 1]) or one passage of it ([1.4])."""

    tab_id: str
    url: str  # the page; for a passage, with a text fragment (#:~:text=…) that opens it at `quote`
    title: str = ""
    label: str = ""  # how the answer names the tab: "1" for [Tab 1] (front ends may map tab_id to their own ids)
    block: str = ""  # the passage's id as the answer cites it, "1.4" for [1.4]; empty for a whole tab
    quote: str = ""  # the passage's words, verbatim from the page; empty for a whole tab


class Overview(BaseModel):
    """A tab the model was given as an overview: every part of the page, each from its opening,
    in page order (`overview.py`), not the parts that match the question. So it is for a request
    about the page as a whole ("summarize it", `scope` "whole"), or about some of its parts as
    wholes ("part"), or for a question that names nothing on the page ("unmatched"). Front ends
    say so beside the answer's sources (`in_words`)."""

    tab_id: str  # as citations name it: its label, or the front end's own id (the side panel's)
    url: str = ""
    title: str = ""
    scope: str = "whole"  # what the request asks of the page (`TabContext.scope`); "part": of the parts it names
    parts: int = 0  # the parts the page (or those parts) was cut into
    parts_shown: int = 0  # of them, those shown some of

    @classmethod
    def of(cls, tabs: Iterable[Any]) -> list["Overview"]:
        """The overviews among a page context's tabs (`context.TabContext`s, or any with their fields)."""
        return [cls(tab_id=t.tab_id, url=t.url, title=t.title, scope=t.scope, parts=t.parts, parts_shown=t.parts_shown)
                for t in tabs if getattr(t, "overview", False)]

    def in_words(self) -> str:
        """"overview of the whole page: 8 of 14 parts" (or "of the parts asked about"; "all 6
        parts"; no count for a page in one part)."""
        return overview_words(self.scope, self.parts, self.parts_shown)


def overview_words(scope: str, parts: int, parts_shown: int) -> str:
    """How a tab given as an overview is told to a person, from its typed fields (never from its text's marker)."""
    what = "overview of the parts asked about" if scope == "part" else "overview of the whole page"
    if parts <= 1:
        return what
    shown = f"all {parts:,} parts" if parts_shown >= parts else f"{parts_shown:,} of {parts:,} parts"
    return f"{what}: {shown}"


class TabShare(BaseModel):
    """How much of one tab's text the model was given: all of it, a share ("14% of its text"),
    or its title only (its budget left no line of it). Front ends show it beside the sources,
    as `context` does per tab."""

    tab_id: str  # as citations name it: its label, or the front end's own id (the side panel's)
    url: str = ""
    title: str = ""
    tokens: int = 0  # of its text, given to the model
    page_tokens: int = 0  # of its text in all, as read

    @computed_field  # type: ignore[prop-decorator]
    @property
    def share(self) -> float:
        """Of its text, the share given: 1.0 for all of it (or a tab with no text)."""
        return 1.0 if self.page_tokens <= 0 else round(min(self.tokens / self.page_tokens, 1.0), 3)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def title_only(self) -> bool:
        return self.tokens <= 0 < self.page_tokens

    @property
    def whole(self) -> bool:
        return self.page_tokens <= self.tokens

    @classmethod
    def of(cls, tabs: Iterable[Any]) -> list["TabShare"]:
        """The tabs read of a page context (`context.TabContext`s, or any with their fields)."""
        return [cls(tab_id=t.tab_id, url=t.url, title=t.title, tokens=t.tokens, page_tokens=t.original_tokens)
                for t in tabs if getattr(t, "error", None) is None]

    def in_words(self) -> str:
        """"all of its text", "14% of its text", "under 1% of its text", "title only"."""
        return share_words(self.tokens, self.page_tokens)


def share_words(tokens: int, page_tokens: int) -> str:
    """How much of a tab's text went to the model, in words (from the counts, never from its text)."""
    if page_tokens <= tokens:
        return "all of its text"
    if tokens <= 0:
        return "title only"
    return f"{percent(tokens / page_tokens)} of its text"


def percent(share: float) -> str:
    """A part short of the whole, as a percentage: "14%", "under 1%", never "0%" or "100%"."""
    pct = 100 * share
    return "under 1%" if pct < 1 else f"{min(round(pct), 99)}%"


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    # Some of the figures are chatagent's own count (the tokenizer's, cl100k):
    # the server reported no usage for a reply (llama.cpp's server, in a stream).
    counted: bool = False


class Timings(BaseModel):
    first_token_ms: float | None = None
    total_ms: float = 0.0
    extraction_ms: float = 0.0
    budget_ms: float = 0.0


# answered: the model gave its answer; max_turns: pass 2 ran out of model turns;
# input_budget: another pass-2 turn would have sent more input tokens than allowed.
StopReason = Literal["answered", "max_turns", "input_budget", "window"]


class Done(_Event):
    type: Literal["done"] = "done"
    answer: str
    pass_: int = Field(alias="pass", serialization_alias="pass")
    citations: list[Citation] = Field(default_factory=list)
    dropped_citations: int = 0  # ids the answer cited that name no passage of the context: never shown
    usage: Usage = Field(default_factory=Usage)
    timings: Timings = Field(default_factory=Timings)
    tool_calls: int = 0
    cached: bool = False
    stop_reason: StopReason = "answered"
    truncated: bool = False  # the answer reached its length limit (max_answer_tokens) and was cut there
    model: str = ""  # the model that answered, as users name it
    # The tabs it was given as an overview of the page (a request about the page as a whole), not a
    # selection: front ends say so with its sources. Empty: every tab was its matching parts, or whole.
    overviews: list[Overview] = Field(default_factory=list)
    # How much of each tab read went to the model (after any fitting to its window), in tab order.
    shares: list[TabShare] = Field(default_factory=list)


class ErrorEvent(_Event):
    """`message` in the command line's words; `reason` and `setting` as on
    `ChatAgentError`, for a front end that says what to change in its own
    words (the side panel). Both absent where the message names no setting."""

    type: Literal["error"] = "error"
    code: str
    message: str
    reason: str | None = None
    setting: str | None = None

    @classmethod
    def of(cls, exc: ChatAgentError) -> "ErrorEvent":
        if exc.setting is None:
            return cls(code=exc.code, message=exc.message)
        return cls(code=exc.code, message=exc.message, reason=exc.reason, setting=exc.setting)


Event = Annotated[
    Union[PassStart, Token, ToolCall, ToolResult, Screenshot, Note, Done, ErrorEvent],
    Field(discriminator="type"),
]
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


def parse_event(data: str | bytes | dict[str, Any]) -> Event:
    if isinstance(data, dict):
        return EVENT_ADAPTER.validate_python(data)
    return EVENT_ADAPTER.validate_json(data)
