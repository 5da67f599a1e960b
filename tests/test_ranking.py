"""Retrieval (`chatagent.ranking`): one analyser for terms and stop words, one
`Ranker` interface that question-aware selection and the extractive model both
rank with, so another method can take BM25's place in either."""

from __future__ import annotations

from collections.abc import Sequence

import bm25s
import bm25s.stopwords
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from chatagent import budget
from chatagent.browser.base import ScrollResult
from chatagent.budget import TextFitter, fit_text
from chatagent.context import PageContext, TabContext
from chatagent.offline import passages
from chatagent.models.extractive import ExtractiveChatModel
from chatagent.prompts import build_messages, message_text
from chatagent.ranking import (
    CONTENT_WORDS,
    ENGLISH,
    QUESTION_WORDS,
    STOPWORDS_EN,
    Analyser,
    BM25Ranker,
    Meaning,
    Query,
    Ranker,
    english_stemmer,
    fold,
)
from chatagent.tools import TOOL_SCHEMAS


class Overlap(Ranker):
    """A second ranking method: how many of the query's distinct terms a passage has."""

    built: list[Overlap] = []

    def __init__(self, passages: Sequence[str], analyser: Analyser = ENGLISH) -> None:
        super().__init__(passages, analyser)
        self.queries: list[Query] = []
        Overlap.built.append(self)

    def scores(self, query: Query) -> list[float]:
        self.queries.append(query)
        wanted = set(query.terms)
        return [float(len(wanted & set(terms))) for terms in self.terms]


@pytest.fixture(autouse=True)
def _forget_overlaps() -> None:
    Overlap.built.clear()


# --- the analyser ---------------------------------------------------------------

TEXTS = [
    "How many goals did Škoda's striker score in the 2019–20 season?",
    "|Pos|Athlete|Club|Time|\n|1|Ana Ribeiro|Porto AC|31:02|",
    "The ferry now serves 11 piers between the old town and the harbour; it's running.",
    "a I x 1 22 naïve café ÉCOLE Straße ﬁne",
    "",
]


@pytest.mark.parametrize("text", TEXTS)
def test_terms_are_what_bm25s_made_of_them_before(text: str) -> None:
    # The analyser replaced bm25s.tokenize in both callers: the same terms, so the same rankings.
    def bm25s_terms(text: str, stopwords: object) -> list[str]:
        return bm25s.tokenize([text], stopwords=stopwords, stemmer=english_stemmer(), return_ids=False,
                              show_progress=False)[0]

    assert ENGLISH.terms(text) == bm25s_terms(fold(text), "en")
    assert CONTENT_WORDS.terms(text) == bm25s_terms(text, sorted(STOPWORDS_EN | QUESTION_WORDS))
    assert ENGLISH.analyse([text, text.upper()]) == [ENGLISH.terms(text), ENGLISH.terms(text.upper())]


def test_bm25s_english_stop_words_are_the_short_list() -> None:
    assert STOPWORDS_EN == frozenset(bm25s.stopwords.STOPWORDS_EN)
    assert STOPWORDS_EN < CONTENT_WORDS.stopwords and QUESTION_WORDS < CONTENT_WORDS.stopwords


def test_both_callers_analyse_with_the_shared_analysers() -> None:
    assert budget.ANALYSER is ENGLISH
    assert passages.ANALYSER is CONTENT_WORDS


def test_a_stop_word_is_dropped_the_same_way_by_both_callers() -> None:
    for word in ("the", "The", "THE", "with"):
        assert budget.ANALYSER.terms(f"{word} ferry") == passages.terms(f"{word} ferry") == ["ferri"]
    # A question's function words are a topic for a page ("Most valuable player"),
    # so only the extractive model drops them.
    assert budget.ANALYSER.terms("which most") == ["which", "most"]
    assert passages.terms("which most") == []


def test_accents_are_folded_for_pages_and_kept_for_the_extractive_model() -> None:
    assert ENGLISH.terms("Škoda") == ENGLISH.terms("Skoda") == ["skoda"]
    assert CONTENT_WORDS.terms("Škoda") == ["škoda"]


def test_stems_are_one_for_one_with_the_words_stop_words_included() -> None:
    assert CONTENT_WORDS.stems(["Six", "tram", "lines", "the"]) == ["six", "tram", "line", "the"]


# --- the ranker interface -----------------------------------------------------------


def test_a_query_is_analysed_once_and_scored_against_several_indexes() -> None:
    query = ENGLISH.query("Which river ferries serve the harbour?")
    assert query.terms == ("which", "river", "ferri", "serv", "harbour")
    piers = BM25Ranker(["The ferry serves 11 piers.", "The harbour has a lighthouse."])
    towns = BM25Ranker(["Port Elm", "A river town", "Lindvik"])
    assert all(s > 0 for s in piers.scores(query))
    assert [s > 0 for s in towns.scores(query)] == [False, True, False]
    assert query.without({"river", "harbour"}).terms == ("which", "ferri", "serv")


