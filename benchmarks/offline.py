"""Offline answers that answer: how often the `extractive` model's answer holds the answer.

    python -m benchmarks.offline [--quick] [--limit N] [--data DIR] [--out FILE.json]

With no API key, `extractive` is the model every new user meets first. This
measures its answers end to end, the way a user gets them: every page is
served from a local HTTP server, loaded in headless Chromium and asked about
through the project's runtime (`Runtime` / `Conversation`, settings from
`server.bench_settings`, model `extractive`), the full agent (pass 1, and
pass 2 when pass 1 escalates). A new `Conversation` per question (no
history); a page's tab stays open for all of its questions (scrolled back to
the top after a question that used the browser tools), as a user asking
several questions about one page would.

Four parts:

1. **WikiTableQuestions** (`../shared/data/wtq`): the share of questions whose
   answer contains a gold answer, the median answer length in words, and for
   comparison whether the page context the model was given (pass 1) holds the
   answer, and whether the whole page text does (what any answer could reach).
   By question kind (`question_kind`) and on both halves of the ids (even ids
   "tune", odd ids "held-out", as in `data.py`).
2. **HotpotQA comparisons** (`../shared/data/hotpot`): every paragraph of a
   question rendered as its own page (`data.render_paragraph`) and opened as a
   tab. Asked twice: over the two gold tabs alone (only the questions whose
   data holds both gold paragraphs), and over every tab (gold + distractors).
   The headline is the share whose answer quotes the deciding evidence from
   both gold tabs (`deciding_evidence`).
3. **Two laptops** (`fixtures/pages/laptop_aurora.html`, `laptop_orion.html`):
   the same facts worded differently on each page ("Battery life: 14 hours
   20 minutes" against "the Orion 14 lasted 11 hours 5 minutes before shutting
   down"); whether each question is answered in pass 1 from both tabs, citing
   both.
4. **The page itself** (`../shared/data/wcxb-test`): "Who wrote this?" on
   every page whose ground truth names an author, "When was this published?"
   on every page whose ground truth gives a day; whether the answer names the
   (first) author, or gives that day ("2025-03-03", "3 March 2025" or
   "March 3, 2025").
5. **Realistic side-panel questions** (`../shared/data/realistic`): single-page
   questions and two-tab comparisons, scored with the set's own scorer
   (`realistic/check.py`: any accepted answer contained after its
   normalisation; a comparison needs one answer from each page), overall, by
   kind and on both halves of the ids (even, odd).

How answers are scored (the yardstick; tested in `tests/test_bench.py`):

- **Matching** is `scoring.normalize` (case, accents, punctuation,
  thousands separators, dashes, month-name dates), then numbers in one form:
  trailing decimal zeros dropped ("6.70" = "6.7", "$1,349.00" = "1349"), and
  then a whole-word test ("3" does not match inside "2013"). The lenient
  variant is a plain substring test (the convention of `context_bench`'s
  recall and of the issue's quick try) and is reported beside it.
- **Lists**: a WTQ gold value with several answers ("A|B") matches only when
  *every* one appears: a list answer that names half the list does not answer.
- **Citations** ("[Tab 1]", and the extractive model's "From [Tab 1] (title):"
  headings) are removed before matching and counting words, so a "1" is never
  found in "Tab 1" and a tab's title is not credited as an answer.
- **No answer**: a question that ended without one (pass 2 stopped at its
  turn or input-token bound, or an error) counts as not answered; its ending
  is shown and its words counted, but never matched (its token figure would
  match a gold "4" by chance, differently on every run).
- Containment rewards long answers: a 60-word quote of table rows contains
  many numbers. Read it with the median answer length, and know that a count's
  gold ("3") is often found by chance in a quoted row.
"""

from __future__ import annotations

import argparse
import asyncio
import html as html_lib
import json
import logging
import math
import re
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console
from rich.progress import Progress

from chatagent.blocks import CITED
from chatagent.browser.base import Tab, TabFailure
from chatagent.browser.playwright import PlaywrightBrowser
from chatagent.context import PageContext
from chatagent.events import Citation, Done, ErrorEvent, ToolCall
from chatagent.hooks import RunHooks
from chatagent.runtime import Runtime
from .data import (
    DEFAULT_DATA_DIR,
    HotpotQuestion,
    RealisticComparison,
    RealisticQuestion,
    WcxbPage,
    WtqQuestion,
    load_hotpot,
    load_realistic,
    load_wcxb,
    load_wtq,
    sample,
)
from .realistic import scorer
from .report import machine, progress_bar, rich_table
from .scoring import NormalizedText, normalize, strip_markdown, words
from .server import PageServer, bench_settings, browser_version, launch_browser
from .stats import finite, median

T = TypeVar("T")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pages"
MODEL = "extractive"
# `--quick` (and the quick `chatagent bench`): WTQ pages (with all their
# questions), HotpotQA questions taken from those whose data holds both gold
# paragraphs (so the headline rate has something to measure), and the laptops.
QUICK_WTQ_PAGES = 8
QUICK_HOTPOT = 6
QUICK_WCXB = 20
QUICK_REALISTIC = 20
# Pages (HotpotQA questions) asked about at once, each in its own tab. The answers do not
# depend on it (the model is deterministic and each page has its own tab); the wall time does.
JOBS = 4

# ---------------------------------------------------------------- question kinds

KINDS = ("lookup", "superlative", "count", "comparison", "other")

# The first rule that matches decides, in this order:
#   comparison  "difference", "differ", "compare", "versus"/"vs"; "how many/much more|less|fewer";
#               "than" (but not "other/rather than", nor "than" before a number: "more than 3
#               races" filters, it does not compare); a choice "X or Y" (the word "or")
#   count       "how many", "number of"
#   superlative "most", "least", "first", "last", "top", "best", "worst", or a word ending in
#               "-est" that is a superlative ("highest", not "forest" or "contest")
#   other       an aggregate ("total", "sum", "average", "combined"), or no question word at all
#               (yes/no questions: "did brazil win before 1992?")
#   lookup      the rest: what/which/who/whose/when/where/how …, "name …", "list …"
_COMPARISON = re.compile(
    r"\b(difference|differences|differ|compare|compared|comparing|versus|vs)\b"
    r"|\bhow (many|much) (more|less|fewer)\b"
    r"|(?<!\bother )(?<!\brather )\bthan\b(?!\s+(?:[\d$]|(?:one|two|three|four|five|six|seven|eight|nine|ten)\b))"
    r"|\bor\b",
    re.I,
)
_COUNT = re.compile(r"\bhow many\b|\bnumber of\b", re.I)
_SUPERLATIVE = re.compile(r"\b(most|least|first|last|top|best|worst|[a-z]{2,}est)\b", re.I)
_NOT_SUPERLATIVE = frozenset(
    "arrest attest behest breast chest conquest contest crest detest digest earnest ernest everest "
    "forest forrest guest harvest honest inquest interest invest jest lest manifest midwest modest nest "
    "northwest pest priest protest quest request rest southwest suggest tempest test unrest vest west "
    "zest bucharest budapest".split()
)
_AGGREGATE = re.compile(r"\b(total|sum|average|combined|altogether)\b", re.I)
_QUESTION_WORD = re.compile(r"\b(what|whats|what's|which|who|whose|whom|when|where|why|how|name|list)\b", re.I)


