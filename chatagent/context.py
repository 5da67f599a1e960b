"""Tabs → the page context the model sees: extracted, budgeted, question-aware."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, Field, PrivateAttr

from .browser.base import PageSnapshot, Tab, TabFailure
from .browser.localfiles import is_local
from .blocks import cite
from .budget import LONG_TEXT_CHARS, Fitted, TextFitter, allocate, favour, fit_text, may_select
from .errors import ChatAgentError, UnnamedLocalFileError
from .extraction import Extracted, Extractor
from .limits import DEFAULT_TAB_BUDGET, MIN_TAB_BUDGET
from .markers import selection_marker
from .ranking.across import TOPIC, tab_relevance
from .selection import Selection
from .tokens import count_tokens

log = logging.getLogger(__name__)


# Of a tab's budget the selection may take at most: the rest shows where it sits on the page.
SELECTION_SHARE = 0.5


class TabContext(BaseModel):
    tab_id: str
    url: str
    title: str = ""
    text: str = ""
    tokens: int = 0  # of `text`
    id_tokens: int = 0  # what its block ids add in the prompt ("[1.4] "): on top of `tokens`, up to half the budget
    original_tokens: int = 0
    truncated: bool = False
    selected: bool = False
    # What the question asks of this tab (`ranking.scope`): "search" (the parts that match it),
    # "whole" or "part" (the page, or some of its parts, as a whole), "unmatched" (it names nothing
    # on the page); and whether its text is an overview of the page (`overview.py`), with the parts
    # it was cut into and those shown.
    scope: str = "search"
    overview: bool = False
    parts: int = 0
    parts_shown: int = 0
    method: str = ""
    content_hash: str = ""
    reused: bool = False  # its extraction came from the cache (the page had not changed)
    notes: list[str] = Field(default_factory=list)
    error: str | None = None  # set when the tab could not be read at all
    authors: list[str] = Field(default_factory=list)  # as the page's markup names them (`Extracted`)
    published: str = ""  # the day the page says it was first published, ISO
    selection: str = ""  # the text the person selected and asks about, which leads `text`
    first_block: int = 1  # the number of its first block (`blocks.py`): after an earlier text's when re-read
    # The lines of `text` whose words are not all on the page as the reader finds it, with the runs
    # of them that are (none: the line has no id and cannot be cited), by line (`blocks.off_page`).
    off_page: dict[int, list[str]] = Field(default_factory=dict)
    # The lines whose quote runs across the page's lines (a term and its value), with where it
    # starts and ends there, which a link to it names (`blocks.across_lines`).
    across: dict[int, list[str]] = Field(default_factory=dict)

    # Its text with its block ids, as fitting it rendered them (`blocks.render_text`), for the
    # prompt to reuse: with what it was rendered from, so a copy with another label or text renders again.
    _with_ids: tuple[tuple[str, str, int, str], str] | None = PrivateAttr(default=None)

    @property
    def prompt_tokens(self) -> int:
        """What the tab costs in a prompt: its text with its block ids."""
        return self.tokens + self.id_tokens

    def _ids_key(self) -> tuple[str, str, int, str]:
        return (self.tab_id, self.text, self.first_block, self.title)

    def keep_with_ids(self, rendered: str) -> None:
        """Remember `rendered`, its text with its block ids as they are now."""
        self._with_ids = (self._ids_key(), rendered)

    def kept_with_ids(self) -> str | None:
        """Its text with its block ids, if rendered as it is now; None: render them."""
        kept = self._with_ids
        return kept[1] if kept is not None and kept[0] == self._ids_key() else None

    @property
    def ok(self) -> bool:
        return self.error is None


def _described(t: TabContext) -> str:
    if t.error is not None:
        return f"not read: {t.error}"
    how = (("an overview of the parts asked about" if t.scope == "part" else "an overview of the whole page")
           if t.overview else "the parts the question needs" if t.selected else "its start" if t.truncated else "whole")
    reused = ", extracted before" if t.reused else ""
    return f"{t.tokens:,} of {t.original_tokens:,} tokens ({how}; {t.method}{reused})"


class PageContext(BaseModel):
    tabs: list[TabContext]
    budget_per_tab: int
    question: str | None = None
    extraction_ms: float = 0.0
    budget_ms: float = 0.0

    @property
    def tokens(self) -> int:
        return sum(t.tokens for t in self.tabs)


class ContextBuilder:
    """Snapshots tabs, extracts them (cached by content hash) and fits them
    into a total budget of `budget_per_tab` × number of readable tabs."""

    def __init__(
        self, extractor: Extractor | None = None, budget_per_tab: int = DEFAULT_TAB_BUDGET, *, ids: bool = True,
    ) -> None:
        self.extractor = extractor or Extractor()
        self.budget_per_tab = budget_per_tab
        self.ids = ids  # whether the text is shown with its block ids ("[1.4] ")
        # The ids are the prompt's markup, not page text: up to this many tokens of
        # them come on top of the page text's budget, and any more out of it (a
        # page of very short lines), so a tab's prompt stays within 1.5 × budget.
        self._id_allowance = int(ID_ALLOWANCE * budget_per_tab) if ids else 0
        self._fitter = TextFitter()  # a follow-up question on a tab reuses its page's analysis
        # What a follow-up question on an unchanged page need not work out again: each body's
        # token count, and each text's block ids and what its blocks quote of the page.
        self._tokens: _Recent[str, int] = _Recent(_MEMO_SIZE)
        self._cites: _Recent[tuple[str, str, str, str, bool], _Cited] = _Recent(_MEMO_SIZE)
        self._prefetching: asyncio.Task[None] | None = None

    def with_budget(self, budget_per_tab: int, *, ids: bool | None = None) -> "ContextBuilder":
        """This builder with another per-tab budget (or without block ids: for a
        reader given the bare text), sharing its caches (extraction, token counts, page analysis)."""
        ids = self.ids if ids is None else ids
        if budget_per_tab == self.budget_per_tab and ids == self.ids:
            return self
        other = ContextBuilder(self.extractor, budget_per_tab, ids=ids)
        other._fitter, other._tokens, other._cites = self._fitter, self._tokens, self._cites
        return other

    def prefetch(self, tabs: Sequence[Tab | TabFailure]) -> asyncio.Task[None]:
        """Start reading `tabs` in the background (snapshot, extraction, token
        counts, page analysis) so that the first question finds the work done.

        `build` still reads the tabs itself: a page unchanged since is a cache
        hit, one that changed is read again, and one still being extracted is
        waited for, not extracted twice. `build` never waits for the rest of
        the read-ahead (a hung tab's snapshot, say). Best effort: a failure
        here only leaves the work to `build`. Returns the task, which never
        raises, for a caller that wants to wait for it."""
        self.cancel_prefetch()
        self._prefetching = asyncio.create_task(self.read_ahead(tabs), name="chatagent-prefetch")
        return self._prefetching

    def cancel_prefetch(self) -> None:
        if self._prefetching is not None:
            self._prefetching.cancel()
            self._prefetching = None

    async def read_ahead(self, tabs: Sequence[Tab | TabFailure]) -> None:
        """What `prefetch` runs, for a caller that keeps its own task (several
        read-aheads at once: a daemon's asks). Never raises."""
        try:
            read = await asyncio.gather(*(self._read(t) for t in tabs))
            await asyncio.to_thread(self._prepare, [e for e in read if isinstance(e, Extracted)])
        except Exception as exc:  # noqa: BLE001 - build() does the work itself
            log.debug("reading the tabs ahead failed: %s", exc)

    def _prepare(self, extracted: list[Extracted]) -> None:
        for _, body, need, share in self._shares(extracted):
            if self._fit_budget(body, need, share, asked=True, ids=self._id_cost(body)) is not None:
                self._fitter.prepare(body)

    async def snapshot(self, tab: Tab) -> PageSnapshot | TabFailure:
        """The tab's snapshot (or failure) under its label: the context names tabs as the conversation does."""
        try:
            snap = await tab.snapshot()
        except ChatAgentError as exc:
            # A file the user did not name: not even its address goes to the model (`UnnamedLocalFileError`).
            url = "file://" if isinstance(exc, UnnamedLocalFileError) and is_local(tab.url) else tab.url
            return TabFailure(tab_id=tab.label, url=url, code=exc.code, message=exc.message)
        return snap if snap.tab_id == tab.label else snap.model_copy(update={"tab_id": tab.label})

    async def _read(self, tab: Tab | TabFailure, read: Callable[[Tab], object] | None = None) -> Extracted | TabFailure:
        """The tab's snapshot, extracted as soon as it is taken: tabs are read
        at once, and none waits for the others' snapshots to be extracted.
        A tab that could not be opened stays its failure. `read` is told each
        tab once its snapshot is taken (see `build`)."""
        if not isinstance(tab, Tab):
            return await self._extract(await _failed(tab))
        snapshot = await self.snapshot(tab)
        if read is not None:
            read(tab)
        return await self._extract(snapshot)

    async def _extract(self, snapshot: PageSnapshot | TabFailure) -> Extracted | TabFailure:
        return snapshot if isinstance(snapshot, TabFailure) else await self.extractor.extract(snapshot)

    async def build(
        self,
        tabs: list[Tab | TabFailure],
        question: str | None = None,
        *,
        snapshots: list[PageSnapshot | TabFailure] | None = None,
        selection: Selection | None = None,
        read: Callable[[Tab], object] | None = None,
    ) -> PageContext:
        """`read`: told each tab as soon as its snapshot is taken, before it is
        extracted; a caller that needs the tab no more closes it there, as a
        page left open goes on using the browser's CPU."""
        t0 = time.perf_counter()
        reads = [self._read(t, read) for t in tabs] if snapshots is None else [self._extract(s) for s in snapshots]
        read = await asyncio.gather(*reads)
        extracted = {e.tab_id: e for e in read if isinstance(e, Extracted)}
        # Extracted tabs are known by their labels; the selection names its tab by its own id.
        selected = next((t.label for t in tabs if selection and isinstance(t, Tab) and t.tab_id == selection.tab_id), None)
        t1 = time.perf_counter()
        lead = (selected, selection.text.strip()) if selection is not None and selected in extracted else None
        fitted = await asyncio.to_thread(self._fit, list(extracted.values()), question, lead)
        t2 = time.perf_counter()
        out: list[TabContext] = []
        for r in read:
            if isinstance(r, TabFailure):
                out.append(TabContext(tab_id=r.tab_id, url=r.url, error=r.message, notes=[r.message]))
            else:
                out.append(fitted[r.tab_id])
        context = PageContext(
            tabs=out,
            budget_per_tab=self.budget_per_tab,
            question=question,
            extraction_ms=(t1 - t0) * 1000,
            budget_ms=(t2 - t1) * 1000,
        )
        if log.isEnabledFor(logging.INFO):  # -v: what each tab gave the model, and what it took
            for t in out:
                log.info("tab %s: %s", t.tab_id, _described(t))
            log.info("read in %.0f ms, fitted in %.0f ms", context.extraction_ms, context.budget_ms)
        return context

    def _shares(
        self, extracted: list[Extracted], extra: dict[str, int] | None = None, question: str | None = None,
    ) -> list[tuple[Extracted, str, int, int]]:
        """Each tab with its text, the tokens that text needs and the tokens it
        gets (room for its block ids included; `extra`: tokens a tab needs
        besides its text, by label)."""
        bodies = [_body(e) for e in extracted]
        needs = [self._count(b) for b in bodies]
        extra = extra or {}
        wants = [n + self._id_cost(b) + extra.get(e.tab_id, 0) for e, n, b in zip(extracted, needs, bodies)]
        return list(zip(extracted, bodies, needs, self._split(bodies, wants, question)))

    def _split(self, bodies: list[str], wants: list[int], question: str | None) -> list[int]:
        """The total (the per-tab budget times the tabs) across the tabs: evenly, except that
        when they do not all fit and the question is about some of them, those get what the
        others, kept to their head and best lines, leave. A request for the whole of each
        page (or a part of it) gives every tab its even part, as does a question that matches
        every tab alike (a comparison) or none."""
        total = self.budget_per_tab * len(bodies)
        if len(bodies) < 2 or not (question and question.strip()) or sum(wants) <= total:
            return allocate(wants, total)
        if any(self._fitter.scope(b, question) in ("whole", "part") for b in bodies):
            return allocate(wants, total)
        scores = tab_relevance(TOPIC.terms(question), [self._fitter.passages(b) for b in bodies])
        best = max(scores)
        matching = [s > 0 and s >= MATCH_RATIO * best for s in scores]
        if not any(matching) or all(matching):
            return allocate(wants, total)
        floor = max(MIN_TAB_BUDGET, int(self.budget_per_tab * UNMATCHED_SHARE))
        return favour(wants, total, matching, floor)

    def _fit(
        self, extracted: list[Extracted], question: str | None, lead: tuple[str, str] | None = None,
    ) -> dict[str, TabContext]:
        """Each tab's context; `lead`: a tab's label and the text selected in it, which leads it."""
        out: dict[str, TabContext] = {}
        asked = bool(question and question.strip())
        first = fit_text(lead[1], int(self.budget_per_tab * SELECTION_SHARE)) if lead else None
        extra = {lead[0]: first.tokens + self._id_cost(first.text) + count_tokens(selection_marker())} if lead and first else {}
        shares = self._shares(extracted, extra, question)
        # What the tabs' shares leave of the total: a text sent whole whose ids take more than estimated uses it.
        spare = self.budget_per_tab * len(extracted) - sum(s for *_, s in shares)
        for e, body, need, share in shares:
            if lead and first and e.tab_id == lead[0]:
                out[e.tab_id] = self._led_by(e, body, need, share - extra[e.tab_id], first, question, lead[1])
                continue
            budget = self._fit_budget(body, need, share, asked=asked, ids=self._id_cost(body))
            limit = share + spare if budget is None else budget
            f, with_ids, cited = self._fit_with_ids(e, body, need, limit, budget, question)
            text_tokens = f.tokens if f else need
            spare -= max(self._charged(with_ids, text_tokens) - share, 0) if budget is None else 0
            out[e.tab_id] = self._tab(
                e, text=f.text if f else body, tokens=text_tokens,
                id_tokens=max((cited.tokens if cited else with_ids) - text_tokens, 0),
                original_tokens=need, truncated=bool(f and f.truncated), selected=bool(f and f.selected),
                notes=[*e.notes, f.note] if f and f.note else e.notes, cited=cited,
                **self._scope(f, body, question),
            )
        return out

    def _scope(self, f: Fitted | None, body: str, question: str | None) -> dict[str, Any]:
        """What the question asks of a tab, as its fit found it (or, for a text sent whole, as it would)."""
        if f is not None:
            return {"scope": f.scope, "overview": f.overview, "parts": f.parts, "parts_shown": f.parts_shown}
        return {"scope": self._fitter.scope(body, question or "")}

    def _led_by(
        self, e: Extracted, body: str, need: int, room: int, lead: Fitted, question: str | None, selection: str,
    ) -> TabContext:
        """The context of a tab whose text the person selected and asks about:
        that text first (`lead`, at most SELECTION_SHARE of a tab's budget),
        then the page in the `room` left, its parts that match the selection
        and the question (the ones around the selection) kept first."""
        marker = selection_marker()
        room = max(room, 0)
        budget = self._fit_budget(body, need, room, asked=True, ids=self._id_cost(body))
        rest, *_ = self._fit_with_ids(e, body, need, room if budget is None else budget, budget,
                                     f"{question or ''}\n{selection}")
        text = f"{lead.text}\n\n{marker}\n\n{rest.text if rest else body}"
        tokens = lead.tokens + count_tokens(marker) + (rest.tokens if rest else need)
        cited = self._cited(e, text) if self.ids else None
        return self._tab(
            e, cited=cited, text=text, tokens=tokens, id_tokens=max(cited.tokens - tokens, 0) if cited else 0,
            original_tokens=need, truncated=bool(lead.truncated or (rest and rest.truncated)),
            selected=bool(rest and rest.selected), notes=[*e.notes, rest.note] if rest and rest.note else e.notes,
            selection=lead.text,
        )

    def _fit_with_ids(
        self, e: Extracted, body: str, need: int, limit: int, budget: int | None, question: str | None,
    ) -> tuple[Fitted | None, int, _Cited | None]:
        """The fit of `body` whose text, with the block ids beyond their allowance
        (`_charged`), takes at most `limit` tokens; and the tokens of the text
        with all its ids, and that text with how its blocks read on the page (None without ids)."""
        if not self.ids:
            f = self._fitter.fit(body, budget, question) if budget is not None else None
            return f, f.tokens if f else need, None
        if budget is not None:  # the text's part: what the charged ids of a text that long leave of it
            ids = _ids(body) * min(budget, need) // max(need, 1)
            budget = max(budget - max(ids - self._id_allowance, 0), _ID_FLOOR)
        f = self._fitter.fit(body, budget, question) if budget is not None else None
        while True:
            text, tokens = (f.text, f.tokens) if f else (body, need)
            cited = self._cited(e, text)
            with_ids = cited.charged_tokens
            charged = self._charged(with_ids, tokens)
            # Fit again into what the ids leave, keeping a margin: a cut changes how the ids tokenize.
            smaller = max(min(tokens, budget or tokens) - (charged - limit) - _ID_MARGIN, _ID_FLOOR)
            if charged <= limit or (budget is not None and smaller >= budget):
                return f, with_ids, cited
            budget = smaller
            f = self._fitter.fit(body, budget, question)

    def _id_cost(self, body: str) -> int:
        """What `body`'s block ids take of the budget: beyond their allowance only."""
        return max(_ids(body) - self._id_allowance, 0) if self.ids else 0

    def _charged(self, with_ids: int, text_tokens: int) -> int:
        """The tokens of a text with its ids that count against the budget."""
        return with_ids - min(self._id_allowance, max(with_ids - text_tokens, 0))

    def _fit_budget(self, body: str, need: int, share: int, *, asked: bool, ids: int = 0) -> int | None:
        """The budget a tab's text is fitted into; None to send it whole.

        A text within the per-tab budget may still be cut to three quarters of
        it (`budget.CONFIDENT_SHARE`); a longer one that fits only because
        shorter tabs left tokens unused is sent whole, as analysing a long text
        costs tens of milliseconds on a tab's first question."""
        if need + ids > share:  # `share` holds the block ids too
            return share
        if asked and may_select(body, need, self.budget_per_tab):
            return self.budget_per_tab
        return None

    def _count(self, body: str) -> int:
        if len(body) > LONG_TEXT_CHARS:
            return self._fitter.tokens(body)  # kept with its analysis, where memory is bounded
        return self._tokens.get(body, lambda: count_tokens(body))

    def _cited(self, e: Extracted, text: str) -> "_Cited":
        """`text` (a tab's) with its block ids, its tokens, and how its blocks read on the
        page (`blocks.cite`): a line none of whose words are there gets no id."""
        def cited() -> _Cited:
            rendered, every, off, across = cite(e.tab_id, text, e.title, e.page)
            tokens = count_tokens(rendered)
            return _Cited(off, across, rendered, tokens, tokens if every is rendered else count_tokens(every))

        # The page by its content's hash (which covers its rendered text): the key holds no page.
        return self._cites.get((e.tab_id, text, e.title, e.content_hash, e.page is None), cited)

    def _tab(self, e: Extracted, cited: _Cited | None, **fitted: Any) -> TabContext:
        """A tab's context: what its extraction says of the page, and how its text was `fitted`;
        `cited`: that text with its ids, as fitting it worked them out (None: a reader given
        the bare text, which cites no blocks)."""
        tab = TabContext(tab_id=e.tab_id, url=e.url, title=e.title, method=e.method, content_hash=e.content_hash,
                         reused=e.reused, authors=e.authors, published=e.published,
                         **({"off_page": cited.off, "across": cited.across} if cited else {}), **fitted)
        if cited is not None:
            tab.keep_with_ids(cited.rendered)  # the prompt renders it not again while the first token waits
        return tab


@dataclass(frozen=True)
class _Cited:
    off: dict[int, list[str]]  # `TabContext.off_page`
    across: dict[int, list[str]]  # `TabContext.across`
    rendered: str  # the text with its block ids
    tokens: int  # of `rendered`
    # Of the text with an id on every block, lines off the page too: what a fit charges
    # (a line that has no id keeps the room its id would take).
    charged_tokens: int


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Recent(Generic[K, V]):
    """The values of the last `size` keys asked for, the least recently used dropped first.
    ContextBuilder fits tabs on worker threads: two asking at once may compute a value twice."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._values: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, make: Callable[[], V]) -> V:
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = make()  # unlocked: other threads' fits go on meanwhile
        with self._lock:
            self._values[key] = value
            self._values.move_to_end(key)
            while len(self._values) > self._size:
                self._values.popitem(last=False)
        return value


# Texts a builder remembers the analyses of: ten tabs' bodies and fits, several times over.
_MEMO_SIZE = 64
# Several tabs that do not all fit: a tab matches the question when its score across the tabs
# (`ranking.across`) is at least this share of the best tab's; one that does not keeps this
# share of the per-tab budget (its title, its best lines and a marker), at least MIN_TAB_BUDGET.
MATCH_RATIO = 0.5
UNMATCHED_SHARE = 0.25
# Of the per-tab budget: block ids up to this come on top of the page text. On
# pages of short lines (listings, collections) they take a third of the text;
# charged to it, they cost two-tab comparisons 0.10 of their answers (docs/citations.md).
ID_ALLOWANCE = 0.5
ID_TOKENS = 5  # an id as the prompt writes it ("[1.4] "), in tokens, up to block 999
_ID_FLOOR = MIN_TAB_BUDGET // 2  # the smallest budget a text is refitted into to leave room for its ids
_ID_MARGIN = 8  # tokens kept back on a refit: a cut changes how the ids tokenize


def _body(e: Extracted) -> str:
    # The title leads the text so a cut never loses what the page is.
    if e.title and not e.text.lstrip("# ").startswith(e.title):
        return f"# {e.title}\n\n{e.text}" if e.text else f"# {e.title}"
    return e.text


def _ids(body: str) -> int:
    """The tokens `body`'s block ids would take, about: one id a line, blank lines aside."""
    return ID_TOKENS * max(body.count("\n") + 1 - body.count("\n\n"), 0) if body else 0


async def _failed(failure: TabFailure) -> TabFailure:
    return failure.model_copy(update={"tab_id": failure.label})