def test_bm25_prefers_the_passage_with_the_rarer_terms() -> None:
    ranker = BM25Ranker(["ferry ferry town", "ferry piers", "ferry"])
    scores = ranker.scores(ENGLISH.query("ferry piers"))
    assert scores.index(max(scores)) == 1
    assert len(scores) == len(ranker) == 3


def test_a_query_with_no_known_terms_scores_zero_everywhere() -> None:
    ranker = BM25Ranker(["The ferry serves 11 piers.", "The harbour has a lighthouse."])
    assert ranker.scores(ENGLISH.query("tram lines")) == [0.0, 0.0]
    assert ranker.scores(ENGLISH.query("the")) == [0.0, 0.0]  # only a stop word
    assert ranker.scores(ENGLISH.query("")) == [0.0, 0.0]
    assert BM25Ranker([]).scores(ENGLISH.query("ferry")) == []


def test_an_index_of_stop_words_only_works() -> None:
    ranker = BM25Ranker(["the", "and of", ""])
    assert ranker.vocabulary == frozenset() and ranker.terms == [[], [], []]
    assert ranker.scores(ENGLISH.query("the ferry")) == [0.0, 0.0, 0.0]
    # With the extractive model's list, a passage of function words is one too.
    questions = BM25Ranker(["how many of them", "ferry"], CONTENT_WORDS)
    assert questions.terms[0] == [] and questions.scores(CONTENT_WORDS.query("how many ferries"))[0] == 0.0


def test_selection_ranks_with_the_ranker_it_is_given() -> None:
    filler = "\n\n".join(f"Paragraph {i} tells of the weather, the markets and the roads." for i in range(120))
    text = f"# Port Elm\n\n{filler}\n\nThe lighthouse on the north pier was built in 1821.\n\n{filler}"
    fitted = fit_text(text, 300, "When was the lighthouse built?", ranker=Overlap)
    assert fitted.selected and "built in 1821" in fitted.text
    assert Overlap.built and all(r.analyser is budget.ANALYSER for r in Overlap.built)
    asked = {q.terms for r in Overlap.built for q in r.queries}
    assert asked == {ENGLISH.query("When was the lighthouse built?").terms}
    # The page cache builds its indexes with it too.
    Overlap.built.clear()
    cached = TextFitter(ranker=Overlap).fit(text, 300, "When was the lighthouse built?")
    assert cached == fitted and Overlap.built


def test_selection_without_matching_terms_shows_the_page_from_its_start_to_its_end() -> None:
    text = "# Port Elm\n\n" + "\n\n".join(f"Paragraph {i} tells of the weather." for i in range(200))
    fitted = fit_text(text, 200, "Who designed the lighthouse?", ranker=Overlap)
    assert fitted.truncated and not fitted.selected and fitted.overview
    # Its title is the tab's header's (the prompt names it there); its first paragraph and its last stretch are here.
    assert fitted.text.startswith("Paragraph 0 ") and "Paragraph 169 " in fitted.text


# --- the semantic signal beside BM25 ---------------------------------------------------

SPECS = [
    "The frame weighs 700 grams without its straps.",
    "Delivery to most addresses takes three working days.",
    "Returns are free within a month of purchase.",
    "The fabric comes in green, grey and black.",
]


@pytest.mark.parametrize("question, answer", [
    ("how heavy is it", 0), ("how fast does it arrive", 1), ("what does it cost to send it back", 2),
    ("which colours can i get", 3),
])
def test_a_question_in_other_words_than_the_page_s_is_nearest_the_passage_it_means(question: str, answer: int
                                                                                    ) -> None:
    assert BM25Ranker(SPECS).scores(ENGLISH.query(question)) == [0.0] * 4  # not one word in common
    scores = Meaning(SPECS).scores(question)
    assert scores.index(max(scores)) == answer and min(scores) >= 0.0
    assert Meaning([]).scores(question) == [] and Meaning(SPECS).scores(" ") == [0.0] * 4


