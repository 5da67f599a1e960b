"""The runtime: one per process, built from `Settings`, shared by every front end.

It owns what outlives a question: the browser (opened on first use, from the
settings: launched, or attached over CDP), the extraction workers, the context
builder with its caches, the answer cache and the model registry. It hands out
`Conversation`s, each with its own history, over tabs from its browser or from
elsewhere (the side panel's tabs). The CLI, the extension's host and the
benchmarks are thin layers over it.

Start-up overlaps. Importing this module and making a `Runtime` are cheap:
what answering needs beyond the browser (the agent, LangChain, extraction,
ranking; ~1 s of imports) is loaded on a worker thread from `async with`
on (`load`), so the browser launches and the pages load meanwhile. While
they do, the model's client is then created and its connection opened, and
the text pipeline (tokenizer, BM25, the extraction workers with trafilatura
loaded) is warmed, so the first question pays for none of it.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Coroutine, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .browser import Browser, Tab, TabFailure, open_browser
from .browser.slots import TabSlots, Waiting
from .errors import ChatAgentError
from .events import ErrorEvent, Event
from .scrub import Scrubber
from .selection import Selection
from .settings import Settings

if TYPE_CHECKING:  # loaded by `_load_parts`, off the event loop
    from .agent import ChatAgent
    from .cache import AnswerCache
    from .context import ContextBuilder
    from .extraction import ExtractionPool
    from .hooks import RunHooks
    from .models import ModelRegistry

log = logging.getLogger(__name__)


class Conversation:
    """Questions about a set of tabs, with follow-ups: the history is kept.

    `ask` streams typed events ending in exactly one `done` or `error`. A
    question may name its own tabs (the side panel sends the ticked ones with
    each); tabs keep their labels for the whole conversation."""

    def __init__(
        self, runtime: "Runtime", tabs: Sequence[Tab | TabFailure], *, model: str | None = None,
        hooks: RunHooks | None = None,
    ) -> None:
        from .history import History  # loaded with the runtime's parts (`Runtime.conversation` loads them)

        self.runtime = runtime
        self.tabs = list(tabs)
        self.model_name = model
        self.hooks = hooks
        self.history = History()
        self._agent: ChatAgent | None = None

    async def ask(
        self, question: str, *, tabs: Sequence[Tab | TabFailure] | None = None, model: str | None = None,
        cache: bool = True, selection: Selection | None = None,
    ) -> AsyncIterator[Event]:
        """`selection`: text the person selected in one of `tabs` (by its `Tab.tab_id`), which the question is about."""
        try:
            agent = self._agent_for(list(tabs) if tabs is not None else self.tabs, model or self.model_name, cache)
        except ChatAgentError as exc:  # the model cannot be made: a setting to fix
            yield ErrorEvent.of(exc)
            return
        stream = agent.ask(question, selection=selection)
        try:
            async for event in stream:
                yield event
        finally:
            await stream.aclose()  # now, not at garbage collection: it stops the question's task

    def cancel(self) -> None:
        """Stop the question being answered (it ends with an `aborted` error)."""
        if self._agent is not None:
            self._agent.cancel()

    def prefetch(self) -> "asyncio.Task[None]":
        """Read the tabs now (snapshot, extraction, analysis) so the first question
        finds the work done; the task never raises (see `ContextBuilder.prefetch`)."""
        return self.runtime.builder.prefetch(self.tabs)

    def _agent_for(self, tabs: list[Tab | TabFailure], model: str | None, cache: bool) -> ChatAgent:
        """The conversation's agent: the same one while the tabs and model stay
        (its browser tools keep their one-at-a-time lock), a new one sharing the
        history when a question brings others."""
        settings = self.runtime.settings
        answers = self.runtime.answers if cache and settings.cache else None
        chosen = self.runtime.models.get(model)
        from .agent import ChatAgent  # loaded with the runtime's parts, as the line above made sure

        agent = self._agent
        if agent is None or agent.tabs != tabs or agent.model is not chosen:
            agent = ChatAgent(
                chosen, tabs, builder=self.runtime.builder, history=self.history,
                cache=answers, deadline_s=settings.deadline, input_budget_factor=settings.input_budget,
                max_answer_tokens=settings.max_answer_tokens, hooks=self.hooks,
            )
            self._agent = agent
        agent.cache = answers
        return agent


@dataclass
class _Parts:
    """What a runtime needs beyond the browser, all from libraries slow to
    import (`_load_parts`)."""

    models: ModelRegistry
    builder: ContextBuilder
    answers: AnswerCache
    pool: ExtractionPool


def _load_parts(settings: Settings, extraction_workers: bool) -> _Parts:
    from .cache import AnswerCache
    from .context import ContextBuilder
    from .extraction import ExtractionPool, Extractor
    from .models import ModelRegistry

    importlib.import_module(".agent", __package__)  # what a conversation's first question imports
    # Every page is extracted in a worker, where its limits hold; several extract tabs in parallel.
    pool = ExtractionPool(None if extraction_workers else 1, timeout_s=settings.extract_timeout_s,
                          memory_mb=settings.extract_memory_mb)
    return _Parts(ModelRegistry(settings), ContextBuilder(Extractor(pool), budget_per_tab=settings.budget),
                  AnswerCache(), pool)


class Runtime:
    def __init__(self, settings: Settings | None = None, *, extraction_workers: bool = False) -> None:
        """`extraction_workers`: extract tabs in several worker processes, in
        parallel (worth it for several tabs; starting each costs ~0.3 s of CPU),
        else in one (every page is, within its time and memory limits).
        Cheap: the rest loads from `async with` on (see `load`)."""
        self.settings = settings or Settings.load()
        self._scrubber = (self.settings, Scrubber.of(self.settings))
        self._extraction_workers = extraction_workers
        self._parts: _Parts | None = None
        self._parts_lock = threading.Lock()  # taken on the loading thread, or on a first use before it ends
        self._loading: asyncio.Future[_Parts] | None = None
        self._browser: Browser | None = None
        self._browser_lock = asyncio.Lock()
        self._opened: list[Tab] = []
        # Tabs open at once across calls (`tabs`): the MCP server's, the daemon's asks'.
        self.tab_slots = TabSlots(self.settings.max_tabs)
        self._closing: set[asyncio.Future[None]] = set()  # calls' tabs being closed
        self._workers: asyncio.Future[None] | None = None  # the extraction workers starting ahead
        self._closed = False

    # --- what answering needs besides the browser ---------------------------------------

    async def load(self) -> None:
        """Load the model registry, the context builder and the answer cache on
        a worker thread (their imports take ~1 s, in which the browser can
        launch and pages load). Once: later calls wait for the same loading."""
        # Shielded: a caller giving up must not leave a cancelled loading for the others.
        await asyncio.shield(self._start_loading())

    def _start_loading(self) -> "asyncio.Future[_Parts]":
        if self._loading is None:
            self._loading = asyncio.get_running_loop().run_in_executor(None, self._loaded)
            # Seen even if nobody awaits it (the command failed first); whoever does gets it too.
            self._loading.add_done_callback(_retrieve)
            # Every page is extracted in a worker, and a worker takes about a second to start: from
            # now, while the browser launches and the pages load, not on the first question.
            self._loading.add_done_callback(self._start_workers)
        return self._loading

    def _start_workers(self, loading: "asyncio.Future[_Parts]") -> None:
        if self._closed or loading.cancelled() or loading.exception() is not None:
            return
        self._workers = asyncio.ensure_future(loading.result().pool.start())
        self._workers.add_done_callback(_started)

    def _loaded(self) -> _Parts:
        # Whoever comes first loads; anyone else waits for it, so nothing is made twice.
        with self._parts_lock:
            if self._parts is None:
                self._parts = _load_parts(self.settings, self._extraction_workers)
            return self._parts

    # Read before `load()` has ended, these load on the calling thread: an
    # async caller awaits `load()` first, so that the event loop goes on meanwhile.
    @property
    def models(self) -> ModelRegistry:
        return self._loaded().models

    @property
    def builder(self) -> ContextBuilder:
        return self._loaded().builder

    @property
    def answers(self) -> AnswerCache:
        return self._loaded().answers

    @property
    def scrubber(self) -> Scrubber:
        """The settings' secrets, masked in whatever a front end writes
        (`chatagent.scrub`): those of the settings in use now (`reconfigure`)."""
        if self._scrubber[0] is not self.settings:
            self._scrubber = (self.settings, Scrubber.of(self.settings))
        return self._scrubber[1]

    def reconfigure(self, settings: Settings) -> None:
        """Answer from now on as `settings` say (the side panel saved new ones):
        models are made afresh from them; conversations keep their history.
        The browser stays: what opens it is not something a running front end changes."""
        from .models import ModelRegistry

        parts = self._loaded()
        self.settings = settings
        parts.models = ModelRegistry(settings)
        parts.builder.budget_per_tab = settings.budget

    # --- the browser ---------------------------------------------------------------

    async def browser(self) -> Browser:
        """The browser the settings name, opened on first use."""
        async with self._browser_lock:
            if self._browser is None:
                self._browser = await open_browser(self.settings)
            return self._browser

    async def open_tabs(self, targets: Sequence[str]) -> list[Tab | TabFailure]:
        """Open `targets` (URLs, local files) in the browser; with none and an
        attached browser (`cdp`), its open tabs. A target that fails is a
        `TabFailure` in its slot."""
        browser = await self.browser()
        if not targets:
            tabs = await browser.existing_tabs()
            if not tabs:
                where = f"The browser at {self.settings.cdp}" if self.settings.cdp else "The browser"
                raise ChatAgentError(f"{where} has no open tabs to read.")
            return list(tabs)
        started = time.perf_counter()
        opened = await browser.open_tabs(list(targets), timeout_s=self.settings.timeout)
        self._opened += [t for t in opened if isinstance(t, Tab)]
        failed = sum(isinstance(t, TabFailure) for t in opened)
        log.info("opened %d page(s) in %.0f ms%s", len(opened) - failed, (time.perf_counter() - started) * 1000,
                 f"; {failed} could not be opened" if failed else "")
        return opened

    async def close_tabs(self, tabs: Sequence[Tab | TabFailure]) -> None:
        """Close the tabs among `tabs` that `open_tabs` opened (the user's own stay)."""
        ours = [t for t in tabs if isinstance(t, Tab) and t in self._opened]
        for tab in ours:
            self._opened.remove(tab)
        await self._shielded(_close_all(ours))

    @asynccontextmanager
    async def tabs(self, targets: Sequence[str], *, waiting: Waiting | None = None) -> AsyncIterator[list[Tab | TabFailure]]:
        """`targets` opened for one call, and closed when the `with` block ends,
        however it ends: returned, failed, or cancelled (a client gone) while
        they open or after. The call waits its turn for `tab_slots` (`waiting`
        is told) and its tabs hold them until closed."""
        browser = await self.browser()
        started = time.perf_counter()
        opening = asyncio.ensure_future(
            browser.open_tabs(list(targets), timeout_s=self.settings.timeout, slots=self.tab_slots, waiting=waiting)
        )
        try:
            # Cancelled here, `opening` is cancelled with it and closes what it made;
            # if it had just finished, its tabs are in it still: closed below all the same.
            tabs = await opening
            log.info("opened %d page(s) in %.0f ms", sum(isinstance(t, Tab) for t in tabs),
                     (time.perf_counter() - started) * 1000)
            yield tabs
        finally:
            await self._shielded(_close_opened(opening))

    def close_soon(self, tab: Tab) -> None:
        """Close `tab`, one that `tabs` opened, before its `with` block ends,
        without waiting: a page left open goes on using the browser's CPU (a
        page just loaded, ~0.2 s of its renderer's in its first second) while
        a call that has read it extracts its text. The close is the runtime's
        own task (`close` waits for it); the block's end closing it again is harmless."""
        task = asyncio.ensure_future(tab.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _shielded(self, closing: "asyncio.Future[None] | Coroutine[None, None, None]") -> None:
        """Await `closing` in a task of the runtime's own: a caller cancelled
        (again) stops waiting and the close goes on; `close` waits for it."""
        task = asyncio.ensure_future(closing)
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
        await asyncio.shield(task)

    # --- conversations -----------------------------------------------------------------

    def conversation(
        self, tabs: Sequence[Tab | TabFailure] = (), *, model: str | None = None, hooks: RunHooks | None = None,
    ) -> Conversation:
        self._loaded()
        return Conversation(self, tabs, model=model, hooks=hooks)

    async def open(
        self, targets: Sequence[str], *, model: str | None = None, prefetch: bool = False,
        hooks: RunHooks | None = None,
    ) -> Conversation:
        """Open `targets` and start a conversation about them, warming the
        model and the text pipeline while the pages load. `prefetch`: read the
        pages as soon as they are open, while the user types the first question."""
        self._start_loading()  # now, not after opening the tabs has imported Playwright here on the loop
        warm = asyncio.ensure_future(self.warm(model))
        try:
            tabs = await self.open_tabs(targets)
            await warm  # a model that cannot be made (no key, unknown name) fails here
        except BaseException:
            warm.cancel()
            # Collect the cancelled warm-up: left unawaited, asyncio reports it at
            # exit ("exception was never retrieved", with tracebacks) after the clear error.
            with suppress(asyncio.CancelledError, Exception):
                await warm
            raise
        conversation = self.conversation(tabs, model=model, hooks=hooks)
        if prefetch:
            conversation.prefetch()
        return conversation

    async def warm(self, model: str | None = None) -> None:
        """Create the model's client and open its connection, and load the text
        pipeline's lazy parts (the extraction workers warm themselves as they
        start). A model that cannot be made raises (it is a setting to fix);
        anything else only costs the first question time."""
        await self.load()
        parts = self._loaded()
        await asyncio.gather(parts.models.warm(model), _warm_pipeline(parts.pool))

    async def close(self) -> None:
        # Parts still loading are left to finish: they hold nothing to release until used.
        self._closed = True
        parts = self._parts
        if parts is not None:
            parts.builder.cancel_prefetch()
        try:
            # Ours only: over CDP the user's own tabs stay open (the browser closes any others it made).
            opened, self._opened = self._opened, []
            await asyncio.gather(_close_all(opened), *self._closing, return_exceptions=True)
            if self._browser is not None:
                await self._browser.close()
        finally:
            if parts is not None:
                # Waited for (on a thread): a pool still closing its pipes as the process exits races
                # Python 3.11's exit hook, which then writes to a closed one (a traceback at exit).
                try:
                    await asyncio.to_thread(parts.pool.shutdown, wait=True, cancel_futures=True)
                except OSError as exc:  # the command's own outcome, not this, is what its user is told
                    log.warning("closing the extraction workers failed: %s", exc)
            if self._workers is not None:  # ended by the shutdown: seen to its end, not left pending at exit
                await asyncio.wait({self._workers})

    async def __aenter__(self) -> "Runtime":
        self._start_loading()  # under way while the caller starts the browser
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def _close_all(tabs: Sequence[Tab]) -> None:
    await asyncio.gather(*(tab.close() for tab in tabs), return_exceptions=True)


async def _close_opened(opening: "asyncio.Future[list[Tab | TabFailure]]") -> None:
    """Close the tabs `opening` opened, or stop it: cancelled, it closes what it made."""
    opening.cancel()  # nothing if it is done
    await asyncio.wait({opening})
    if not opening.cancelled() and opening.exception() is None:
        await _close_all([t for t in opening.result() if isinstance(t, Tab)])


def _started(starting: "asyncio.Future[None]") -> None:
    # A pool that cannot start says so to the page that needs it (it is extracted here then).
    if not starting.cancelled() and (exc := starting.exception()) is not None:
        log.debug("the extraction workers did not start ahead: %s", exc)


def _retrieve(loading: "asyncio.Future[_Parts]") -> None:
    if not loading.cancelled() and (exc := loading.exception()) is not None:
        log.debug("loading the runtime failed: %s", exc)


_WARM_TEXT = "\n\n".join(
    f"Paragraph {i} reports the population of city number {i} and how it changed over the years."
    for i in range(40)
)


def _warm_pipeline_sync() -> None:
    from .budget import fit_text
    from .tokens import encoding

    encoding()  # tiktoken's BPE tables: ~0.15-0.45 s on first use
    fit_text(_WARM_TEXT, 128, "Which city has the largest population?")  # stemmer, BM25, the word vectors


async def _warm_pipeline(pool: ExtractionPool) -> None:
    """The tokenizer and budgeting on the default executor (where budgeting
    runs, so its first worker thread exists too), and the extraction workers
    (started, so they warm themselves). Best effort."""
    loop = asyncio.get_running_loop()
    jobs = [loop.run_in_executor(None, _warm_pipeline_sync), pool.start()]
    for outcome in await asyncio.gather(*jobs, return_exceptions=True):
        if isinstance(outcome, BaseException):
            log.debug("pipeline warm-up failed: %s", outcome)
