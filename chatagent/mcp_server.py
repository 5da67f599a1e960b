"""`chatagent mcp`: page reading and page Q&A for other agents, over the Model
Context Protocol (the official SDK's `MCPServer`), on stdio or streamable HTTP.

A thin front end over one warm `Runtime`: the browser, the extraction workers
and the caches live as long as the server, so a second call on an unchanged
page costs no re-extraction. Page text in results sits inside the same
untrusted-content markers as the prompt, and named local files follow the
same rule as everywhere (served from 127.0.0.1, never as `file://`).

Every tab a call opens is closed when the call ends, however it ends: it
returns or fails, the client cancels it or its request times out, the client
goes (the stdio pipe closes, or the HTTP connection that sent the call drops:
`_ClientWatch`), or the server stops. Calls take turns for the `max_tabs`
setting's bound on tabs open at once, and a call waiting its turn says so in
progress notifications.

Nothing but protocol on stdout: logs go to stderr.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from . import __version__, startup
from .browser.base import Tab, TabFailure
from .browser.targets import normalize_target
from .errors import ChatAgentError, UnnamedLocalFileError
from .exit_status import EXIT_INTERRUPTED, EXIT_TERMINATED
from .events import Done, ErrorEvent, Note, PassStart, TabShare, ToolCall
from .prompts import Fence
from .runtime import Runtime
from .limits import MAX_QUESTION_CHARS, MIN_TAB_BUDGET
from .scrub import Scrubber
from .settings import Settings

if TYPE_CHECKING:
    from .context import TabContext  # the runtime imports it, off the start-up path

log = logging.getLogger(__name__)
T = TypeVar("T")
Progress = Callable[[str], Awaitable[None]]

MAX_URLS = 20
MAX_TAB_BUDGET = 32_000
_READ_ONLY = {"readOnlyHint": True, "openWorldHint": True, "destructiveHint": False, "idempotentHint": True}


class PageText(BaseModel):
    """One tab as the model would see it."""

    url: str
    title: str = ""
    text: str = Field("", description="the page text, inside untrusted-content markers")
    tokens: int = 0
    page_tokens: int = Field(0, description="the page's text in all, as read: `tokens` of it were kept")
    share: float = Field(1.0, description="of the page's text, the share kept (1.0: all of it)")
    title_only: bool = Field(False, description="its budget kept none of its text: its title only")
    cut: bool = Field(False, description="the page was longer than its budget: its start was kept")
    selected: bool = Field(False, description="the page was longer than its budget: the parts the question needs were kept")
    overview: bool = Field(False, description="the page was longer than its budget and the question is about it as a "
                                              "whole (summarize it), or names nothing on it: an overview of all its "
                                              "parts was kept")
    scope: str = Field("search", description="what the question asks of the page: the parts matching it (search), the "
                                             "page as a whole (whole), some of its parts as wholes (part), or what "
                                             "the page does not name (unmatched: given an overview too)")
    reused: bool = Field(False, description="unchanged since an earlier call: not extracted again")
    notes: list[str] = Field(default_factory=list)
    error: str | None = None
    # What the page's markup says of itself: its authors, the day it was first published (ISO).
    authors: list[str] = Field(default_factory=list)
    published: str = ""


class ReadResult(BaseModel):
    pages: list[PageText]
    tokens: int


class Citation(BaseModel):
    tab: str
    url: str = Field(description="the page; for a passage, opened at its quote (a #:~:text= fragment)")
    title: str = ""
    block: str = Field("", description="the passage's id as the answer cites it ([1.4]); empty: the whole tab")
    quote: str = Field("", description="the passage's words, verbatim from the page")


class AskResult(BaseModel):
    answer: str
    citations: list[Citation]
    dropped_citations: int = Field(0, description="ids the answer cited that name no passage: not among the citations")
    pass_: int = Field(alias="pass")
    stop_reason: str
    truncated: bool = Field(False, description="the answer reached its length limit (max_answer_tokens) and was cut there")
    input_tokens: int
    output_tokens: int
    tokens_counted: bool = Field(
        False, description="the token figures are chatagent's own count: the model's server reported none",
    )
    cached: bool = Field(False, description="the same question on unchanged pages: answered again from memory")
    overviews: list[str] = Field(default_factory=list, description="the tabs (as citations name them) the model was "
                                 "given an overview of, the question being about the page as a whole")
    notes: list[str] = Field(default_factory=list)

    model_config = {"populate_by_name": True, "serialize_by_alias": True}


# Comments, not docstrings, on the tab list's models: a docstring would be a
# description in the output schema, which clients pay for in every request.


class ListedTab(BaseModel):
    # A tab read_pages and ask_pages take by its id.
    id: str
    url: str
    title: str = ""


class UnavailableTab(BaseModel):
    # A tab that cannot be read, and why. No id: the tools would refuse it.
    url: str | None = None  # none for a local file the user did not name
    reason: str


class TabList(BaseModel):
    tabs: list[ListedTab]
    unavailable: list[UnavailableTab] = Field(default_factory=list, description="open tabs that cannot be read, and why")


# Nothing of the tab: neither its file's address nor its title (a client over --http
# need not learn the names of the user's files), and certainly not its content.
UNNAMED_LOCAL_FILE = (
    "It shows a local file that was not named, so it is not read and its address is not shown. "
    "To read a local file, pass its path to read_pages or ask_pages."
)


def _tool_error(message: str) -> ToolError:
    """A bad call: the client gets `isError` with this message, and the server keeps serving."""
    return ToolError(message)


@contextmanager
def _told() -> Iterator[None]:
    """chatagent's own errors (a browser that cannot start or be reached, a
    model that cannot be made) reach the caller as their one-line message,
    not as the SDK's bare "Error executing tool" and a traceback on stderr."""
    try:
        yield
    except ChatAgentError as exc:
        raise _tool_error(exc.message) from None