def test_a_passage_s_vector_is_the_mean_of_its_tokens_however_much_text_is_embedded() -> None:
    import numpy as np

    from chatagent.ranking import embeddings

    vectors = embeddings.word_vectors()
    long = "the frame weighs 700 grams and the fabric comes in green " * 1700  # 20,000 tokens
    # More texts than are tokenized at once, and more tokens than are gathered at once.
    texts = ["delivery takes three days", ""] * 150 + [long, "returns are free", long]
    got = vectors.embed(texts)
    for text, vector in zip(texts[:2] + texts[-3:], [*got[:2], *got[-3:]]):
        ids = vectors._tokenizer.encode(text, add_special_tokens=False).ids
        mean = vectors.matrix[ids].astype(np.float64).sum(axis=0) if ids else np.zeros(256)
        assert np.abs(vector - mean / (np.linalg.norm(mean) or 1.0)).max() < 1e-4
    assert np.abs(got[:2] - got[298:300]).max() == 0.0


TOPICS = ["paint", "history", "saddle colour", "maker's shop", "first owner", "brochure"]


def bicycle_page(fact: str) -> str:
    def notes(start: int) -> str:
        return "\n\n".join(f"Note {i} on the bicycle: its {TOPICS[i % 6]} is described in the club's records."
                           for i in range(start, start + 150))

    return f"# The touring bicycle\n\n{notes(0)}\n\n{fact}\n\n{notes(150)}"


def test_a_small_budget_keeps_the_fact_a_question_asks_for_in_other_words() -> None:
    text = bicycle_page("The bicycle's frame weighs 9.8 kilograms.")
    question = "how heavy is this bicycle"
    assert "9.8 kilograms" not in fit_text(text, 300, question, meaning=None).text  # every note says "bicycle"
    fitted = fit_text(text, 300, question)
    assert fitted.selected and fitted.tokens <= 300 and "9.8 kilograms" in fitted.text
    assert TextFitter().fit(text, 300, question) == fitted


def test_a_question_a_table_s_words_answer_gets_the_table_not_the_prose_that_means_the_same() -> None:
    # "Which model is the heaviest" names the table ("model") and needs its rows; notes on heavy
    # bicycles mean much the same, but the question's words find the rows, and by them it is ranked.
    heavy = ["A heavy frame is hard to carry up the stairs.", "Heavier bicycles feel sluggish on long climbs.",
             "Riders who commute by train prefer a light frame.", "Steel frames weigh more than aluminium ones."]

    def notes(start: int) -> str:
        return "\n\n".join(f"Note {i} on each model: {heavy[i % 4]} Its {TOPICS[i % 6]} is in the club's records."
                           for i in range(start, start + 60))

    rows = "\n".join(f"|Model T{i}|{8 + (i * 7 % 50) / 10:.1f} kg|{TOPICS[i % 6]}|" for i in range(80))
    text = f"# The touring bicycles\n\n{notes(0)}\n\n|Model|Weight|Note|\n|---|---|---|\n{rows}\n\n{notes(60)}"
    fitted = fit_text(text, 800, "which model is the heaviest")
    assert fitted.text.count("|Model T") >= 40 and fitted.text.count("Note ") <= 5


def test_the_biggest_pages_are_ranked_by_their_words_alone() -> None:
    # Embedding every chunk of a page at extraction's bound would take seconds: past LONG_TEXT_CHARS, words only.
    embedded: list[int] = []

    def recording(passages: Sequence[str]) -> Meaning:
        embedded.append(len(passages))
        return Meaning(passages)

    fact = "The bicycle's frame weighs 9.8 kilograms."
    assert "9.8 kilograms" in fit_text(bicycle_page(fact), 300, "how heavy is this bicycle", meaning=recording).text
    assert embedded and embedded[0] > 50  # its prose chunks
    embedded.clear()
    huge = bicycle_page(fact) + "\n\n" + "\n\n".join(f"Note {i} on the bicycle's paint." for i in range(20_000))
    assert len(huge) > budget.LONG_TEXT_CHARS
    fitted = fit_text(huge, 300, "how heavy is this bicycle", meaning=recording)
    assert fitted.tokens <= 300 and embedded == []


