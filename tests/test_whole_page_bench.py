"""`benchmarks.whole_page` without its data: its per-page figures on a page of our own, reading an
answer's lines (citations, verbatim sentences), and its goals on made-up figures."""

from __future__ import annotations

from typing import Any

from benchmarks.whole_page import (
    FACTS, SUMMARISED, WORDINGS, all_cited, all_verbatim, goals, page_figures, sentences, strip_citations, summarise,
)
from chatagent.browser.base import PageSnapshot

SCOPES = ("whole", "part", "unmatched", "search")
TOPICS = ("harbour", "lighthouse", "ferries", "fishermen", "storms", "museum")


def _page() -> PageSnapshot:
    """A long article of six sections, each about a topic no request names."""
    sections = []
    for i, topic in enumerate(TOPICS):
        body = " ".join(f"Sentence {n} of this section tells the reader one more thing about the {topic} of the town."
                        for n in range(1, 25))
        more = f"Another paragraph on the {topic}, quietly, for {i} years."
        sections.append(f"<h2>The {topic}</h2><p>{body}</p><p>{more}</p>")
    html = ("<!doctype html><html><head><title>A small coastal town</title></head><body><nav>Home · News</nav>"
            f"<article><h1>A small coastal town</h1>{''.join(sections)}</article></body></html>")
    text = "A small coastal town\n" + "\n".join(s.replace("<h2>", "").replace("</h2>", "\n").replace("<p>", "")
                                                 .replace("</p>", "\n") for s in sections)
    return PageSnapshot(tab_id="7", url="http://127.0.0.1/town.html", title="A small coastal town", html=html,
                        visible_text=text)


def _score(context: str, markdown: str) -> dict[str, float]:
    """A stand-in for the set's scorer: the share of the topics the context names."""
    low = context.lower()
    return {"coverage": sum(t in low for t in TOPICS) / len(TOPICS), "main": 1.0 if context.strip() else 0.0}


def test_page_figures_give_every_wording_fact_and_summary_on_a_page_of_our_own() -> None:
    budget = 300
    f = page_figures(_page(), "\n".join(f"## The {t}" for t in TOPICS), budget, _score)
    assert f["rendered_tokens"] > 4 * budget
    assert f["whole"]["coverage"] == 1.0 and f["whole"]["tokens"] == f["rendered_tokens"]
    assert f["head"]["tokens"] <= budget < f["whole"]["tokens"]
    assert set(f["wordings"]) == {q for _, q in WORDINGS} and set(f["facts"]) == set(FACTS)
    for c in f["wordings"].values():
        assert 0 <= c["coverage"] <= 1 and 0 <= c["main"] <= 1 and 0 < c["tokens"] <= budget
        assert c["scope"] in SCOPES and isinstance(c["overview"], bool)
        assert c["error"] is None and c["parts_shown"] <= c["parts"]
    # A request none of whose words is on the page gets an overview of all of it, not its start.
    tldr = f["wordings"]["tldr"]
    assert tldr["scope"] == "whole" and tldr["overview"] and tldr["coverage"] > f["head"]["coverage"]
    assert all(v["tokens"] > 0 and v["scope"] in SCOPES for v in f["facts"].values())
    assert set(f["summaries"]) == set(SUMMARISED)
    for s in f["summaries"].values():
        assert {"coverage", "words", "cited", "verbatim", "escalated", "answer", "scope", "overview"} <= set(s)
        assert 0 <= s["coverage"] <= 1 and s["words"] >= 0 and isinstance(s["answer"], str) and s["answer"]
        if s["escalated"]:  # the model asked for the browser: nothing of the page said
            assert s["words"] == 0 and not s["cited"] and not s["verbatim"]