class PageTools:
    """The tools, over one runtime. Tab ids from `list_tabs` (attached to a
    running Chrome with `cdp`) stand for those tabs in place of URLs."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.fence = Fence()  # one code for the server's life: results stay byte-stable for clients' caches
        self._listed: dict[str, Tab] = {}

    async def list_tabs(self) -> TabList:
        browser = await self.runtime.browser()
        await self.runtime.load()  # loading since start-up: wait here, not blocking the loop in `builder`
        self._listed = {}
        out: list[ListedTab] = []
        unavailable: list[UnavailableTab] = []
        for tab in await browser.existing_tabs():
            snap = await self.runtime.builder.snapshot(tab)
            if isinstance(snap, TabFailure):  # said, not left out: the caller would not know the tab is there
                unavailable.append(
                    UnavailableTab(reason=UNNAMED_LOCAL_FILE) if snap.code == UnnamedLocalFileError.code
                    else UnavailableTab(url=snap.url, reason=snap.message)
                )
                continue
            tab_id = f"tab-{tab.tab_id}"
            self._listed[tab_id] = tab
            out.append(ListedTab(id=tab_id, url=snap.url, title=snap.title))
        return TabList(tabs=out, unavailable=unavailable)

    @asynccontextmanager
    async def _tabs(self, urls: list[str], progress: Progress | None) -> AsyncIterator[list[Tab | TabFailure]]:
        """The call's tabs, for the `with` block: listed tabs by id, the rest
        opened for it and closed after it (`Runtime.tabs`). How many URLs, a
        budget's range and a question's length are the tools' schemas to check."""
        targets = []
        for u in urls:
            if u in self._listed:
                continue
            if u.startswith("tab-") and self.runtime.settings.cdp:
                raise _tool_error(f"There is no tab {u!r}. Call list_tabs for the open tabs' ids.")
            try:
                normalize_target(u)
            except ChatAgentError as exc:
                raise _tool_error(exc.message) from None
            targets.append(u)
        if not targets:
            yield [self._listed[u] for u in urls]
            return
        limit = self.runtime.settings.max_tabs

        async def waiting(tabs: int) -> None:
            if progress is not None:  # a caller in this process (the benchmark) need not be told
                await progress(f"Waiting for {tabs} open tab{'s' if tabs > 1 else ''} to close "
                               f"(at most {limit} are open at once: the max_tabs setting).")

        async with self.runtime.tabs(targets, waiting=waiting) as opened:
            it = iter(opened)
            yield [self._listed[u] if u in self._listed else next(it) for u in urls]

    async def read_pages(
        self, urls: list[str], question: str | None, budget_per_tab: int, progress: Progress | None = None,
    ) -> ReadResult:
        question = (question or "").strip() or None
        async with self._tabs(urls, progress) as tabs:
            await self.runtime.load()
            listed = set(self._listed.values())

            def read(tab: Tab) -> None:  # its snapshot taken: a tab opened for the call is needed no more
                if tab not in listed:
                    self.runtime.close_soon(tab)

            # The bare text, not the ids a model is shown ("[1.4]"): none of the budget goes to them.
            ctx = await self.runtime.builder.with_budget(budget_per_tab, ids=False).build(tabs, question, read=read)
        return ReadResult(pages=[self._page_text(t) for t in ctx.tabs], tokens=ctx.tokens)

    def _page_text(self, t: TabContext) -> PageText:
        share = TabShare(tab_id=t.tab_id, tokens=t.tokens, page_tokens=t.original_tokens if t.ok else 0)
        return PageText(
            url=t.url, title=t.title, text=self.fence.wrap("page_context", t.text) if t.ok else "",
            tokens=t.tokens, page_tokens=share.page_tokens, share=share.share, title_only=share.title_only,
            # An overview is no cut start (the budgeter marks it `truncated` too): said as an overview.
            cut=t.truncated and not t.overview, selected=t.selected, overview=t.overview,
            scope=t.scope, reused=t.reused, notes=t.notes,
            error=t.error, authors=t.authors, published=t.published,
        )

    async def ask_pages(self, urls: list[str], question: str, model: str | None, progress: Any) -> AskResult:
        question = question.strip()
        if not question:
            raise _tool_error("The question is empty.")
        async with self._tabs(urls, progress) as tabs:
            await progress(f"Opened {len(tabs)} page(s); reading them.")
            return await self._answer(tabs, question, model, progress)

    async def _answer(self, tabs: list[Tab | TabFailure], question: str, model: str | None, progress: Any) -> AskResult:
        await self.runtime.load()
        conversation = self.runtime.conversation(tabs, model=model)
        notes: list[str] = []
        async for event in conversation.ask(question, cache=True):
            if isinstance(event, Note):
                notes.append(event.text)
            elif isinstance(event, PassStart) and event.pass_ == 2:
                await progress(f"The page text was not enough; using the browser ({event.reason}).")
            elif isinstance(event, ToolCall):
                await progress(event.words)
            elif isinstance(event, ErrorEvent):
                # The notes say why each page could not be read: a tool error is all the caller sees.
                raise _tool_error(" ".join([*notes, f"{_in_mcp_words(event)} ({event.code})"]))
            elif isinstance(event, Done):
                return AskResult(
                    answer=event.answer, pass_=event.pass_, stop_reason=event.stop_reason, truncated=event.truncated,
                    citations=[Citation(tab=c.tab_id, url=c.url, title=c.title, block=c.block, quote=c.quote)
                               for c in event.citations],
                    dropped_citations=event.dropped_citations,
                    input_tokens=event.usage.input_tokens, output_tokens=event.usage.output_tokens,
                    tokens_counted=event.usage.counted, cached=event.cached,
                    overviews=[o.tab_id for o in event.overviews], notes=notes,
                )
        raise _tool_error("The question ended without an answer.")