def test_the_word_vectors_are_read_from_the_installed_wheel_with_nothing_configured_or_fetched() -> None:
    import logging
    import subprocess
    import sys

    # A fresh process: no network (a proxy that refuses), and the root logger as it was.
    code = (
        "import logging, sys\n"
        "from chatagent.ranking.embeddings import word_vectors\n"
        "v = word_vectors().embed(['the frame weighs 700 grams', ''])\n"
        "print(v.shape, round(float((v[0] ** 2).sum()), 3), float(abs(v[1]).sum()),"
        " logging.getLogger().handlers == [], 'wordllama' in sys.modules)\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
           "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["(2,", "256)", "1.0", "0.0", "True", "False"]
    assert logging.getLogger("wordllama").handlers == []


def pass1(model: ExtractiveChatModel, text: str, question: str) -> str:
    tab = TabContext(tab_id="1", url="http://127.0.0.1/page.html", title="Riverside ferry", text=text)
    context = PageContext(tabs=[tab], budget_per_tab=2000, question=question)
    return str(model.invoke(build_messages(context, question), context=context).content)


FERRY = "# The river ferry\n\nThe ferry now serves 11 piers between the old town and the harbour.\n\nTickets cost $3."


def test_the_extractive_model_ranks_with_the_ranker_it_is_given() -> None:
    answer = pass1(ExtractiveChatModel(ranker=Overlap), FERRY, "How many piers does the ferry serve?")
    assert answer.startswith("The ferry now serves 11 piers")
    [index] = Overlap.built
    assert index.analyser is passages.ANALYSER
    # Scored on the question's terms beyond the page's title ("ferry"), and its intent.
    assert [q.terms for q in index.queries] == [("pier", "serv", "xxnumberxx")]
    assert pass1(ExtractiveChatModel(), FERRY, "How many piers does the ferry serve?") == answer


# --- the extractive model reads the scroll result, not its wording ---------------------

BREAD = "# Rye bread\n\nHeat the oven to 220 °C and dust a tray with flour."


def after_scroll(result: ToolMessage) -> AIMessage:
    """The extractive model's next step once tab 1 was re-read and scrolled, with `result`."""
    tab = TabContext(tab_id="1", url="http://127.0.0.1/bread.html", title="Rye bread", text=BREAD)
    context = PageContext(tabs=[tab], budget_per_tab=2000, question="Who designed the lighthouse?")
    messages: list[BaseMessage] = build_messages(context, "Who designed the lighthouse?", tools=True)
    messages += [
        AIMessage("", tool_calls=[{"name": "refresh_browser_state_tool", "args": {"tab_id": "1"}, "id": "c1",
                                   "type": "tool_call"}]),
        ToolMessage("Tab 1 re-read: unchanged.", tool_call_id="c1", name="refresh_browser_state_tool"),
        AIMessage("", tool_calls=[{"name": "scroll_tool", "args": {"tab_id": "1", "direction": "down"}, "id": "c2",
                                   "type": "tool_call"}]),
        result,
    ]
    reply = ExtractiveChatModel().bind_tools(list(TOOL_SCHEMAS)).invoke(messages, context=context)
    assert isinstance(reply, AIMessage)
    return reply


def scrolled(text: str, *, at_bottom: bool, status: str = "success") -> ToolMessage:
    where = ScrollResult(text="Bake for 40 minutes.", scroll_y=800, page_height=1600, viewport_height=800,
                         at_bottom=at_bottom)
    return ToolMessage(text, tool_call_id="c2", name="scroll_tool", status=status, artifact=where)


def test_a_scroll_that_reached_the_bottom_is_not_repeated() -> None:
    reply = after_scroll(scrolled("Tab 1 scrolled down.\nBake for 40 minutes.", at_bottom=True))
    assert not reply.tool_calls and "found nothing" in message_text(reply)


def test_the_words_of_a_scroll_result_do_not_say_where_the_tab_is() -> None:
    # A page can print "(bottom of page)"; only the structured result counts.
    reply = after_scroll(scrolled("Tab 1 scrolled down. (bottom of page)\nBake for 40 minutes.", at_bottom=False))
    assert [c["name"] for c in reply.tool_calls] == ["scroll_tool"]


def test_the_tool_s_report_of_a_scroll_is_never_quoted_as_the_page() -> None:
    """A tab with no text (a PDF the panel could not read): the scroll's report names
    the question's words nowhere on the page, and must not come back as the answer."""
    report = "Tab 1 scrolled down. [viewport at 0px of 800px (bottom of page)] (no text visible) lighthouse designed"
    empty = ScrollResult(text="", scroll_y=0, page_height=800, viewport_height=800, at_bottom=True)
    reply = after_scroll(ToolMessage(report, tool_call_id="c2", name="scroll_tool", artifact=empty))
    assert not reply.tool_calls and "found nothing" in message_text(reply), message_text(reply)
    assert "scrolled down" not in message_text(reply) and "viewport" not in message_text(reply)


def test_a_failed_scroll_is_not_repeated() -> None:
    reply = after_scroll(scrolled("Tab 1 is already at the bottom of the page.", at_bottom=False, status="error"))
    assert not reply.tool_calls
    no_artifact = ToolMessage("Scrolling failed.", tool_call_id="c2", name="scroll_tool", status="error")
    assert not after_scroll(no_artifact).tool_calls


def test_message_text_reads_a_screenshot_message_s_words() -> None:
    shot = HumanMessage(content=[{"type": "text", "text": "Screenshot of tab 1:"},
                                 {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}},
                                 {"type": "text", "text": "(end)"}])
    assert message_text(shot) == "Screenshot of tab 1: (end)"
    assert message_text(AIMessage("plain")) == "plain"