def question_kind(question: str) -> str:
    """lookup, superlative, count, comparison or other, from the wording alone (rule above)."""
    if _COMPARISON.search(question):
        return "comparison"
    if _COUNT.search(question):
        return "count"
    if any(m.group(0).lower() not in _NOT_SUPERLATIVE for m in _SUPERLATIVE.finditer(question)):
        return "superlative"
    if _AGGREGATE.search(question) or not _QUESTION_WORD.search(question):
        return "other"
    return "lookup"


# ---------------------------------------------------------------- matching

_CITATION = re.compile(r"\[Tab [^\]\n]*\]|" + CITED.pattern)  # a tab, or passages ("[1.4]", "[1.4, 2.3]")
# The extractive model's per-tab heading in a multi-tab answer: "From [Tab 2] (Its title):"
_TAB_HEADING = re.compile(r"^\s*From \[Tab [^\]\n]*\](?: \(.*\))?:\s*$", re.M)
# A decimal with trailing zeros, as `normalize` leaves it ("6.70", "1349.00"): the zeros go.
_TRAILING_ZEROS = re.compile(r"(?<![\d.])(\d+)\.(\d*?)0+(?![\d.])")


def answer_body(answer: str) -> str:
    """The answer without its citations and tab headings: what is scored and counted."""
    return _CITATION.sub(" ", _TAB_HEADING.sub(" ", answer))


def canon(text: str) -> str:
    """`scoring.normalize` (after Markdown is stripped), with numbers in one form."""
    out = normalize(strip_markdown(text))
    return _TRAILING_ZEROS.sub(lambda m: f"{m.group(1)}.{m.group(2)}" if m.group(2) else m.group(1), out)


class Haystack(NormalizedText):
    """A text canonicalised once (`canon`, both sides), to test many gold values against it
    as whole words, or as plain substrings when `lenient`."""

    text_form = answer_form = staticmethod(canon)

    def has(self, value: str, *, lenient: bool = False) -> bool:
        return self.contains(value, whole_words=not lenient)


def contains_gold(gold: Sequence[str] | str, text: str | Haystack, *, lenient: bool = False) -> bool:
    """True when every gold value (WTQ lists several, `|`-separated) is in `text`."""
    values = [v for v in (gold.split("|") if isinstance(gold, str) else gold) if v.strip()]
    hay = text if isinstance(text, Haystack) else Haystack(text)
    return bool(values) and all(hay.has(v, lenient=lenient) for v in values)


def answer_words(answer: str) -> int:
    return len(words(answer_body(answer)))


def lead(answer: str) -> str:
    """The answer's first line of text (citations and tab headings removed): where a verdict goes."""
    for line in answer_body(answer).splitlines():
        if line.strip():
            return line
    return ""


# ---------------------------------------------------------------- deciding evidence (HotpotQA)

_STOP = frozenset(
    "a about after all also an and any are as at be been before being both but by can could did do does "
    "either for from had has have he her his how i in into is it its of on or one other same she so than "
    "that the their them there these they this those to was were what when where which who whom whose why "
    "will with would more most less least many much older younger earlier later first last larger largest not no "
    "smaller longer shorter higher further kind type whether named name known".split()
)
_TITLE_NOTE = re.compile(r"\s*\([^)]*\)\s*$")
QUOTE_WORDS = 8  # a quote of a longer sentence needs this many consecutive words of it


def _stem(word: str) -> str:
    """A deliberately crude stemmer (-'s, -s, -ed, -ing), the same on both sides;
    the yardstick does not share the model's analyser, so tuning one cannot move the other."""
    w = word.lower().removesuffix("'s")
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            return w[: -len(suffix)]
    if w.endswith("s") and not w.endswith("ss") and len(w) > 3:
        return w[:-1]
    return w


def _content_stems(text: str) -> set[str]:
    return {_stem(w) for w in re.findall(r"[^\W_]+(?:'s)?", text.lower()) if w not in _STOP and not w.isdigit()}


def attribute_terms(question: str, titles: Iterable[str]) -> set[str]:
    """What is compared: the question's content words beyond the compared entities'
    names (the gold titles, without a "(band)"-style note)."""
    named = set().union(*(_content_stems(_TITLE_NOTE.sub("", t)) for t in titles))
    return _content_stems(question) - named


# A comparison of amounts or dates ("higher", "more species", "founded first"): its evidence states a figure.
_QUANTITY = re.compile(
    r"\b(more|most|fewer|fewest|less|least|higher|highest|taller|tallest|older|oldest|younger|youngest|"
    r"earlier|earliest|first|later|latest|larger|largest|bigger|biggest|smaller|smallest|longer|longest|"
    r"shorter|shortest|heavier|lighter|faster|slower|newer|newest|lower|lowest|populous|population)\b",
    re.I,
)
_FIGURE = re.compile(
    r"\d|\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\w+teen|twenty|thirty|forty|"
    r"fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|billion|dozen)\b",
    re.I,
)


def deciding_sentences(question: str, titles: Iterable[str], sentences: Sequence[str]) -> list[str]:
    """A gold paragraph's sentences that can decide the question: those that mention
    the compared attribute (share a content word with the question beyond the
    entities' names); for a comparison of amounts or dates ("higher", "more
    species", "born first"), those of them that state a figure (digits or a
    number word), else any sentence that does.
    When nothing qualifies (the attribute is worded otherwise), every sentence."""
    terms = attribute_terms(question, titles)
    hits = [s for s in sentences if terms & _content_stems(s)]
    if _QUANTITY.search(question):
        figures = [s for s in hits if _FIGURE.search(s)] or [s for s in sentences if _FIGURE.search(s)]
        hits = figures or hits
    return hits or list(sentences)