def _in_mcp_words(error: ErrorEvent) -> str:
    """An error as a caller of ask_pages reads it: a model it cannot use is
    told as its `model` argument, not as the command line's --model. Other
    settings are the server's (its owner's flags and `chatagent config`)."""
    if error.setting == "model" and error.reason:
        return f"{error.reason} Name another in the model argument, or leave it out for the server's model."
    return error.message


class _Server(MCPServer):
    """The SDK's server, with the secrets masked (`scrub`) in every tool
    result and tool error: what chatagent tells a client, over --http a
    remote one. A tool's unexpected failure says only "Error executing tool
    NAME" (the SDK's way): nothing of it to mask. Over HTTP, each request
    knows when its client goes (`_ClientWatch`)."""

    def __init__(self, scrubber: Scrubber, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scrubber = scrubber

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None,
    ) -> CallToolResult | InputRequiredResult:
        try:
            result = await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):  # the arguments, in words: not pydantic's report
                raise ToolError(self.scrubber.text(bad_arguments(name, exc.__cause__))) from exc.__cause__
            raise ToolError(self.scrubber.text(str(exc))) from exc.__cause__
        return self.scrubber.model(result)

    def streamable_http_app(self, **kwargs: Any) -> Any:
        app = super().streamable_http_app(**kwargs)
        app.add_middleware(_ClientWatch)  # defined below, with `_while_connected`
        return app


def bad_arguments(tool: str, exc: ValidationError) -> str:
    """What is wrong with a call's arguments, named as the tool's schema names
    them and said as what each must be: "budget_per_tab must be at least 64 (it
    was 5)", not "1 validation error for read_pagesArguments ..."."""
    return f"Bad arguments to {tool}: " + "; ".join(_must(e) for e in exc.errors(include_url=False)) + "."


