"""Whole-page requests: does the context stand for the whole page, and does the offline summary?

    python -m benchmarks.whole_page [--data DIR] [--limit N] [--budget 2000] [--out FILE.json]

"tldr", "sum up this article pls", "what are the main points": a request about the whole page
(issue 52). The pages are the WCXB test pages whose main content is over 2,000 tokens (the set's
own list, `whole-page/coverage.py --list`), each served locally and read once through headless
Chromium; the CPU work runs in a process pool. Every context is scored with the set's own scorer
(`whole-page/coverage.py`, loaded from the data dir): *coverage*, the share of the page's parts
(of its ground-truth main content) a sentence of which is in the text, and *main*, the share of the
text's 8-word shingles that are main content at all.

1. For each request wording of ours (WORDINGS: English, French, German, Spanish, typed as people
   type): chatagent's context at `--budget` tokens (`ContextBuilder.build`, the tab's `text`, what a
   model is given), its coverage, main share and tokens, and the share of pages it gave an overview
   of (`TabContext.overview`; for a text sent whole, `scope` other than "search").
2. Reference rows: the whole rendered text (`innerText`, no budget) and its first `--budget` tokens.
3. Starved pages: for each wording and each fact question of ours naming something a long page
   would not hold (FACTS), the pages whose rendered text is over STARVED_PAGE tokens but whose
   context came out under STARVED_CONTEXT.
4. The offline summary: for SUMMARISED wordings, the `extractive` model's pass-1 answer, called as
   the agent calls it (the prompt messages, with the typed `PageContext` bound as `context=`, built
   at the budget the agent reads with for that model: its provider's `reads_per_tab`). Its coverage
   (citations stripped), words, whether every line cites a block (a citation stands for the words
   back to the previous one or to the line's start, as `citations.claim` reads them; a short lead-in
   line ending in ":" that cites no block needs none), and whether every sentence of it (citations,
   bullets and a cut's "…" stripped) is in the tab's context text, whitespace normalised (and, on
   both sides, without the Markdown marks of emphasis, code, headings and list items: not the page's words).
5. The decision's errors both ways: a labelled set of our own requests (WHOLE_REQUESTS,
   SPECIFIC_QUESTIONS) asked over DECISION_PAGES of the pages, and the realistic side-panel
   questions (`realistic/questions.jsonl`, all specific, read at run time) over their own pages:
   how many of each were taken for the other kind (`TabContext.scope`: "whole" or "part" is a
   whole-page request; "unmatched", a question naming nothing on the page, is shown an overview
   too but is not one, and is counted apart).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from rich.console import Console
from rich.progress import Progress

from chatagent.blocks import CITED
from chatagent.browser.base import PageSnapshot
from chatagent.browser.playwright import PlaywrightBrowser
from chatagent.budget import fit_text
from chatagent.context import ContextBuilder, PageContext, TabContext
from chatagent.prompts import ESCALATION_MARKER, build_messages
from chatagent.tables import clean
from chatagent.tokens import count_tokens

from .context_bench import load_snapshots, process_pool, run_pool
from .data import DEFAULT_DATA_DIR, RealisticQuestion, load_realistic, sample
from .report import machine, md_table, progress_bar, report_run, rich_table
from .server import PageServer, bench_settings, browser_version, launch_browser
from .stats import median

DEFAULT_BUDGET = 2000
MODEL = "extractive"
# The goals (issue 52), for each wording: coverage and main share of the context, its tokens within
# the budget; no page starved; the offline summary's coverage, length, citations and verbatim quotes.
MIN_COVERAGE = 0.75
MIN_MAIN = 0.90
STARVED_PAGE = 2000  # a page whose rendered text is over this many tokens...
STARVED_CONTEXT = 1000  # ...starves when its context comes out under this many
MIN_SUMMARY_COVERAGE = 0.50
MAX_SUMMARY_WORDS = 250  # median
# The scopes of a request about the page (or some of its parts) as a whole (`RequestScope.whole`): a summary
# answers it. "unmatched" (a question naming nothing on the page) is shown an overview too, but is no such request.
WHOLE_SCOPES = ("whole", "part")
DECISION_PAGES = 6  # of the listed pages, spread over the list: the labelled set is asked over each
LEAD_IN_WORDS = 12  # a line ending in ":" of at most this many words, citing no block, introduces what follows

# Whole-page requests as people type them: (language, request). SUMMARISED: those the offline model answers.
WORDINGS: tuple[tuple[str, str], ...] = (
    ("en", "tldr"),
    ("en", "sum up this article pls"),
    ("en", "what are the main takeaways here"),
    ("en", "what is this page even about"),
    ("fr", "résume moi cet article stp"),
    ("de", "fass den text kurz zusammen"),
    ("es", "de que trata esta pagina"),
    ("es", "cuales son las ideas principales"),
)
SUMMARISED = ("sum up this article pls", "what are the main takeaways here")
# Fact questions naming something a long page of another kind would not hold: a page must not starve on them.
FACTS: tuple[str, ...] = (
    "how long is the warranty on it",
    "is there a student discount",
    "whats the refund policy for opened items",
    "how many calories per serving",
    "what time does the store close on sundays",
)
# The labelled set: requests about the whole page (en, fr, de, es, it, pt, nl)...
WHOLE_REQUESTS: tuple[str, ...] = (
    "can you summarise this for me", "give me the gist", "tl dr pls", "short version please",
    "whats this article about", "key points", "break this down for me", "explain this page like im 5",
    "quick recap of this post", "what should i take away from this", "main ideas in bullet points",
    "give me an overview", "summary pls", "in a nutshell", "what are the highlights", "tldr of the whole thing",
    "résume moi ça", "c'est quoi l'essentiel de cet article", "fais un résumé rapide", "quels sont les points clés",
    "explique moi cette page", "ça parle de quoi",
    "kannst du das zusammenfassen", "worum geht es hier", "gib mir eine kurze übersicht", "was ist das fazit",
    "die wichtigsten punkte bitte", "erklär mir den artikel",
    "hazme un resumen", "de qué trata esto", "resume este artículo porfa", "cuáles son los puntos clave",
    "explícame la página", "dame lo esencial",
    "riassumi questa pagina", "di cosa parla questo articolo", "quali sono i punti principali",
    "resume esse texto pra mim", "do que se trata essa página",
    "vat dit samen", "waar gaat dit over",
)
# ...and specific questions, about one thing a page may or may not say.
SPECIFIC_QUESTIONS: tuple[str, ...] = (
    "who wrote this", "when was this published", "what does it say about the battery",
    "how much does the premium version cost", "is there free shipping", "what are the opening hours",
    "how do i contact support", "what year did it start", "where is the company based",
    "how many people were involved", "which version added dark mode", "whats the population of the city",
    "does it work on linux", "what is the price in euros", "how long does delivery take", "who is the ceo",
    "what are the side effects", "how tall is the tower", "can i cancel anytime", "whats the phone number",
    "which countries are mentioned", "what did the study find about sleep",
    "what does the author think about remote work", "how many comments are there",
    "qui a écrit cet article", "combien ça coûte", "quelle est la date de publication", "où se trouve le siège",
    "wer hat das geschrieben", "wie viel kostet das abo", "wann wurde das veröffentlicht", "gibt es eine garantie",
    "quién escribió esto", "cuánto cuesta el envío", "cuándo se publicó", "dónde está la tienda",
    "chi è l'autore", "quanto costa", "quem escreveu isso", "qual é o preço",
)


class DataError(Exception):
    pass


# ---------------------------------------------------------------- the set


def _coverage_path(data_dir: str | Path) -> Path:
    return Path(data_dir) / "whole-page" / "coverage.py"


@cache
def scorer(data_dir: str) -> ModuleType:
    """The set's own scorer (`whole-page/coverage.py`: `score(context, markdown)`), as its checker runs it."""
    path = _coverage_path(data_dir)
    spec = importlib.util.spec_from_file_location("whole_page_coverage", path)
    if spec is None or spec.loader is None or not path.exists():
        raise DataError(f"No scorer at {path}; pass --data DIR.")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def listed_pages(data_dir: Path) -> list[str]:
    """The set's pages (`coverage.py --list`: main content over 2,000 tokens), by WCXB id."""
    path = _coverage_path(data_dir)
    if not path.exists():
        raise DataError(f"No scorer at {path}; pass --data DIR.")
    done = subprocess.run([sys.executable, str(path), "--list", "--root", str(Path(data_dir) / "wcxb-test")],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise DataError(f"{path} --list failed: {done.stderr.strip()[-500:]}")
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


def main_content(data_dir: Path, page: str) -> str:
    """A page's ground-truth main content as Markdown (or as text, where it has no Markdown)."""
    d = json.loads((Path(data_dir) / "wcxb-test" / "ground-truth" / f"{page}.json").read_text(encoding="utf-8"))
    gt = d.get("ground_truth") or {}
    return gt.get("main_content_markdown") or gt.get("main_content") or ""


# ---------------------------------------------------------------- an answer's lines

_TAB_CITED = re.compile(r"\[Tab \d+[^\]\n]*\]")
_LEAD = re.compile(r"^\s*(?:#{1,6}\s+|[-*+•]\s+|\d{1,3}[.)]\s+)+")  # a heading's marks, a bullet, a number
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_CUT = re.compile(r"\s*(?:…|\.\.\.)\s*")
_WORDS = re.compile(r"(?u)\w+")
_MARKUP = re.compile(r"[*`]+|(?:^|(?<=\s))#{1,6}(?=\s)")  # emphasis, code spans, heading marks: not the page's words
_ITEM = re.compile(r"^\s*(?:[-+•]|\d{1,3}[.)])\s+", re.M)  # and a list item's bullet or number


def strip_citations(text: str) -> str:
    """`text` without its block ids ("[1.4]", "[1.4, 1.5]") and tab citations ("[Tab 1]")."""
    return _TAB_CITED.sub("", CITED.sub("", text))


def _spaced(text: str) -> str:
    return " ".join(text.split())


def _lines(answer: str) -> list[tuple[str, list[str], bool]]:
    """Each line with words: its text, its claims (the words a citation stands for, back to the previous
    citation or the line's start, and any words after the last), and whether it is a lead-in ("…:")."""
    out = []
    for line in answer.splitlines():
        plain = strip_citations(line).strip()
        if not _WORDS.search(plain):
            continue
        lead_in = plain.endswith(":") and len(plain.split()) <= LEAD_IN_WORDS and not CITED.search(line)
        cuts = [0, *(i for m in CITED.finditer(line) for i in m.span()), len(line)]
        claims = [line[a:b] for a, b in zip(cuts[::2], cuts[1::2])]  # what lies between block ids
        out.append((line, [_LEAD.sub("", claims[0]), *claims[1:]], lead_in))
    return out


def all_cited(answer: str) -> bool:
    """Whether every line of `answer` with words cites a block for all of them: no words after its last block id
    (a lead-in line ending in ":" aside). False for an answer with no such line."""
    lines = [(line, lead_in) for line, _, lead_in in _lines(answer)]
    if not any(not lead_in for _, lead_in in lines):
        return False
    for line, lead_in in lines:
        if lead_in:
            continue
        cites = list(CITED.finditer(line))
        if not cites or _WORDS.search(strip_citations(line[cites[-1].end():])):
            return False
    return True


def sentences(answer: str) -> list[str]:
    """The answer's sentences, lead-in lines aside, without citations, bullets and the "…" of a cut quote."""
    out = []
    for _, claims, lead_in in _lines(answer):
        if lead_in:
            continue
        for claim in claims:
            for s in _SENTENCE_END.split(strip_citations(claim)):
                out += [p.strip() for p in _CUT.split(s) if _WORDS.search(p)]
    return out


def _unmarked(text: str) -> str:
    # Each line as a person reads it (`tables.clean`: no Markdown escapes, emphasis, tags or link targets).
    return _spaced("\n".join(map(clean, _MARKUP.sub("", _ITEM.sub("", text)).split("\n"))))


def all_verbatim(answer: str, context_text: str) -> bool:
    """Whether every sentence of `answer` is in `context_text`, whitespace normalised and both without the
    Markdown the context marks emphasis, code, headings and list items with (not the page's words). False for none."""
    said = sentences(answer)
    text = _unmarked(context_text)
    return bool(said) and all(_unmarked(s) in text for s in said)


def words(text: str) -> int:
    return len(_WORDS.findall(strip_citations(_LEAD.sub("", text))))


# ---------------------------------------------------------------- per page (process pool)


def is_overview(tab: TabContext) -> bool:
    """The tab's text is an overview of the page: as fitted, or (a text sent whole) as its scope says."""
    return tab.overview or (not tab.truncated and tab.scope != "search")


def _built(builder: ContextBuilder, snapshot: PageSnapshot, question: str) -> PageContext:
    return asyncio.run(builder.build([], question, snapshots=[snapshot]))


@cache
def _model() -> Any:
    from chatagent.models import load_model

    return load_model(MODEL, bench_settings(model=MODEL))


def offline_answer(ctx: PageContext, question: str) -> str:
    """The `extractive` model's pass-1 answer, called as the agent's pass 1 calls it."""
    model = _model()
    chat = model.chat.bind(context=ctx) if model.provider.reads_context else model.chat
    return str(chat.invoke(build_messages(ctx, question)).text).strip()


def summary_figures(answer: str, tab: TabContext, markdown: str, score: Callable[[str, str], dict[str, float]]
                    ) -> dict[str, Any]:
    escalated = answer.startswith(ESCALATION_MARKER)
    said = "" if escalated else answer
    plain = strip_citations(said)
    return {
        "coverage": score(plain, markdown)["coverage"] if plain.strip() else 0.0,
        "words": words(said), "cited": all_cited(said), "verbatim": all_verbatim(said, tab.text),
        "escalated": escalated, "scope": tab.scope, "overview": is_overview(tab), "tokens": tab.tokens,
        "answer": answer,
    }


def page_figures(
    snapshot: PageSnapshot, markdown: str, budget: int, score: Callable[[str, str], dict[str, float]], *,
    wordings: Sequence[str] = tuple(w for _, w in WORDINGS), facts: Sequence[str] = FACTS,
    summarised: Sequence[str] = SUMMARISED,
) -> dict[str, Any]:
    """Every figure of one page: each wording's context and each fact question's, the reference
    texts, and the offline model's summary for the `summarised` wordings."""
    snapshot = snapshot.model_copy(update={"tab_id": "1"})  # labelled as a conversation labels its one tab
    whole = snapshot.visible_text
    rendered = count_tokens(whole)
    head = fit_text(whole, budget)
    builder = ContextBuilder(budget_per_tab=budget)  # the page is extracted once, as for a conversation's questions

    def scored(text: str, tokens: int) -> dict[str, Any]:
        return {**score(text, markdown), "tokens": tokens}

    def context(question: str) -> dict[str, Any]:
        [tab] = _built(builder, snapshot, question).tabs
        return {**scored(tab.text, tab.tokens), "scope": tab.scope, "overview": is_overview(tab),
                "parts": tab.parts, "parts_shown": tab.parts_shown, "error": tab.error}

    reader = builder.with_budget(max(budget, _model().provider.reads_per_tab or 0))  # as the agent reads for it
    summaries = {}
    for q in summarised:
        ctx = _built(reader, snapshot, q)
        summaries[q] = summary_figures(offline_answer(ctx, q), ctx.tabs[0], markdown, score)
    return {
        "rendered_tokens": rendered,
        "whole": scored(whole, rendered), "head": scored(head.text, head.tokens),
        "wordings": {q: context(q) for q in wordings},
        "facts": {q: {"tokens": (f := context(q))["tokens"], "scope": f["scope"], "overview": f["overview"]}
                  for q in facts},
        "summaries": summaries,
    }


def page_job(page: str, snapshot: PageSnapshot, markdown: str, budget: int, data_dir: str) -> dict[str, Any]:
    """`page_figures` with the set's scorer (runs in a worker process)."""
    return {"id": page, **page_figures(snapshot, markdown, budget, scorer(data_dir).score)}


def scopes(snapshot: PageSnapshot, requests: Sequence[str], budget: int) -> list[str]:
    """The scope the context took for each request over one page (runs in a worker process)."""
    builder = ContextBuilder(budget_per_tab=budget)
    return [_built(builder, snapshot, q).tabs[0].scope for q in requests]


# ---------------------------------------------------------------- the run


async def bench_whole_page(
    data_dir: Path, pages: Sequence[str], budget: int, browser: PlaywrightBrowser, site: PageServer, pool: Executor,
    progress: Progress, realistic: Sequence[RealisticQuestion] = (),
) -> dict[str, Any]:
    """Every figure over `pages` (WCXB ids of the set), and the realistic questions given."""
    scorer(str(data_dir))  # a missing scorer fails now, not in a worker
    urls = {p: site.file_url(data_dir / "wcxb-test" / "html" / f"{p}.html.gz") for p in pages}
    urls.update({q.page: site.file_url(data_dir / q.page) for q in realistic})
    snaps = await load_snapshots(browser, urls, progress, "load whole-page pages")
    rows = await run_pool(pool, page_job, [(p, snaps[p], main_content(data_dir, p), budget, str(data_dir))
                                           for p in pages], progress, "whole-page, pages")
    decision_pages = sample(list(pages), DECISION_PAGES)
    labelled = [*WHOLE_REQUESTS, *SPECIFIC_QUESTIONS]
    decided = await run_pool(pool, scopes, [(snaps[p], labelled, budget) for p in decision_pages], progress,
                             "whole-page, labelled requests")
    by_page: dict[str, list[RealisticQuestion]] = defaultdict(list)
    for q in realistic:
        by_page[q.page].append(q)
    asked = await run_pool(pool, scopes, [(snaps[p], [q.question for q in qs], budget) for p, qs in by_page.items()],
                           progress, "whole-page, realistic questions")
    realistic_rows = [{"id": q.id, "scope": s} for qs, ss in zip(by_page.values(), asked) for q, s in zip(qs, ss)]
    decision_rows = [{"page": p, "request": q, "whole": i < len(WHOLE_REQUESTS), "scope": s}
                     for p, ss in zip(decision_pages, decided) for i, (q, s) in enumerate(zip(labelled, ss))]
    return summarise(rows, decision_rows, realistic_rows, budget)


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def _share(xs: Sequence[bool]) -> float:
    return sum(map(bool, xs)) / len(xs) if xs else 0.0


def _starved(rows: Sequence[dict[str, Any]], tokens: Callable[[dict[str, Any]], int]) -> list[str]:
    return [r["id"] for r in rows if r["rendered_tokens"] > STARVED_PAGE and tokens(r) < STARVED_CONTEXT]


def summarise(rows: Sequence[dict[str, Any]], decision_rows: Sequence[dict[str, Any]],
              realistic_rows: Sequence[dict[str, Any]], budget: int) -> dict[str, Any]:
    def context_figures(key: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        cs = [key(r) for r in rows]
        return {"pages": len(cs), "coverage": _mean([c["coverage"] for c in cs]), "main": _mean([c["main"] for c in cs]),
                "tokens_median": median([c["tokens"] for c in cs], default=0.0),
                "tokens_max": max((c["tokens"] for c in cs), default=0)}

    wordings = {}
    for lang, q in WORDINGS:
        if not rows or q not in rows[0]["wordings"]:
            continue
        cs = [r["wordings"][q] for r in rows]
        wordings[q] = {
            "lang": lang, **context_figures(lambda r, q=q: r["wordings"][q]),
            "overview": _share([c["overview"] for c in cs]), "scopes": dict(Counter(c["scope"] for c in cs)),
            "starved": _starved(rows, lambda r, q=q: r["wordings"][q]["tokens"]),
            "errors": sum(c.get("error") is not None for c in cs),
        }
    facts = {q: {"pages": len(rows), "tokens_median": median([r["facts"][q]["tokens"] for r in rows], default=0.0),
                 "overview": _share([r["facts"][q]["overview"] for r in rows]),
                 "starved": _starved(rows, lambda r, q=q: r["facts"][q]["tokens"])}
             for q in FACTS if rows and q in rows[0]["facts"]}
    summaries = {}
    for q in SUMMARISED:
        ss = [r["summaries"][q] for r in rows if q in r["summaries"]]
        summaries[q] = {"pages": len(ss), "coverage": _mean([s["coverage"] for s in ss]),
                        "words_median": median([s["words"] for s in ss], default=0.0),
                        "cited": _share([s["cited"] for s in ss]), "verbatim": _share([s["verbatim"] for s in ss]),
                        "escalated": _share([s["escalated"] for s in ss]),
                        "overview": _share([s["overview"] for s in ss])}
    whole = [d for d in decision_rows if d["whole"]]
    specific = [d for d in decision_rows if not d["whole"]]

    def n(rs: Sequence[dict[str, Any]], *kinds: str) -> int:
        return sum(r["scope"] in kinds for r in rs)

    decision = {
        "pages": len({d["page"] for d in decision_rows}),
        "whole_requests": len(whole), "whole_as_search": n(whole, "search"), "whole_as_unmatched": n(whole, "unmatched"),
        "specific_questions": len(specific), "specific_as_whole": n(specific, *WHOLE_SCOPES),
        "specific_unmatched": n(specific, "unmatched"),
        "realistic_questions": len(realistic_rows), "realistic_as_whole": n(realistic_rows, *WHOLE_SCOPES),
        "realistic_unmatched": n(realistic_rows, "unmatched"),
        # Which requests the decision got wrong, on how many of the pages.
        "missed": dict(Counter(d["request"] for d in whole if d["scope"] not in WHOLE_SCOPES).most_common()),
        "taken_as_whole": dict(Counter(d["request"] for d in specific if d["scope"] in WHOLE_SCOPES).most_common()),
        "realistic_taken_as_whole": [r["id"] for r in realistic_rows if r["scope"] in WHOLE_SCOPES],
    }
    return {
        "budget": budget, "pages": len(rows),
        "whole": context_figures(lambda r: r["whole"]), "head": context_figures(lambda r: r["head"]),
        "wordings": wordings, "facts": facts, "summaries": summaries, "decision": decision,
        "rows": list(rows), "decision_rows": list(decision_rows), "realistic_rows": list(realistic_rows),
    }


def goals(r: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The issue's goals on this set, as `suite` reports goals."""
    ws, budget = r["wordings"], r["budget"]

    def lowest(key: str) -> tuple[str, float]:
        return min(((q, w[key]) for q, w in ws.items()), key=lambda kv: kv[1], default=("", 0.0))

    (cov_q, cov), (main_q, main) = lowest("coverage"), lowest("main")
    tokens = max((w["tokens_max"] for w in ws.values()), default=0)
    starved = {q: len(v["starved"]) for q, v in [*ws.items(), *r["facts"].items()]}
    n_starved = sum(starved.values())
    worst_starved = max(starved.items(), key=lambda kv: kv[1], default=("", 0))
    out = {
        "whole_page_coverage": {
            "what": "whole-page requests: parts of the page the context stands for, every wording (mean)",
            "target": f"≥ {MIN_COVERAGE:.2f}", "measured": f"{cov:.3f} (lowest: {cov_q!r})",
            "met": bool(ws) and cov >= MIN_COVERAGE, "value": cov},
        "whole_page_main": {
            "what": "whole-page requests: share of the context that is main content, every wording (mean)",
            "target": f"≥ {MIN_MAIN:.2f}", "measured": f"{main:.3f} (lowest: {main_q!r})",
            "met": bool(ws) and main >= MIN_MAIN, "value": main},
        "whole_page_tokens": {
            "what": "whole-page requests: tokens of the context (most on any page)", "target": f"≤ {budget:,}",
            "measured": f"{tokens:,}", "met": bool(ws) and tokens <= budget, "value": tokens},
        "whole_page_starved": {
            "what": f"long pages (over {STARVED_PAGE:,} tokens) given under {STARVED_CONTEXT:,} tokens, "
                    "every wording and fact question", "target": "0",
            "measured": f"{n_starved}" + (f" (most: {worst_starved[0]!r}, {worst_starved[1]})" if n_starved else ""),
            "met": n_starved == 0, "value": n_starved},
    }
    ss = [s for s in r["summaries"].values() if s["pages"]]
    if ss:
        cov_s = min(s["coverage"] for s in ss)
        words_s = max(s["words_median"] for s in ss)
        cited = min(s["cited"] for s in ss)
        verbatim = min(s["verbatim"] for s in ss)
        out.update({
            "whole_page_summary_coverage": {
                "what": "offline summary: parts of the page it stands for (mean)",
                "target": f"≥ {MIN_SUMMARY_COVERAGE:.2f}",
                "measured": f"{cov_s:.3f}", "met": cov_s >= MIN_SUMMARY_COVERAGE, "value": cov_s},
            "whole_page_summary_words": {
                "what": "offline summary: words (median)", "target": f"≤ {MAX_SUMMARY_WORDS}",
                "measured": f"{words_s:,.0f}", "met": words_s <= MAX_SUMMARY_WORDS, "value": words_s},
            "whole_page_summary_cited": {
                "what": "offline summary: share whose every line cites a block", "target": "1.00",
                "measured": f"{cited:.3f}", "met": cited >= 1.0, "value": cited},
            "whole_page_summary_verbatim": {
                "what": "offline summary: share whose every sentence is the page's own words", "target": "1.00",
                "measured": f"{verbatim:.3f}", "met": verbatim >= 1.0, "value": verbatim},
        })
    return out


def headline(r: dict[str, Any]) -> dict[str, Any]:
    """The figures `chatagent bench` keeps in its summary."""
    d = r["decision"]
    return {
        "pages": r["pages"], "budget": r["budget"],
        "wordings": {q: {k: w[k] for k in ("coverage", "main", "tokens_median", "overview")}
                     | {"starved": len(w["starved"])}
                     for q, w in r["wordings"].items()},
        **{k: {"coverage": r[k]["coverage"], "main": r[k]["main"], "tokens_median": r[k]["tokens_median"]}
           for k in ("whole", "head")},
        "facts_starved": {q: len(f["starved"]) for q, f in r["facts"].items()},
        "summaries": {q: dict(s) for q, s in r["summaries"].items()},
        "decision": {k: v for k, v in d.items() if isinstance(v, int)},
    }


# ---------------------------------------------------------------- report


CONTEXT_HEAD = ["context", "lang", "pages", "coverage", "main", "tokens p50", "overview", "scopes", "starved"]
FACT_HEAD = ["fact question", "pages", "tokens p50", "overview", "starved"]
SUMMARY_HEAD = ["offline summary of", "pages", "coverage", "words p50", "all cited", "all verbatim", "escalated",
                "context an overview"]
DECISION_HEAD = ["requests", "asked", "taken for the other kind", "unmatched (an overview, no summary)"]


def _scopes(counts: dict[str, int]) -> str:
    return " ".join(f"{k} {counts[k]}" for k in ("whole", "part", "unmatched", "search") if counts.get(k))


def context_rows(r: dict[str, Any]) -> list[list[str]]:
    out = [[repr(q), w["lang"], str(w["pages"]), f"{w['coverage']:.3f}", f"{w['main']:.3f}",
            f"{w['tokens_median']:,.0f}", f"{w['overview']:.3f}", _scopes(w["scopes"]), str(len(w["starved"]))]
           for q, w in r["wordings"].items()]
    for key, name in (("whole", "whole rendered text"), ("head", f"its first {r['budget']:,} tokens")):
        c = r[key]
        out.append([name, "", str(c["pages"]), f"{c['coverage']:.3f}", f"{c['main']:.3f}", f"{c['tokens_median']:,.0f}",
                    "", "", ""])
    return out


def fact_rows(r: dict[str, Any]) -> list[list[str]]:
    return [[repr(q), str(f["pages"]), f"{f['tokens_median']:,.0f}", f"{f['overview']:.3f}", str(len(f["starved"]))]
            for q, f in r["facts"].items()]


def summary_rows(r: dict[str, Any]) -> list[list[str]]:
    return [[repr(q), str(s["pages"]), f"{s['coverage']:.3f}", f"{s['words_median']:,.0f}", f"{s['cited']:.3f}",
             f"{s['verbatim']:.3f}", f"{s['escalated']:.3f}", f"{s['overview']:.3f}"] for q, s in r["summaries"].items()]


def decision_table_rows(r: dict[str, Any]) -> list[list[str]]:
    d = r["decision"]
    on = f"over {d['pages']} pages"
    return [
        [f"whole-page requests (ours, {len(WHOLE_REQUESTS)}), {on}", str(d["whole_requests"]),
         f"{d['whole_as_search']} as a search, {d['whole_as_unmatched']} unmatched", ""],
        [f"specific questions (ours, {len(SPECIFIC_QUESTIONS)}), {on}", str(d["specific_questions"]),
         f"{d['specific_as_whole']} as whole-page", str(d["specific_unmatched"])],
        ["realistic side-panel questions, their own pages", str(d["realistic_questions"]),
         f"{d['realistic_as_whole']} as whole-page", str(d["realistic_unmatched"])],
    ]


def print_report(r: dict[str, Any], console: Console) -> None:
    console.print(rich_table(f"Whole-page requests over {r['pages']} long pages: the context at {r['budget']:,} "
                         "tokens/tab against the page's parts", CONTEXT_HEAD, context_rows(r)))
    console.print(rich_table(f"Fact questions no long page answers: a page starves under {STARVED_CONTEXT:,} tokens",
                         FACT_HEAD, fact_rows(r)))
    console.print(rich_table("The offline model's answer to a whole-page request", SUMMARY_HEAD, summary_rows(r)))
    console.print(rich_table("The decision's errors both ways (TabContext.scope)", DECISION_HEAD, decision_table_rows(r)))
    for g in goals(r).values():
        console.print(f"{'✓' if g['met'] else '✗'} {g['what']}: {g['measured']} (goal {g['target']})")


def markdown_section(r: dict[str, Any]) -> str:
    d = r["decision"]
    return "\n".join([
        f"Whole-page requests over {r['pages']} WCXB pages whose main content is over 2,000 tokens "
        f"(`python -m benchmarks.whole_page`), scored with the set's own scorer: *coverage*, the share of the "
        "page's parts a sentence of which is in the text; *main*, the share of the text that is main content. "
        f"chatagent's context at {r['budget']:,} tokens a tab for each wording, the share of pages it gave an "
        f"overview of, and the pages over {STARVED_PAGE:,} tokens it gave under {STARVED_CONTEXT:,} (starved):", "",
        md_table(CONTEXT_HEAD, context_rows(r)), "",
        "Fact questions naming something a long page would not hold:", "",
        md_table(FACT_HEAD, fact_rows(r)), "",
        "The offline model's pass-1 answer (`extractive`, on the context the agent gives it), citations stripped "
        "for coverage:", "",
        md_table(SUMMARY_HEAD, summary_rows(r)), "",
        "The decision's errors both ways:", "",
        md_table(DECISION_HEAD, decision_table_rows(r)), "",
        *([f"Whole-page requests taken for a search: {', '.join(f'{q!r} ({n})' for q, n in d['missed'].items())}.", ""]
          if d["missed"] else []),
    ])


def _checkout() -> dict[str, Any]:
    """The commit measured, and whether chatagent/ had changes not committed (other work in the checkout)."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
        return done.stdout if done.returncode == 0 else ""

    return {"commit": git("rev-parse", "--short", "HEAD").strip(),
            "uncommitted": [line[3:] for line in git("status", "--porcelain", "--", "chatagent").splitlines() if line]}


async def run(data_dir: Path, limit: int | None, budget: int, console: Console) -> dict[str, Any]:
    pages = sample(listed_pages(data_dir), limit)
    realistic: list[RealisticQuestion] = []
    if (data_dir / "realistic" / "questions.jsonl").is_file():
        realistic, _ = load_realistic(data_dir, limit)
    checkout = _checkout()  # as the run starts: its workers import chatagent then
    started = time.perf_counter()
    with process_pool() as pool, progress_bar(console) as progress, PageServer() as site:
        async with launch_browser() as browser:
            version = browser_version(browser)
            result = await bench_whole_page(data_dir, pages, budget, browser, site, pool, progress, realistic)
    result.update(browser=version, machine=machine(), wall_s=time.perf_counter() - started,
                  config={"budget": budget, "limit": limit, "data_dir": str(data_dir), **checkout})
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.whole_page", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="evaluation data dir (default: ../shared/data)")
    ap.add_argument("--limit", type=int, default=None, help="pages and realistic questions (evenly spread sample; "
                    "default: all)")
    ap.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help="tokens per tab (default: 2000)")
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = ap.parse_args(argv)
    err = Console(stderr=True)
    return report_run(run(args.data, args.limit, args.budget, err), print_report, err, args.out,
                      failures=(DataError, FileNotFoundError),
                      console=Console(highlight=False, width=None if sys.stdout.isatty() else 200))


if __name__ == "__main__":
    sys.exit(main())