def quotes(answer: str | Haystack, sentence: str) -> bool:
    """The answer holds the sentence, or QUOTE_WORDS consecutive words of it."""
    hay = answer if isinstance(answer, Haystack) else Haystack(answer_body(answer))
    toks = canon(sentence).split()
    if not toks:
        return False
    if len(toks) <= QUOTE_WORDS:
        return f" {' '.join(toks)} " in hay.padded
    return any(f" {' '.join(toks[i:i + QUOTE_WORDS])} " in hay.padded for i in range(len(toks) - QUOTE_WORDS + 1))


def paragraph_sentences(page_html: str) -> list[str]:
    """The sentences of a page made by `data.render_paragraph` (one <p> each)."""
    return [html_lib.unescape(s) for s in re.findall(r"<p>(.*?)</p>", page_html, re.S)]


COPIED_WORDS = 5  # a first line of at least this many words found verbatim in the context is a quote


def names_first(answer: str, name: str, others: Sequence[str], context: str | Haystack) -> bool:
    """A verdict: the answer's first line names `name` and none of `others`, in
    the model's own words: a sentence copied from the page context is a quote,
    which names whatever its page is about, not a verdict ("Polypodium." is a
    verdict although the page says "Polypodium" too)."""
    first = canon(lead(answer))
    hay = context if isinstance(context, Haystack) else Haystack(context)
    n = canon(_TITLE_NOTE.sub("", name))
    rivals = [o for o in (canon(_TITLE_NOTE.sub("", x)) for x in others) if o and o not in n and n not in o]
    copied = len(first.split()) >= COPIED_WORDS and f" {first} " in hay.padded
    return bool(n) and f" {n} " in f" {first} " and not any(f" {o} " in f" {first} " for o in rivals) and not copied


def states_answer(answer: str, gold: str, question: str, entities: Sequence[str], context: str | Haystack) -> bool:
    """Whether the answer gives the gold answer, by its type: yes/no, the first
    word; one of the compared entities (the gold is named in the question), a
    verdict naming it (`names_first`, `entities` are the compared ones); anything
    else ("magazine", "Chile"), anywhere in the answer."""
    g = canon(gold)
    if g in ("yes", "no"):
        return canon(lead(answer)).split()[:1] == [g]
    if f" {g} " in f" {canon(question)} ":
        return names_first(answer, gold, entities, context)
    return contains_gold([gold], answer_body(answer))


# ---------------------------------------------------------------- asking


class _FirstContext(RunHooks):
    """The page context of pass 1: what the model was given to answer from."""

    def __init__(self) -> None:
        self.context: PageContext | None = None

    def context_built(self, context: PageContext) -> None:
        if self.context is None:
            self.context = context


@dataclass
class Asked:
    answer: str = ""
    pass_: int | None = None
    stop_reason: str | None = None  # None: it ended in an error
    cited_urls: list[str] = field(default_factory=list)  # the pages cited (a passage's without its text fragment)
    citations: list[Citation] = field(default_factory=list)
    tool_calls: int = 0
    error: str | None = None
    context: str = ""  # pass 1's page context, every tab's text
    context_by_url: dict[str, str] = field(default_factory=dict)
    ms: float = 0.0

    @property
    def scored(self) -> str:
        """What is matched against the gold: the answer, or nothing when the question
        ended without one (pass 2 stopped at a bound: its ending is the agent's
        note, whose figures, such as the token budget, would match by chance)."""
        return self.answer if self.stop_reason == "answered" else ""


async def ask(runtime: Runtime, tabs: Sequence[Tab | TabFailure], question: str) -> Asked:
    """One question, as `chatagent ask` would answer it, in a new conversation."""
    hooks = _FirstContext()
    t0 = time.perf_counter()
    events = [e async for e in runtime.conversation(tabs, hooks=hooks).ask(question)]
    out = Asked(ms=(time.perf_counter() - t0) * 1000)
    last = events[-1] if events else None
    if isinstance(last, Done):
        out.answer, out.pass_, out.tool_calls, out.stop_reason = last.answer, last.pass_, last.tool_calls, last.stop_reason
        out.citations = last.citations
        out.cited_urls = list(dict.fromkeys(c.url.split(":~:", 1)[0].removesuffix("#") for c in last.citations))
    elif isinstance(last, ErrorEvent):
        out.error = f"{last.code}: {last.message}"
    out.tool_calls = max(out.tool_calls, sum(isinstance(e, ToolCall) for e in events))
    if hooks.context is not None:
        out.context_by_url = {t.url: t.text for t in hooks.context.tabs}
        out.context = "\n\n".join(out.context_by_url.values())
    return out


async def _back_to_top(tabs: Sequence[Tab | TabFailure]) -> None:
    """After pass 2 scrolled, the next question finds the tab as a fresh one would be
    (at the top; straight there, without the tool's wait for lazy content)."""
    for t in tabs:
        if isinstance(t, Tab):
            with suppress(Exception):
                page = getattr(t, "page", None)
                if page is not None:
                    await page.evaluate("window.scrollTo(0, 0)")
                else:
                    await t.scroll("top")


async def _each(items: Sequence[T], work: Callable[[T], Awaitable[None]], jobs: int) -> None:
    """`work(item)` for every item, `jobs` at a time. Most of a question's time in pass 2
    is the browser waiting for a scrolled page to settle, so a few pages at once use it."""
    queue = list(reversed(items))

    async def worker() -> None:
        while queue:
            await work(queue.pop())

    await asyncio.gather(*(worker() for _ in range(max(1, min(jobs, len(items))))))


async def _tab_urls(tabs: Sequence[Tab | TabFailure], fallback: Sequence[str]) -> list[str]:
    """The URL each tab reports in its snapshot: the one its context, and so a citation, carries."""
    out = []
    for t, url in zip(tabs, fallback):
        try:
            out.append((await t.snapshot()).url if isinstance(t, Tab) else url)
        except Exception:
            out.append(url)
    return out


async def _close(tabs: Sequence[Tab | TabFailure]) -> None:
    for t in tabs:
        if isinstance(t, Tab):
            await t.close()


def _rate(xs: Iterable[bool]) -> float | None:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else None


# ---------------------------------------------------------------- WTQ