# pydantic's error types, as what the argument must be; {…} from the error's context.
_MUST = {
    "missing": "is required",
    "too_short": "must list at least {min_length} item{s}",
    "too_long": "must list at most {max_length} item{s}",
    "string_too_short": "must not be empty",
    "string_too_long": "must be at most {max_length:,} characters long",
    "greater_than_equal": "must be at least {ge:,}",
    "less_than_equal": "must be at most {le:,}",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "string_type": "must be a string",
    "list_type": "must be a list",
}


def _must(error: Any) -> str:
    loc = error["loc"]
    where = (str(loc[0]) + "".join(f"[{i}]" for i in loc[1:])) if loc else "the arguments"
    ctx = error.get("ctx") or {}
    bound = ctx.get("min_length", ctx.get("max_length", 0))
    try:
        what = _MUST[error["type"]].format(**ctx, s="" if bound == 1 else "s")
    except (KeyError, ValueError, IndexError):  # a type without words here: pydantic's sentence
        what = error["msg"][:1].lower() + error["msg"][1:]
    given = error.get("input")
    if isinstance(given, list) and error["type"] in ("too_short", "too_long"):
        what += f" (it has {len(given)})"
    elif error["type"] != "missing" and (isinstance(given, (int, float)) or (isinstance(given, str) and len(given) <= 40)):
        what += f" (it was {given!r})"
    return f"{where} {what}"


Urls = Annotated[list[str], Field(
    min_length=1, max_length=MAX_URLS,
    description="http(s)/file URLs, local paths (absolute, or relative to the server's directory), "
    "or ids from list_tabs where it is offered",
)]
Question = Annotated[str, Field(min_length=1, max_length=MAX_QUESTION_CHARS)]


def build_server(runtime: Runtime) -> MCPServer:
    """The MCP server over `runtime`: tools named and described briefly (clients
    pay for the schemas in every request), read-only and open-world. `list_tabs`
    only when attached to a browser (`cdp`): otherwise it has no tabs to list."""
    tools = PageTools(runtime)
    server = _Server(runtime.scrubber, "chatagent", version=__version__,
                     instructions="Read web pages within a token budget, or ask questions about them.")
    annotations = ToolAnnotations(**_READ_ONLY)

    @server.tool(annotations=annotations, structured_output=True)
    async def read_pages(
        urls: Urls,
        ctx: Context,
        question: Annotated[str | None, Field(max_length=MAX_QUESTION_CHARS,  # "" is no question
                                              description="keep the parts of long pages this needs")] = None,
        budget_per_tab: Annotated[int, Field(ge=MIN_TAB_BUDGET, le=MAX_TAB_BUDGET,
                                             description="tokens of text per page")] = 2000,
    ) -> ReadResult:
        """Each page's main text within a token budget (untrusted content); an overview if asked to summarize."""
        with _told():
            progress = _progress(ctx, runtime.scrubber)
            return await _while_connected(ctx, tools.read_pages(urls, question, budget_per_tab, progress))

    @server.tool(annotations=annotations, structured_output=True)
    async def ask_pages(
        urls: Urls,
        question: Question,
        ctx: Context,
        model: Annotated[str | None, Field(description="default: the server's model setting")] = None,
    ) -> AskResult:
        """Answer a question about the pages, citing them."""
        with _told():
            return await _while_connected(ctx, tools.ask_pages(urls, question, model, _progress(ctx, runtime.scrubber)))

    if runtime.settings.cdp:

        @server.tool(annotations=annotations, structured_output=True)
        async def list_tabs() -> TabList:
            """The attached browser's open tabs."""
            with _told():
                return await tools.list_tabs()

    return server


def _progress(ctx: Context, scrubber: Scrubber) -> Progress:
    """Progress notifications for one call (sent if the client asked for them), masked: they may quote the model."""
    steps = 0

    async def progress(message: str) -> None:
        nonlocal steps  # progress must increase with every notification; how many steps is not known ahead
        steps += 1
        await ctx.report_progress(steps, None, scrubber.text(message))

    return progress


# Where `_ClientWatch` puts, in an HTTP request's ASGI scope, the event set when its client disconnects.
_CLIENT_GONE = "chatagent.client_gone"