def test_an_answers_lines_are_cited_and_verbatim_only_when_every_line_is() -> None:
    context = ("The harbour opened in spring. Boats came from far away.\n\n"
               "- Ferries leave every hour from the north pier\n\nThe museum keeps the old lamp and its long story")
    good = ("Here is the gist:\n- The harbour opened in spring. Boats came from far away. [1.2]\n"
            "- Ferries leave every hour from the north pier [1.4, 1.5]\n- The museum keeps the old lamp… [1.7]")
    assert all_cited(good) and all_verbatim(good, context)
    assert sentences(good) == ["The harbour opened in spring.", "Boats came from far away.",
                               "Ferries leave every hour from the north pier", "The museum keeps the old lamp"]
    assert strip_citations("Boats [1.2] came [Tab 1] [2.3; 2.4]").split() == ["Boats", "came"]
    # Words after a line's last block id, or a line with none, are not cited.
    assert not all_cited(good + "\nAnd a remark of the model's own.")
    assert not all_cited("[1.2] The harbour opened in spring.")
    # The context's Markdown (emphasis, headings) is not the page's words: a quote without it is verbatim.
    assert all_verbatim("The **harbour** opened in spring. [1.2]", "## The harbour\n\nThe *harbour* opened in spring.")
    assert all_verbatim("Boats come in: ferries, then barges. [1.3]", "Boats come in:\n- ferries, then barges.")
    # A sentence the page does not have, even cited, is not verbatim.
    assert not all_verbatim("The harbour opened in winter. [1.2]", context)
    # Nothing said: neither.
    assert not all_cited("") and not all_verbatim("Here is the gist:", context)


def _row(page: str, coverage: float = 0.9, main: float = 0.95, tokens: int = 1500, rendered: int = 5000,
         words: int = 150) -> dict[str, Any]:
    ctx = {"coverage": coverage, "main": main, "tokens": tokens, "scope": "whole", "overview": True, "parts": 8,
           "parts_shown": 8, "error": None}
    ref = {"coverage": 0.5, "main": 0.7, "tokens": tokens}
    return {"id": page, "rendered_tokens": rendered, "whole": ref, "head": ref,
            "wordings": {q: dict(ctx) for _, q in WORDINGS},
            "facts": {q: {"tokens": tokens, "scope": "whole", "overview": True} for q in FACTS},
            "summaries": {q: {"coverage": 0.6, "words": words, "cited": True, "verbatim": True, "escalated": False,
                              "overview": True} for q in SUMMARISED}}


def _goals(rows: list[dict[str, Any]], budget: int = 2000) -> dict[str, dict[str, Any]]:
    decided = [{"page": "a", "request": "x", "whole": True, "scope": "search"},
               {"page": "a", "request": "w", "whole": True, "scope": "unmatched"},
               {"page": "a", "request": "v", "whole": True, "scope": "part"},
               {"page": "a", "request": "y", "whole": False, "scope": "whole"},
               {"page": "a", "request": "u", "whole": False, "scope": "unmatched"},
               {"page": "a", "request": "z", "whole": False, "scope": "search"}]
    r = summarise(rows, decided, [{"id": "q1", "scope": "search"}, {"id": "q2", "scope": "unmatched"}], budget)
    d = r["decision"]
    # "whole" and "part" are whole-page requests; "unmatched" is shown an overview but is not one.
    assert (d["whole_as_search"], d["whole_as_unmatched"], d["specific_as_whole"], d["specific_unmatched"]) == (1, 1, 1, 1)
    assert (d["realistic_as_whole"], d["realistic_unmatched"], d["missed"]) == (0, 1, {"x": 1, "w": 1})
    return goals(r)


def test_goals_hold_only_when_every_wording_and_page_meets_them() -> None:
    met = _goals([_row("a"), _row("b")])
    assert all(g["met"] for g in met.values()), met
    assert {"whole_page_coverage", "whole_page_main", "whole_page_tokens", "whole_page_starved",
            "whole_page_summary_coverage", "whole_page_summary_words", "whole_page_summary_cited",
            "whole_page_summary_verbatim"} == set(met)

    low = _row("b")
    low["wordings"]["tldr"]["coverage"] = 0.2  # one wording on one page: its mean, 0.55, is below the goal
    g = _goals([_row("a"), low])["whole_page_coverage"]
    assert not g["met"] and g["value"] == 0.55 and "'tldr'" in g["measured"]

    # A long page given under 1,000 tokens starves; a short page given as little does not.
    starved = _goals([_row("a", tokens=600), _row("b", tokens=600, rendered=1800)])["whole_page_starved"]
    assert not starved["met"] and starved["value"] == len(WORDINGS) + len(FACTS)

    over = _goals([_row("a", tokens=2100, words=400)])
    assert not over["whole_page_tokens"]["met"] and not over["whole_page_summary_words"]["met"]
    uncited = _row("a")
    uncited["summaries"][SUMMARISED[0]]["cited"] = False
    assert not _goals([uncited, _row("b")])["whole_page_summary_cited"]["met"]