def score_wtq(q: WtqQuestion, asked: Asked, page_text: Haystack) -> dict[str, Any]:
    body = Haystack(answer_body(asked.scored))
    ctx = Haystack(asked.context)
    return {
        "id": q.id,
        "split": q.split,
        "kind": question_kind(q.question),
        "question": q.question,
        "gold": list(q.answers),
        "pass": asked.pass_,
        "stop_reason": asked.stop_reason,
        "tool_calls": asked.tool_calls,
        "error": asked.error,
        "words": answer_words(asked.answer),
        "answer_has": contains_gold(q.answers, body),
        "answer_has_lenient": contains_gold(q.answers, body, lenient=True),
        "context_has": contains_gold(q.answers, ctx),
        "context_has_lenient": contains_gold(q.answers, ctx, lenient=True),
        "page_has": contains_gold(q.answers, page_text),
        "ms": asked.ms,
        "answer": asked.answer,
    }


async def run_wtq(
    runtime: Runtime, browser: PlaywrightBrowser, site: PageServer, data_dir: Path, questions: Sequence[WtqQuestion],
    progress: Progress, jobs: int = 1,
) -> list[dict[str, Any]]:
    """Every question of every page, in the order given; `jobs` pages at a time."""
    by_page: dict[str, list[WtqQuestion]] = defaultdict(list)
    for q in questions:
        by_page[q.page].append(q)
    task = progress.add_task("offline answers, WTQ", total=len(questions))
    scored: dict[str, dict[str, Any]] = {}

    async def one_page(page: str) -> None:
        tabs = await browser.open_tabs([site.file_url(data_dir / page)])
        try:
            tab = tabs[0]
            try:
                text = (await tab.snapshot()).visible_text if isinstance(tab, Tab) else ""
            except Exception:  # scored as a page with nothing on it; the agent reports why
                text = ""
            page_text = Haystack(text)
            for q in by_page[page]:
                asked = await ask(runtime, tabs, q.question)
                if asked.tool_calls:
                    await _back_to_top(tabs)
                scored[q.id] = score_wtq(q, asked, page_text)
                progress.advance(task)
        finally:
            await _close(tabs)

    await _each(list(by_page), one_page, jobs)
    return [scored[q.id] for q in questions]


