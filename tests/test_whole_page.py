"""Requests about the whole page: told apart from questions, given an overview, summarised offline.

The pages are written here: a long guide with sections of their own, in English, French and German.
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest
from langchain_core.messages import HumanMessage

from chatagent.browser.static import StaticTab
from chatagent.budget import fit_text
from chatagent.context import ContextBuilder
from chatagent.markers import GAP
from chatagent.models.extractive import ExtractiveChatModel
from chatagent.offline.summary import summarize_tab
from chatagent.prompts import build_messages

from conftest import ROOT
from warm_start import command

TOPICS = ["harbour walls", "the lighthouse keepers", "winter storms", "the fishing fleet", "the ferry crossing",
          "the salt works", "the lifeboat station", "the old customs house", "the net lofts", "the regatta"]


def guide(title: str = "The Kelderwick coast guide", sections: list[str] = TOPICS, per: int = 6) -> str:
    """A long guide: a section per topic, each opening with a sentence that says what it is about."""
    out = [f"# {title}", "This guide walks through the history of the Kelderwick coast, one place at a time."]
    for n, topic in enumerate(sections):
        out.append(f"## {topic.capitalize()}")
        out.append(f"This section is about {topic} and why they mattered to the town for three centuries.")
        for k in range(per):
            out.append(" ".join(f"Record {n}.{k}.{j} notes that {topic} changed slowly over the years {1700 + 10 * j} "
                                f"to {1710 + 10 * j}, as the parish books tell." for j in range(4)))
    return "\n\n".join(out)


def html(text: str) -> str:
    """The guide as a page: headings and paragraphs, a menu around them."""
    body = []
    for para in text.split("\n\n"):
        m = re.match(r"(#+) (.*)", para)
        body.append(f"<h{len(m.group(1))}>{m.group(2)}</h{len(m.group(1))}>" if m else f"<p>{para}</p>")
    title = text.split("\n\n")[0].lstrip("# ")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head><body>"
            f"<nav><a href='/'>Home</a> <a href='/a'>About</a> <a href='/s'>Shop</a></nav><main><article>"
            f"{''.join(body)}</article></main><footer><a href='/p'>Privacy</a> · Share this</footer></body></html>")


WHOLE = ["summarize this page", "tldr", "sum up this article pls", "what are the main points",
         "what's this page about", "give me the gist", "résume cette page stp", "de quoi parle cet article",
         "quels sont les points principaux", "fasse den Artikel kurz zusammen", "worum geht es hier",
         "was sind die wichtigsten punkte", "resume esta página", "de qué trata este artículo"]
SEARCH = ["what does it say about the lifeboat station", "when did the salt works change",
          "wann änderte sich die Zollstation", "who kept the lighthouse"]


@pytest.mark.parametrize("request_text", WHOLE)
def test_a_request_about_the_whole_page_gets_an_overview_of_all_of_it(request_text: str) -> None:
    text = guide()
    f = fit_text(text, 1500, request_text)
    assert f.scope == "whole" and f.overview and f.tokens <= 1500, (request_text, f.scope)
    # The page's words only: what it is, how much was left out and its title are said beside it (the tab's header).
    assert not f.text.startswith("# The Kelderwick") and "[Overview" not in f.text and f.parts == len(TOPICS) + 1
    # Stretches from all over the page, in page order, each from a section's opening: the first, the last ones.
    shown = [t for t in TOPICS if f"about {t}" in f.text]
    assert len(shown) >= 5 and shown[0] == TOPICS[0] and shown[-1] in TOPICS[-2:] and GAP in f.text
    assert [f.text.index(f"about {t}") for t in shown] == sorted(f.text.index(f"about {t}") for t in shown)


@pytest.mark.parametrize("question", SEARCH[:2])
def test_a_question_that_names_something_on_the_page_stays_a_search(question: str) -> None:
    f = fit_text(guide(), 1200, question)
    assert f.scope == "search" and not f.overview and f.selected
    topic = "the lifeboat station" if "lifeboat" in question else "the salt works"
    assert f"about {topic}" in f.text


def test_a_request_for_the_whole_of_one_section_is_an_overview_of_that_section() -> None:
    f = fit_text(guide(per=12), 800, "summarize the winter storms part")
    assert f.scope == "part" and f.overview and f.tokens <= 800
    assert "about winter storms" in f.text and "Record 2.10" in f.text
    assert not any(f"about {t}" in f.text for t in TOPICS if t != "winter storms")


def test_a_request_for_a_short_section_of_a_long_page_gets_it_and_what_is_around_it() -> None:
    text = guide(per=8).replace("## Winter storms", "## Upcoming events\n\nThe next open day is in May, at the harbour "
                                "walls, with guided walks every hour.\n\n## Winter storms")
    f = fit_text(text, 1500, "summarize the upcoming events")
    assert f.scope == "part" and not f.overview and f.tokens >= 750
    assert "The next open day is in May" in f.text


def test_a_question_asking_for_a_fact_in_function_words_is_not_taken_for_a_summary_request() -> None:
    assert fit_text(guide(), 1200, "how much is it?").scope == "unmatched"
    assert fit_text(guide(), 1200, "wie viel kostet das?").scope == "unmatched"


def test_a_french_page_asked_in_french_and_a_german_page_in_german() -> None:
    fr = guide("Guide de la côte", [f"le sujet numéro {i}" for i in range(8)])
    fr = fr.replace("This section is about", "Cette partie parle de").replace("Record", "Le registre")
    assert fit_text(fr, 900, "fais-moi un résumé de la page").scope == "whole"
    de = guide("Küstenführer", [f"der Leuchtturm {i}" for i in range(8)])
    de = de.replace("This section is about", "Dieser Abschnitt handelt von")
    assert fit_text(de, 900, "kannst du den text zusammenfassen").scope == "whole"
    assert fit_text(de, 900, "was steht über den Leuchtturm 3").scope == "search"


def test_a_page_that_fits_its_budget_is_sent_whole_and_still_known_as_asked_about_as_a_whole() -> None:
    short = guide(sections=TOPICS[:2], per=1)
    f = fit_text(short, 2000, "tl;dr")
    assert f.text == short and f.scope == "whole" and not f.overview


@pytest.mark.asyncio(loop_scope="session")
async def test_each_of_several_tabs_gets_its_own_overview() -> None:
    a, b = guide(), guide("The Ostmere lake guide", [t.replace("harbour", "lake") for t in TOPICS[::-1]])
    tabs = [StaticTab("1", "http://127.0.0.1/a", html(a)), StaticTab("2", "http://127.0.0.1/b", html(b))]
    ctx = await ContextBuilder(budget_per_tab=900).build(tabs, "summarize these pages")
    assert [t.overview for t in ctx.tabs] == [True, True] and all(t.tokens <= 900 for t in ctx.tabs)
    assert all(t.parts_shown >= 5 and t.parts == len(TOPICS) + 1 for t in ctx.tabs)
    for tab, topics in zip(ctx.tabs, (TOPICS, [t.replace("harbour", "lake") for t in TOPICS[::-1]])):
        # Each its own page, from its first section to one of its last two.
        assert f"about {topics[0]}" in tab.text and any(f"about {t}" in tab.text for t in topics[-2:])
    # The model is told which tabs are overviews, of how much of the page, in each tab's header.
    system, prompt, _ = (str(m.content) for m in build_messages(ctx, "summarize these pages"))
    assert "overview attribute" in system
    for t in ctx.tabs:
        left = f"{t.original_tokens - t.tokens:,} tokens left out"
        assert f'title="{t.title}" overview="the whole page, {t.parts_shown} of {t.parts} parts: {left}">' in prompt


async def _offline_answer(text: str, question: str, budget: int = 1500) -> tuple[str, str]:
    ctx = await ContextBuilder(budget_per_tab=budget).build([StaticTab("1", "http://127.0.0.1/g", html(text))],
                                                            question)
    reply = ExtractiveChatModel().invoke([HumanMessage(question)], context=ctx)
    return str(reply.content), ctx.tabs[0].text


@pytest.mark.asyncio(loop_scope="session")
async def test_the_offline_summary_quotes_each_part_in_order_cited_and_short() -> None:
    answer, context = await _offline_answer(guide(), "summarize this page")
    lines = [line for line in answer.splitlines() if line]
    assert all(re.search(r"\[1\.\d+\]$", line) for line in lines), answer
    plain = [re.sub(r"\s*(\[1\.\d+\])+$", "", line) for line in lines]
    sentences = [s.rstrip(" …") for p in plain for s in re.split(r"(?<=\.) (?=[A-Z])", p)]
    assert all(s in context for s in sentences), "every sentence is the page's own words"
    assert len(answer.split()) <= 250 and len(lines) >= 5
    said = [t for t in TOPICS if f"about {t}" in answer]
    assert said == [t for t in TOPICS if t in said] and len(said) >= 4, "parts in page order"


@pytest.mark.asyncio(loop_scope="session")
async def test_the_offline_summary_of_the_main_points_is_a_list_in_french_too() -> None:
    answer, _ = await _offline_answer(guide(), "quels sont les points clés de cet article")
    assert answer.startswith("- ") and all(line.startswith("- ") for line in answer.splitlines())
    prose, _ = await _offline_answer(guide(), "summarize this page")
    assert "\n\n" in prose and "- " not in prose, "a paragraph a part, which Markdown keeps apart"


def test_a_part_left_out_of_the_summary_is_left_out_for_its_length() -> None:
    long_parts = guide(sections=TOPICS, per=3)
    text = long_parts.replace("## The regatta", "## The regatta\n\nThe regatta is a short note only here, no more to add.")
    lines = summarize_tab(text, words=60)
    assert len(" ".join(lines).split()) <= 80
    assert not any("regatta is a short note" in line for line in lines), "the shortest part goes first"


def _ask(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
    return subprocess.run(command("ask", *args), cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.e2e
@pytest.mark.parametrize("request_text", ["résume-moi cette page", "fass mir die Seite zusammen"])
def test_chatagent_ask_summarises_a_long_page_offline_in_french_and_german(request_text: str, tmp_path) -> None:
    page = tmp_path / "guide.html"
    page.write_text(html(guide(per=10)), encoding="utf-8")
    proc = _ask(str(page), "-q", request_text, "--model", "extractive")
    assert proc.returncode == 0, proc.stderr
    answer = proc.stdout.split("\n[Tab 1]")[0]
    assert "about harbour walls" in answer and "about the regatta" in answer and "[1." in answer
    assert len(answer.split()) <= 250