async def _while_connected(ctx: Context, call: Awaitable[T]) -> T:
    """`call`, stopped if the HTTP connection that sent it drops: the SDK's
    session transport would leave it running (its tabs open) until it ends,
    though nobody can receive its result. Over stdio the pipe closing stops it."""
    request = ctx.request_context.request
    gone = getattr(request, "scope", {}).get(_CLIENT_GONE)
    if gone is None:
        return await call
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as watching:

            async def cancel_when_gone() -> None:
                await gone.wait()
                scope.cancel()

            watching.start_soon(cancel_when_gone)
            try:
                return await call
            finally:
                watching.cancel_scope.cancel()
    log.info("a client disconnected during a call; the call was stopped")
    raise _tool_error("The client disconnected; the call was stopped.")


class _ClientWatch:
    """ASGI middleware: in each HTTP request's scope, an event set once its
    client has disconnected (`_while_connected`). It watches what the server
    reads anyway (the SSE response listens for the disconnect): nothing more is read."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        gone = scope[_CLIENT_GONE] = anyio.Event()

        async def watched() -> dict[str, Any]:
            message = await receive()
            if message["type"] == "http.disconnect":
                gone.set()
            return message

        await self.app(scope, watched, send)


@asynccontextmanager
async def running(settings: Settings) -> AsyncIterator[MCPServer]:
    """The server over a runtime that warms up (model client, tokenizer,
    extraction workers) while the client connects."""
    async with Runtime(settings, extraction_workers=True) as runtime:
        warm = asyncio.create_task(runtime.warm())
        warm.add_done_callback(_log_warm_failure)
        warm.add_done_callback(lambda _: startup.over())  # its start-up: warm, or given up (chatagent/startup.py)
        try:
            yield build_server(runtime)
        finally:
            warm.cancel()


def _log_warm_failure(task: "asyncio.Task[None]") -> None:
    if not task.cancelled() and (exc := task.exception()) is not None:
        # A model that cannot be made is reported by ask_pages itself, as a tool error.
        log.warning("warm-up failed (%s); the first call will be slower", exc)


async def serve_stdio(settings: Settings) -> None:
    """Until the client closes stdin, or Ctrl-C or SIGTERM. The SDK reads stdin
    in a thread that a cancel cannot stop, so on a signal the calls in progress
    are cancelled, the runtime (browser, workers, the tabs of those calls) is
    closed here and the process ends without waiting for that read."""
    stopped: list[signal.Signals] = []
    interrupted = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, lambda sig=sig: (stopped.append(sig), interrupted.set()))
    try:
        async with running(settings) as server:
            serving = asyncio.ensure_future(server.run_stdio_async())
            stop = asyncio.ensure_future(interrupted.wait())
            await asyncio.wait({serving, stop}, return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            if interrupted.is_set():
                serving.cancel()  # its calls end (their tabs close) while the runtime closes; not awaited: see above
            else:
                await serving  # its outcome: an error in the protocol is raised here
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    if stopped and stopped[0] == signal.SIGTERM:
        sys.stderr.flush()
        os._exit(EXIT_TERMINATED)
    if interrupted.is_set():
        from .process import interrupted as say_interrupted

        say_interrupted()
        sys.stderr.flush()
        os._exit(EXIT_INTERRUPTED)


LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


async def serve_http(settings: Settings, host: str, port: int, *, stateless: bool = False) -> signal.Signals | None:
    """Streamable HTTP at http://HOST:PORT/mcp, for bearers of the owner's
    token only, loopback too: any local user could otherwise read the
    owner's files and spend their API key through it. On 127.0.0.1 a token
    is made and saved when none is set; beyond it, one must be set first.

    A session per client, unless `stateless` (the SDK's stateless streamable
    HTTP): then no session lives in the server, so any load balancer can send
    each request to any of several replicas, but a client's cancel, a request
    of its own, cannot reach the call it cancels. SIGTERM or Ctrl-C drains a
    stateless server: it stops listening, finishes the calls it holds (those
    still running after the `deadline` setting are cancelled; a second Ctrl-C
    cancels them at once), then closes its tabs and browser; with sessions,
    their event streams end at once, and their calls with them. Returns the
    signal that stopped it, if one did."""
    import uvicorn
    from sse_starlette.sse import AppStatus

    if stateless:
        # The SDK streams each call's result as server-sent events, which
        # sse-starlette would end on SIGTERM, the call with them: here they end
        # as their calls are answered (stateless: no stream outlives its call).
        AppStatus.disable_automatic_graceful_drain()
    if host not in LOOPBACK and not settings.secret("mcp_token"):
        raise ChatAgentError(
            f"Listening on {host} lets other machines use this browser: set a bearer token first "
            "(`chatagent config set mcp_token TOKEN` or CHATAGENT_MCP_TOKEN), or listen on 127.0.0.1."
        )
    listening = _listen(host, port)  # before the browser starts: a port in use is told at once
    with listening:
        settings, made = _owner_token(settings)
        _tell_clients(host, listening.getsockname()[1], settings, made)
        async with running(settings) as server:
            app = BearerToken(server.streamable_http_app(host=host, stateless_http=stateless),
                              settings.secret("mcp_token") or "")
            # log_config=None: uvicorn's loggers write through ours (masked, sanitised), not handlers of their own.
            config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on", log_config=None,
                                    timeout_graceful_shutdown=settings.deadline)
            web = _draining_server()(config)
            serving = asyncio.ensure_future(web.serve(sockets=[listening]))
            try:
                await asyncio.shield(serving)
            except asyncio.CancelledError:  # embedded and cancelled: shut down as on Ctrl-C, not mid-request
                web.should_exit = True
                await serving
                raise
            if web.stopped_by is not None:
                log.info("stopped by %s: the calls held were finished; closing the browser", web.stopped_by.name)
        return web.stopped_by


def _draining_server() -> type:
    """uvicorn's `Server`, told to stop by SIGTERM or Ctrl-C as uvicorn is
    (it stops listening and waits for the requests in progress), but keeping
    the signal rather than raising it again once it has stopped: uvicorn's
    way would end the process there, before the runtime closes its tabs."""
    import threading

    import uvicorn

    class Draining(uvicorn.Server):
        stopped_by: signal.Signals | None = None

        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():  # embedded: its host stops it
                yield
                return
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, self._stop, sig)
            try:
                yield
            finally:
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.remove_signal_handler(sig)

        def _stop(self, sig: signal.Signals) -> None:
            if self.stopped_by is None:
                self.stopped_by = sig
                log.warning("%s: finishing the calls in progress, taking no new ones", sig.name)
            self.handle_exit(sig, None)  # a second Ctrl-C: stop waiting for them

    return Draining


def _owner_token(settings: Settings) -> tuple[Settings, bool]:
    """The settings with a bearer token: the one set, or one made now and
    saved in the settings file (private to the user, 0600), so the clients
    configured with it keep working across restarts. True: made now."""
    if settings.secret("mcp_token"):
        return settings, False
    from secrets import token_urlsafe

    from pydantic import SecretStr

    from .settings import set_value

    token = token_urlsafe(32)
    set_value("mcp_token", token)
    return settings.model_copy(update={"mcp_token": SecretStr(token)}), True


def _tell_clients(host: str, port: int, settings: Settings, made: bool) -> None:
    """The client configuration, on stderr. The token in full only when it was
    just made (its owner is reading): afterwards it is in the settings, and a
    log of the server's stderr need not carry it."""
    import json

    from .locations import config_path

    token = settings.secret("mcp_token") or ""
    url = f"http://{'[' + host + ']' if ':' in host else host}:{port}/mcp"
    if made:
        shown, source = token, f"made now and saved as the mcp_token setting in {config_path()}"
    else:
        shown, source = f"…{token[-4:]}", "the mcp_token setting; `chatagent config show` says where it is set"
    config = {"mcpServers": {"chatagent": {"url": url, "headers": {"Authorization": f"Bearer {shown}"}}}}
    print(f"chatagent mcp: serving {url} to clients that send its bearer token ({source}). "
          f"A client's configuration:\n{json.dumps(config, indent=2, ensure_ascii=False)}", file=sys.stderr, flush=True)


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to HOST:PORT for uvicorn to serve on."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise ChatAgentError(f"Cannot listen on {host}:{port} ({exc}): give another address with --http HOST:PORT.") from None
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        why = "another program is listening there" if exc.errno == errno.EADDRINUSE else exc.strerror or str(exc)
        raise ChatAgentError(f"Cannot listen on {host}:{port}: {why}. Choose another port with --http [HOST:]PORT.") from None
    return sock


class BearerToken:
    """ASGI middleware: HTTP requests without `Authorization: Bearer <token>` get 401."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = token.encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            import hmac

            scheme, _, given = dict(scope.get("headers") or []).get(b"authorization", b"").partition(b" ")
            # The scheme's name is case-insensitive (RFC 9110); the token is compared in constant time.
            if scheme.lower() != b"bearer" or not hmac.compare_digest(given.strip(), self.expected):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b"A bearer token is required (the server's mcp_token)."})
                return
        await self.app(scope, receive, send)