def _wtq_group(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {
        "questions": len(rows),
        "answer_has": _rate(r["answer_has"] for r in rows),
        "answer_has_lenient": _rate(r["answer_has_lenient"] for r in rows),
        "context_has": _rate(r["context_has"] for r in rows),
        "context_has_lenient": _rate(r["context_has_lenient"] for r in rows),
        "page_has": _rate(r["page_has"] for r in rows),
        # Of the questions whose context holds the answer, how many answers pass it on.
        "answer_has_given_context": _rate(r["answer_has"] for r in rows if r["context_has"]),
        "pass1": _rate(r["pass"] == 1 for r in rows),
        "no_answer": _rate(r["stop_reason"] != "answered" for r in rows),
        "words_median": median((r["words"] for r in rows), default=math.nan),
        # Pass 1's answers only: what the model quoted, without pass 2's "found nothing" endings.
        "words_median_pass1": median((r["words"] for r in rows if r["pass"] == 1), default=math.nan),
        "errors": sum(r["error"] is not None for r in rows),
    }


def summarise_wtq(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    by_kind = {k: _wtq_group([r for r in rows if r["kind"] == k]) for k in KINDS}
    splits = ("tune", "held-out")
    return {
        **_wtq_group(rows),
        "by_kind": by_kind,
        "by_split": {s: _wtq_group([r for r in rows if r["split"] == s]) for s in splits},
        "by_kind_split": {
            k: {s: _wtq_group([r for r in rows if r["kind"] == k and r["split"] == s]) for s in splits} for k in KINDS
        },
    }


# ---------------------------------------------------------------- HotpotQA


def score_hotpot(q: HotpotQuestion, config: str, asked: Asked, urls: list[str], shown: list[int]) -> dict[str, Any]:
    """`urls[i]` is page i's URL; `shown` the pages opened as tabs for this config."""
    gold = [i for i, p in enumerate(q.pages) if p.title in q.gold_titles]
    body = Haystack(answer_body(asked.scored))
    cited = sorted({urls.index(u) for u in asked.cited_urls if u in urls})
    evidence, in_context = {}, {}
    for i in gold:
        sentences = deciding_sentences(q.question, q.gold_titles, paragraph_sentences(q.pages[i].html))
        evidence[q.pages[i].title] = any(quotes(body, s) for s in sentences)
        ctx = Haystack(asked.context_by_url.get(urls[i], ""))
        in_context[q.pages[i].title] = any(quotes(ctx, s) for s in sentences)
    both = len(gold) == 2
    cites_both = both and all(i in cited for i in gold)
    return {
        "id": q.id,
        "config": config,
        "question": q.question,
        "gold": q.answer,
        "yes_no": q.is_yes_no,
        "gold_tabs": len(gold),
        "tabs": len(shown),
        "pass": asked.pass_,
        "stop_reason": asked.stop_reason,
        "error": asked.error,
        "cited_tabs": len(cited),
        "cites_both_gold": cites_both,
        "evidence_from": evidence,
        "deciding_evidence": cites_both and all(evidence.values()),
        "context_has_evidence": both and all(in_context.values()),
        "exact": canon(answer_body(asked.scored)) == canon(q.answer),
        "contains": not q.is_yes_no and contains_gold([q.answer], body),
        "states_answer": states_answer(asked.scored, q.answer, q.question, q.gold_titles, asked.context),
        "words": answer_words(asked.answer),
        "ms": asked.ms,
        "answer": asked.answer,
    }


async def run_hotpot(
    runtime: Runtime, browser: PlaywrightBrowser, site: PageServer, questions: Sequence[HotpotQuestion],
    progress: Progress, jobs: int = 1,
) -> list[dict[str, Any]]:
    """Each question over its two gold tabs (when the data holds both), then over every tab."""
    task = progress.add_task("offline answers, HotpotQA", total=len(questions))
    scored: dict[str, list[dict[str, Any]]] = {}

    async def one_question(q: HotpotQuestion) -> None:
        urls = [site.page_url(f"offline/hotpot/{q.id}/{i}.html", p.html) for i, p in enumerate(q.pages)]
        tabs = await browser.open_tabs(urls)
        try:
            urls = await _tab_urls(tabs, urls)
            gold = [i for i, p in enumerate(q.pages) if p.title in q.gold_titles]
            configs = [("gold tabs", gold)] if len(gold) == 2 else []
            configs.append(("all tabs", list(range(len(tabs)))))
            rows = []
            for config, shown in configs:
                asked = await ask(runtime, [tabs[i] for i in shown], q.question)
                if asked.tool_calls:
                    await _back_to_top(tabs)
                rows.append(score_hotpot(q, config, asked, urls, shown))
            scored[q.id] = rows
        finally:
            await _close(tabs)
        progress.advance(task)

    await _each(list(questions), one_question, jobs)
    return [r for q in questions for r in scored[q.id]]


def _hotpot_group(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    both = [r for r in rows if r["gold_tabs"] == 2]
    entity = [r for r in rows if not r["yes_no"]]
    return {
        "questions": len(rows),
        "both_gold": len(both),
        # The headline: over the questions whose data holds both gold paragraphs.
        "deciding_evidence": _rate(r["deciding_evidence"] for r in both),
        "cites_both_gold": _rate(r["cites_both_gold"] for r in both),
        "context_has_evidence": _rate(r["context_has_evidence"] for r in both),
        "states_answer": _rate(r["states_answer"] for r in rows),
        "states_answer_both_gold": _rate(r["states_answer"] for r in both),
        "exact": _rate(r["exact"] for r in rows),
        "contains_entity": _rate(r["contains"] for r in entity),
        "entity_questions": len(entity),
        "pass1": _rate(r["pass"] == 1 for r in rows),
        "cited_tabs_median": median((r["cited_tabs"] for r in rows), default=math.nan),
        "words_median": median((r["words"] for r in rows), default=math.nan),
        "errors": sum(r["error"] is not None for r in rows),
    }


def summarise_hotpot(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {c: _hotpot_group([r for r in rows if r["config"] == c]) for c in ("gold tabs", "all tabs")}


# ---------------------------------------------------------------- two laptops


@dataclass(frozen=True)
class LaptopQuestion:
    question: str
    facts: tuple[str, str]  # what each tab must contribute: (Aurora page, Orion page)
    verdict: str | None  # the laptop a right answer names first, if the question asks for one


LAPTOP_PAGES = ("laptop_aurora.html", "laptop_orion.html")
LAPTOP_NAMES = ("Aurora", "Orion")
LAPTOP_QUESTIONS = (
    LaptopQuestion("Which laptop has the longer battery life?", ("14 hours 20 minutes", "11 hours 5 minutes"), "Aurora"),
    LaptopQuestion("Which is cheaper?", ("$1,349", "$1,099"), "Orion"),
    LaptopQuestion("What does each laptop cost?", ("$1,349", "$1,099"), None),
    LaptopQuestion("Which one is lighter?", ("1.28 kg", "2.9 pounds"), "Aurora"),
)


async def run_laptops(
    runtime: Runtime, browser: PlaywrightBrowser, site: PageServer, progress: Progress
) -> list[dict[str, Any]]:
    task = progress.add_task("offline answers, two laptops", total=len(LAPTOP_QUESTIONS))
    tabs = await browser.open_tabs([site.file_url(FIXTURES / p) for p in LAPTOP_PAGES])
    urls = await _tab_urls(tabs, [""] * len(tabs))
    rows = []
    try:
        for q in LAPTOP_QUESTIONS:
            asked = await ask(runtime, tabs, q.question)
            if asked.tool_calls:
                await _back_to_top(tabs)
            body = Haystack(answer_body(asked.scored))
            cited = [u in asked.cited_urls for u in urls]
            facts = [body.has(f) for f in q.facts]
            rows.append({
                "question": q.question,
                "pass": asked.pass_,
                "stop_reason": asked.stop_reason,
                "error": asked.error,
                "cites": dict(zip(LAPTOP_NAMES, cited)),
                "facts": dict(zip(LAPTOP_NAMES, facts)),
                # The headline: pass 1, both tabs cited, each tab's fact quoted.
                "both_tabs_pass1": asked.pass_ == 1 and all(cited) and all(facts),
                "verdict": None if q.verdict is None else names_first(asked.scored, q.verdict, LAPTOP_NAMES, asked.context),
                "words": answer_words(asked.answer),
                "answer": asked.answer,
            })
            progress.advance(task)
    finally:
        await _close(tabs)
    return rows


# ---------------------------------------------------------------- the page itself (WCXB)


SELF_QUESTIONS = {"author": "Who wrote this?", "published": "When was this published?"}


def _self_golds(page: WcxbPage) -> list[tuple[str, str]]:
    """(kind, gold) for each question of `SELF_QUESTIONS` the page's ground truth answers."""
    return [(kind, gold) for kind, gold in (("author", page.author), ("published", page.published)) if gold]


def score_self(kind: str, gold: str, asked: Asked) -> bool:
    """The answer names the first author the ground truth lists, or gives its day
    (as "2025-03-03", "3 March 2025" or "March 3, 2025")."""
    body = answer_body(asked.scored)
    if kind == "author":
        return contains_gold([re.split(r",|;|\band\b", gold)[0].strip()], body, lenient=True)
    try:
        day = date.fromisoformat(gold[:10])
    except ValueError:  # a month ("2015-11"), or a form of its own
        return contains_gold([gold], body, lenient=True)
    return any(contains_gold([form], body, lenient=True)
               for form in (day.isoformat(), f"{day.day} {day:%B %Y}", f"{day:%B} {day.day}, {day.year}"))


async def run_self(
    runtime: Runtime, browser: PlaywrightBrowser, site: PageServer, data_dir: Path, pages: Sequence[WcxbPage],
    progress: Progress, jobs: int = 1,
) -> list[dict[str, Any]]:
    """Each page, asked who wrote it and when it was published where its ground truth says."""
    asked_of = [(p, kind) for p in pages for kind, _ in _self_golds(p)]
    task = progress.add_task("offline answers, the page itself", total=len(asked_of))
    scored: dict[tuple[str, str], dict[str, Any]] = {}

    async def one_page(page: WcxbPage) -> None:
        tabs = await browser.open_tabs([site.file_url(data_dir / page.path)])
        try:
            for kind, gold in _self_golds(page):
                asked = await ask(runtime, tabs, SELF_QUESTIONS[kind])
                scored[page.id, kind] = {
                    "id": page.id, "kind": kind, "page_type": page.page_type, "gold": gold,
                    "pass": asked.pass_, "stop_reason": asked.stop_reason, "error": asked.error,
                    "answer_has": score_self(kind, gold, asked), "words": answer_words(asked.answer),
                    "answer": asked.answer,
                }
                progress.advance(task)
        finally:
            await _close(tabs)

    await _each([p for p in pages if _self_golds(p)], one_page, jobs)
    return [scored[p.id, kind] for p, kind in asked_of]


def summarise_self(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    def group(rs: Sequence[dict[str, Any]]) -> dict[str, Any]:
        return {"questions": len(rs), "answer_has": _rate(r["answer_has"] for r in rs),
                "pass1": _rate(r["pass"] == 1 for r in rs),
                "words_median": median((r["words"] for r in rs), default=math.nan)}

    return {kind: group([r for r in rows if r["kind"] == kind]) for kind in SELF_QUESTIONS}


# ---------------------------------------------------------------- realistic side-panel questions


def _half(qid: str) -> str:
    """"even" or "odd" by the id's number (d004: even): one half to develop on, one to check."""
    digits = re.sub(r"\D", "", qid)
    return "even" if digits and int(digits) % 2 == 0 else "odd"


async def run_realistic(
    runtime: Runtime, browser: PlaywrightBrowser, site: PageServer, data_dir: Path,
    questions: Sequence[RealisticQuestion], comparisons: Sequence[RealisticComparison], progress: Progress,
    jobs: int = 1,
) -> list[dict[str, Any]]:
    """Every single-page question (a page's tab open for all its questions) and every comparison."""
    check = scorer(str(data_dir))
    task = progress.add_task("offline answers, realistic", total=len(questions) + len(comparisons))
    by_page: dict[str, list[RealisticQuestion]] = defaultdict(list)
    for q in questions:
        by_page[q.page].append(q)
    scored: dict[str, dict[str, Any]] = {}

    def row(qid: str, kind: str, question: str, asked: Asked, hit: bool) -> dict[str, Any]:
        return {"id": qid, "kind": kind, "half": _half(qid), "question": question, "pass": asked.pass_,
                "stop_reason": asked.stop_reason, "error": asked.error, "answer_has": hit,
                "words": answer_words(asked.answer), "answer": asked.answer}

    async def one_page(page: str) -> None:
        tabs = await browser.open_tabs([site.file_url(data_dir / page)])
        try:
            for q in by_page[page]:
                asked = await ask(runtime, tabs, q.question)
                if asked.tool_calls:
                    await _back_to_top(tabs)
                scored[q.id] = row(q.id, q.kind, q.question, asked, bool(check.hit(answer_body(asked.scored), q.answers)))
                progress.advance(task)
        finally:
            await _close(tabs)

    async def one_comparison(c: RealisticComparison) -> None:
        tabs = await browser.open_tabs([site.file_url(data_dir / p) for p in c.pages])
        try:
            asked = await ask(runtime, tabs, c.question)
            hit = bool(check.hit_comparison(answer_body(asked.scored), c.answers_per_page))
            scored[c.id] = row(c.id, "comparison", c.question, asked, hit)
            progress.advance(task)
        finally:
            await _close(tabs)

    await _each(list(by_page), one_page, jobs)
    await _each(list(comparisons), one_comparison, jobs)
    return [scored[q.id] for q in questions] + [scored[c.id] for c in comparisons]


def summarise_realistic(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    def group(rs: Sequence[dict[str, Any]]) -> dict[str, Any]:
        return {"questions": len(rs), "answer_has": _rate(r["answer_has"] for r in rs),
                "pass1": _rate(r["pass"] == 1 for r in rs),
                "words_median": median((r["words"] for r in rs), default=math.nan)}

    single = [r for r in rows if r["kind"] != "comparison"]
    pairs = [r for r in rows if r["kind"] == "comparison"]
    return {
        "questions": group(single),
        "by_half": {h: group([r for r in single if r["half"] == h]) for h in ("even", "odd")},
        "by_kind": {k: group([r for r in single if r["kind"] == k]) for k in sorted({r["kind"] for r in single})},
        "comparisons": group(pairs),
        "comparisons_by_half": {h: group([r for r in pairs if r["half"] == h]) for h in ("even", "odd")},
    }


# ---------------------------------------------------------------- plan and run


@dataclass(frozen=True)
class OfflinePlan:
    """What to ask. `wtq_pages`: WTQ pages with all their questions (None: all 211 pages,
    2,244 questions), an evenly spread sample (`data.sample`). `hotpot`: HotpotQA
    questions (None: all 89); `hotpot_both_gold`: sample only those whose data holds both
    gold paragraphs (the quick run, so its headline rate is not over two or three)."""

    name: str
    wtq_pages: int | None
    hotpot: int | None
    hotpot_both_gold: bool = False
    wcxb_pages: int | None = None  # the page itself: WCXB pages (None: all 511), evenly spread
    realistic: int | None = None  # realistic questions and comparisons, each (None: all 150 and 30)

    @classmethod
    def make(cls, quick: bool = False, limit: int | None = None) -> "OfflinePlan":
        if limit is not None:
            return cls(f"limit {limit}", limit, limit, hotpot_both_gold=quick, wcxb_pages=limit, realistic=limit)
        if quick:
            return cls("quick", QUICK_WTQ_PAGES, QUICK_HOTPOT, hotpot_both_gold=True, wcxb_pages=QUICK_WCXB,
                       realistic=QUICK_REALISTIC)
        return cls("full", None, None)

    def describe(self) -> str:
        wtq = "all WTQ pages" if self.wtq_pages is None else f"{self.wtq_pages} WTQ pages (evenly spread)"
        hp = "all HotpotQA questions" if self.hotpot is None else (
            f"{self.hotpot} HotpotQA questions" + (" with both gold paragraphs" if self.hotpot_both_gold else ""))
        wcxb = "all WCXB pages" if self.wcxb_pages is None else f"{self.wcxb_pages} WCXB pages (evenly spread)"
        real = "all realistic questions" if self.realistic is None else f"{self.realistic} realistic questions"
        return f"{wtq}, {hp}, 4 laptop questions, {wcxb} asked who wrote them and when, {real} (and comparisons)"


def hotpot_sample(data_dir: Path, plan: OfflinePlan) -> list[HotpotQuestion]:
    questions = load_hotpot(data_dir)
    if plan.hotpot_both_gold:
        questions = [q for q in questions if len(q.gold_pages) == 2]
    return sample(questions, plan.hotpot)


def _git() -> str:
    try:
        root = Path(__file__).resolve().parents[1]
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True,
                               text=True, timeout=5)
        return head.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


async def run_offline(
    plan: OfflinePlan, data_dir: Path, browser: PlaywrightBrowser, site: PageServer, progress: Progress,
    jobs: int = JOBS,
) -> dict[str, Any]:
    """All three parts over `browser`'s tabs, `jobs` pages (questions) at a time; the result with its summary."""
    questions = load_wtq(data_dir, plan.wtq_pages)
    hotpot = hotpot_sample(data_dir, plan)
    started = time.perf_counter()
    times: dict[str, float] = {}
    async with Runtime(bench_settings(model=MODEL)) as runtime:
        t0 = time.perf_counter()
        wtq_rows = await run_wtq(runtime, browser, site, data_dir, questions, progress, jobs)
        times["wtq"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        hotpot_rows = await run_hotpot(runtime, browser, site, hotpot, progress, jobs)
        times["hotpot"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        laptop_rows = await run_laptops(runtime, browser, site, progress)
        times["laptops"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        self_rows = await run_self(runtime, browser, site, data_dir, load_wcxb(data_dir, plan.wcxb_pages), progress, jobs)
        times["page itself"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        real_q, real_c = load_realistic(data_dir, plan.realistic) if (data_dir / "realistic").is_dir() else ([], [])
        realistic_rows = await run_realistic(runtime, browser, site, data_dir, real_q, real_c, progress, jobs)
        times["realistic"] = time.perf_counter() - t0
    wtq = summarise_wtq(wtq_rows)
    wtq["pages"] = len({q.page for q in questions})
    return {
        "config": {"model": MODEL, "plan": asdict(plan), "samples": plan.describe(), "data_dir": str(data_dir),
                   "jobs": jobs, "commit": _git()},
        "wtq": wtq,
        "hotpot": summarise_hotpot(hotpot_rows),
        "laptops": {"questions": len(laptop_rows), "both_tabs_pass1": _rate(r["both_tabs_pass1"] for r in laptop_rows),
                    "rows": laptop_rows},
        "page_itself": summarise_self(self_rows),
        "realistic": summarise_realistic(realistic_rows),
        "rows": {"wtq": wtq_rows, "hotpot": hotpot_rows, "page_itself": self_rows, "realistic": realistic_rows},
        "wall_s": time.perf_counter() - started,
        "wall_s_by_part": times,
    }


def headline(offline: dict[str, Any]) -> dict[str, Any]:
    """The figures `chatagent bench` shows in its summary."""
    w, h, lap = offline["wtq"], offline["hotpot"], offline["laptops"]
    return {
        "wtq_questions": w["questions"],
        "wtq_answer_has": w["answer_has"],
        "wtq_answer_has_lenient": w["answer_has_lenient"],
        "wtq_context_has": w["context_has"],
        "wtq_words_median": w["words_median"],
        "wtq_answer_has_by_kind": {k: v["answer_has"] for k, v in w["by_kind"].items()},
        "wtq_answer_has_by_split": {k: v["answer_has"] for k, v in w["by_split"].items()},
        "hotpot_deciding_evidence": {k: v["deciding_evidence"] for k, v in h.items()},
        "hotpot_both_gold": h["gold tabs"]["both_gold"],
        "hotpot_states_answer": {k: v["states_answer"] for k, v in h.items()},
        "laptops_both_tabs_pass1": sum(r["both_tabs_pass1"] for r in lap["rows"]),
        "laptops_questions": lap["questions"],
        "page_itself_answer_has": {k: v["answer_has"] for k, v in offline["page_itself"].items()},
        "realistic_answer_has": offline["realistic"]["questions"]["answer_has"],
        "realistic_comparisons_answer_has": offline["realistic"]["comparisons"]["answer_has"],
    }


# ---------------------------------------------------------------- tables


def _f(x: float | None, digits: int = 3) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _tick(x: bool | None) -> str:
    return "–" if x is None else ("✓" if x else "✗")


# answer / lenient / context / page: share of questions whose answer (whole words; substring), pass-1
# context or whole page text holds every gold value; "answer given context": the answer's share among the
# questions whose context holds it.
WTQ_HEAD = ["questions", "n", "answer", "lenient", "context", "page", "answer given context", "pass 1", "words p50",
            "words p50, pass 1"]
HOTPOT_HEAD = ["tabs", "n", "both gold", "deciding evidence", "cites both", "context evidence",
               "states answer", "exact", "entity in answer", "pass 1", "tabs cited p50", "words p50"]
LAPTOP_HEAD = ["question", "pass", "cites Aurora / Orion", "fact Aurora / Orion", "both tabs, pass 1", "verdict first", "words"]
SELF_HEAD = ["question", "n", "answer", "pass 1", "words p50"]
REALISTIC_HEAD = ["questions", "n", "answer", "pass 1", "words p50"]


def wtq_table_rows(w: dict[str, Any]) -> list[list[str]]:
    def row(name: str, g: dict[str, Any]) -> list[str]:
        return [name, str(g["questions"]), _f(g["answer_has"]), _f(g["answer_has_lenient"]), _f(g["context_has"]),
                _f(g["page_has"]), _f(g["answer_has_given_context"]), _f(g["pass1"]), _f(g["words_median"], 0),
                _f(g["words_median_pass1"], 0)]

    out = [row("all", w)]
    out += [row(k, g) for k, g in w["by_kind"].items() if g["questions"]]
    out += [row(f"split: {s}", g) for s, g in w["by_split"].items()]
    return out


def hotpot_table_rows(h: dict[str, Any]) -> list[list[str]]:
    return [
        [c, str(g["questions"]), str(g["both_gold"]), _f(g["deciding_evidence"]), _f(g["cites_both_gold"]),
         _f(g["context_has_evidence"]), _f(g["states_answer"]), _f(g["exact"]), _f(g["contains_entity"]),
         _f(g["pass1"]), _f(g["cited_tabs_median"], 0), _f(g["words_median"], 0)]
        for c, g in h.items() if g["questions"]
    ]


def laptop_table_rows(rows: Sequence[dict[str, Any]]) -> list[list[str]]:
    return [
        [r["question"], str(r["pass"]), " / ".join(_tick(v) for v in r["cites"].values()),
         " / ".join(_tick(v) for v in r["facts"].values()), _tick(r["both_tabs_pass1"]), _tick(r["verdict"]),
         str(r["words"])]
        for r in rows
    ]


def self_table_rows(summary: dict[str, Any]) -> list[list[str]]:
    return [[SELF_QUESTIONS[k], str(g["questions"]), _f(g["answer_has"]), _f(g["pass1"]), _f(g["words_median"], 0)]
            for k, g in summary.items() if g["questions"]]


def realistic_table_rows(r: dict[str, Any]) -> list[list[str]]:
    def row(name: str, g: dict[str, Any]) -> list[str]:
        return [name, str(g["questions"]), _f(g["answer_has"]), _f(g["pass1"]), _f(g["words_median"], 0)]

    out = [row("single page", r["questions"])]
    out += [row(f"half: {h}", g) for h, g in r["by_half"].items()]
    out += [row(k, g) for k, g in r["by_kind"].items()]
    out += [row("two-tab comparisons", r["comparisons"])]
    out += [row(f"comparisons, half: {h}", g) for h, g in r["comparisons_by_half"].items()]
    return out


def print_offline(offline: dict[str, Any], console: Console) -> None:
    w = offline["wtq"]
    console.print(rich_table(
        f"Offline answers ({MODEL}) on WTQ: {w['questions']:,} questions, {w['pages']} pages", WTQ_HEAD,
        wtq_table_rows(w)))
    console.print(rich_table("Offline answers on HotpotQA comparisons", HOTPOT_HEAD, hotpot_table_rows(offline["hotpot"])))
    console.print(rich_table("Two laptops, two tabs", LAPTOP_HEAD, laptop_table_rows(offline["laptops"]["rows"])))
    console.print(rich_table("The page itself (WCXB)", SELF_HEAD, self_table_rows(offline["page_itself"])))
    console.print(rich_table("Realistic side-panel questions", REALISTIC_HEAD, realistic_table_rows(offline["realistic"])))


def markdown_section(offline: dict[str, Any]) -> str:
    """The Markdown tables of a run (for `chatagent bench`'s report and the docs)."""
    def md(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])

    w, cfg = offline["wtq"], offline["config"]
    return "\n".join([
        f"Model `{cfg['model']}`, {cfg['samples']}; commit {cfg['commit']}; {offline['wall_s']:.0f} s.", "",
        f"WikiTableQuestions ({w['questions']:,} questions, {w['pages']} pages). `answer given context`: of the "
        "questions whose context holds the gold answer, the share whose answer does too.", "",
        md(WTQ_HEAD, wtq_table_rows(w)), "",
        "HotpotQA comparisons (`deciding evidence`: cites both gold tabs and quotes, from each, a sentence of its "
        "gold paragraph that mentions the compared attribute; over the questions whose data holds both gold "
        "paragraphs).", "",
        md(HOTPOT_HEAD, hotpot_table_rows(offline["hotpot"])), "",
        "Two laptops (`fixtures/pages/laptop_aurora.html`, `laptop_orion.html`).", "",
        md(LAPTOP_HEAD, laptop_table_rows(offline["laptops"]["rows"])), "",
        "The page itself (WCXB pages whose ground truth names an author or gives a day; `answer`: it names the "
        "first author, or gives that day).", "",
        md(SELF_HEAD, self_table_rows(offline["page_itself"])), "",
        "Realistic side-panel questions (`../shared/data/realistic`, scored by its own `check.py`: an accepted "
        "answer contained after its normalisation; a comparison needs one answer from each page).", "",
        md(REALISTIC_HEAD, realistic_table_rows(offline["realistic"])),
    ]) + "\n"


# ---------------------------------------------------------------- main




async def run(plan: OfflinePlan, data_dir: Path, console: Console, jobs: int = JOBS) -> dict[str, Any]:
    with progress_bar(console) as progress, PageServer() as site:
        async with launch_browser() as browser:
            result = await run_offline(plan, data_dir, browser, site, progress, jobs)
            result["config"]["browser"] = browser_version(browser)
    result["machine"] = machine()
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.offline", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help=f"{QUICK_WTQ_PAGES} WTQ pages, {QUICK_HOTPOT} HotpotQA questions (with both gold paragraphs) and "
                    f"{QUICK_WCXB} WCXB pages")
    ap.add_argument("--limit", type=int, default=None, metavar="N",
                    help="N WTQ pages (all their questions), N HotpotQA questions and N WCXB pages, evenly spread (default: all)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="evaluation data dir (default: ../shared/data)")
    ap.add_argument("--out", type=Path, default=Path("bench-results/offline.json"),
                    help="write every figure and answer as JSON here (default: bench-results/offline.json)")
    ap.add_argument("--jobs", type=int, default=JOBS, metavar="N",
                    help=f"pages asked about at once, each in its own tab (default {JOBS}; the answers do not depend on it)")
    ap.add_argument("-v", "--verbose", action="store_true", help="keep trafilatura's warnings about odd pages")
    args = ap.parse_args(argv)
    if (args.limit is not None and args.limit < 1) or args.jobs < 1:
        ap.error("--limit and --jobs must be at least 1")
    if not (args.data / "wtq" / "questions.tsv").is_file() or not (args.data / "hotpot" / "comparison.jsonl").is_file():
        print(f"No evaluation data at {args.data} (expected wtq/ and hotpot/); pass --data DIR.", file=sys.stderr)
        return 2
    if not args.verbose:
        logging.getLogger("trafilatura").setLevel(logging.ERROR)
    plan = OfflinePlan.make(args.quick, args.limit)
    result = asyncio.run(run(plan, args.data, Console(stderr=True), args.jobs))
    out = Console(highlight=False) if sys.stdout.isatty() else Console(highlight=False, width=160)
    print_offline(result, out)
    out.print(f"{plan.name} run: {plan.describe()}; {result['wall_s']:.0f} s "
              f"(WTQ {result['wall_s_by_part']['wtq']:.0f} s, HotpotQA {result['wall_s_by_part']['hotpot']:.0f} s, "
              f"laptops {result['wall_s_by_part']['laptops']:.0f} s, the page itself "
              f"{result['wall_s_by_part']['page itself']:.0f} s, realistic "
              f"{result['wall_s_by_part']['realistic']:.0f} s)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(finite(result), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    Console(stderr=True).print(f"wrote {args.out}", style="dim")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
