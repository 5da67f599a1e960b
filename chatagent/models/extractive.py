"""`extractive`: the offline default model. Retrieval, not generation.

It quotes the smallest sufficient evidence from the page context, citing its
tabs, and never writes a value the page does not hold: the rows of a table the
question names (`table_quote`, shown as "column: value" pairs), a passage
ranked against the question (BM25 unless given another `ranking.Ranker`; the
defining sentence for "what is X?"), or, comparing tabs, each tab's value of
the kind asked however it is worded. What it cannot do (count by meaning,
compute, read images) it says in one line. When nothing matches, or the
question is about how something looks, it asks for the browser (the
escalation marker), and with tools bound it uses them the way a careful
person would: re-read the page, scroll for more text (until a scroll's result
says the tab is at the bottom), take a screenshot for visual questions (and
then say plainly that it cannot read images). Deterministic, instant and
free: the right default with no API key.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any, NamedTuple

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from ..browser.base import ScrollResult
from ..pdf import PAGE_MARK
from ..prompts import ESCALATION_MARKER, is_fenced, message_text, parse_tabs, unfence
from ..ranking import CONTENT_WORDS, BM25Ranker, Query, RankerFactory
from ..ranking.base import fold
from ..rows import has_rows, row_cells
from ..tables import clean, lower_header, spans_columns, tables
from ..tokens import count_tokens
from . import table_quote

# A passage must contain at least this share of the question's content words.
MIN_COVERAGE = 0.5
MAX_PASSAGES_SINGLE = 2
# A passage must cover this much more of the question than the table rows to be quoted instead.
PROSE_MARGIN = 0.6
# Visual intent is decided by what is asked about, not by single words ("drawn",
# "color commentator", a "chart" that is a table): how something looks, what a
# picture shows, or a chart or graph on a page whose text has no table.
_LOOKS = re.compile(r"\b(look(s|ed)? like|what colou?rs?\b|(which|what) colou?r|colou?r of\b)", re.IGNORECASE)
_PICTURE = re.compile(
    r"\b(image|images|picture|pictures|photo|photos|photograph|screenshot|logo|icon|illustration|diagram|figure|"
    r"drawing|painting|map)\b",
    re.IGNORECASE,
)
# What makes a picture the thing asked about: something shown in it, seen on it.
_SHOWN = re.compile(
    r"\b(show|shows|shown|showing|depict|depicts|depicted|pictured|see|seen|visible|appear|appears|drawn|written|"
    r"printed|displayed|in|on)\b",
    re.IGNORECASE,
)
_PLOTTED = re.compile(r"\b(chart|charts|graph|graphs|plot|plotted|canvas)\b", re.IGNORECASE)
_VISUAL_WORDS = re.compile(
    r"\b(image|images|picture|photo|photograph|chart|graph|diagram|screenshot|canvas|logo|icon|illustration|figure)\b",
    re.IGNORECASE,
)


def is_visual(question: str, texts: Sequence[str]) -> bool:
    """Whether answering needs to see the page rather than read it."""
    if _LOOKS.search(question):
        return True
    if _PICTURE.search(question) and _SHOWN.search(question):
        return True
    return bool(_PLOTTED.search(question)) and not any(has_rows(t) for t in texts)


# "Which one is lighter?": "one" stands for what is compared, it is not a topic.
_WHICH_ONE = re.compile(r"\b(which|each|every|any|the other|this|that) ones?\b|\b(each|every)\b", re.I)
_LABEL = re.compile(r"^(?:[-*+]\s+)?[^:]{1,40}:$")  # a list item naming what the next one states
_ITEM = re.compile(r"^[-*+]\s+")
_HEADING_MARK = re.compile(r"^\s*(?:[-*+]\s+)?#+\s*")  # "## Price", "- ### Trailhead Low" (a card's name)
_MARKER_LINE = re.compile(r"^\[… .* left out …\]$|^\(Note: .*\)$")
# Questions and passages alike: a question's function words ("how many", "which")
# are gone too, so coverage counts only what it is about.
ANALYSER = CONTENT_WORDS
# Spelled-out cardinals: "Six tram lines" counts tram lines as well as "6 tram lines" does.
_NUMBER_WORD = re.compile(
    r"^(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
    r"seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|"
    r"million|billion|dozen)$",
    re.IGNORECASE,
)
_WORD_OR_NUMBER = re.compile(r"\d[\d.,:]*|[^\W\d_]+")
# A counted noun may stand up to this many words after its number ("19 low-floor stops").
COUNT_REACH = 3
_HOW_MANY = re.compile(r"\bhow many\s+(?P<what>[^?.,;]*)", re.IGNORECASE)
# Words that say how to compare values, not what the values are about: "which
# town was founded first?" is about founding; no passage says "first".
_COMPARING_WORDS = (
    "first last earlier earliest later latest bigger biggest larger largest smaller smallest higher highest lower "
    "lowest longer longest shorter shortest older oldest newer newest younger youngest better best worse worst "
    "greater greatest fewer fewest cheaper cheapest dearer pricier lighter lightest heavier heaviest"
).split()
_COMPARING = re.compile(r"\b(" + "|".join(_COMPARING_WORDS) + r")\b", re.IGNORECASE)


@dataclass
class _Passage:
    tab_id: str
    text: str
    order: int
    header: str = ""  # a table row's caption and header rows: what the table is, what its columns are
    section: str = ""  # the heading the passage is under: what it is about
    code: bool = False  # a line of a fenced code block

    def quote(self) -> str:
        """As a person reads it: a row as "column: value" pairs under its caption, no Markdown escapes."""
        if self.text.startswith("|"):
            found = tables(f"{self.header}\n{self.text}" if self.header else self.text)
            if found:
                t = found[0]
                return f"{t.caption}: {t.render(len(t.rows) - 1)}" if t.caption else t.render(len(t.rows) - 1)
            # A row read as a header (another table's, below this one): its cells, never its pipes.
            return "; ".join(c for c in map(clean, row_cells(self.text)) if c)
        return clean(_HEADING_MARK.sub("", PAGE_MARK.sub("", self.text)))

    def cite(self) -> str:
        """[Tab N], with the page for a passage of a PDF: [Tab N, p. 3]."""
        page = PAGE_MARK.match(self.text)
        return f"[Tab {self.tab_id}, p. {page.group(1)}]" if page else f"[Tab {self.tab_id}]"


def _terms(text: str) -> list[str]:
    return ANALYSER.terms(text)


# "this article", "the site": the page the question is asked on, not a topic.
_THIS_PAGE = re.compile(r"\b(this|the|these)\s+(article|site|website|document|post|story|blog|report|tab)s?\b", re.I)


def _question_terms(question: str) -> set[str]:
    question = _THIS_PAGE.sub(r"\1", _WHICH_ONE.sub(r"\1", table_quote.HOW_MEASURE.sub("how", question)))
    return set(_terms(_VISUAL_WORDS.sub(" ", question))) or set(_terms(question))


def _passages(tab_id: str, body: str) -> list[_Passage]:
    out: list[_Passage] = []
    header = ""
    captions: list[str] = []  # one-cell rows above the current table's first row
    rows = 0  # rows of two or more cells in the current table
    last = -2  # the line of the last passage of text
    previous = -2  # the line of the last table row kept as a passage
    section = ""
    code = False
    for i, raw in enumerate(body.splitlines()):
        line = raw.strip()
        if line.startswith("```"):
            code = not code
            continue
        if code:
            if line:
                out.append(_Passage(tab_id, line, i, section=section, code=True))
            continue
        if not line or _MARKER_LINE.match(line) or set(line) <= set("|-: "):
            continue
        if not line.startswith("|"):
            header, captions, rows = "", [], 0
            if out and _LABEL.match(out[-1].text) and i == last + 1 and not out[-1].header:
                # "- Battery life:" above "- 14 hours 20 minutes": one statement, as a list of terms writes it.
                out[-1] = _Passage(tab_id, f"{out[-1].text} {_ITEM.sub('', line)}", i, section=section)
            else:
                out.append(_Passage(tab_id, line, i, section=section))
            if line.startswith("#"):
                section = line.lstrip("#").strip()
            last = i
            continue
        cells = [c.strip() for c in row_cells(line)]
        if len(cells) < 2:  # a caption or a footer spans the table: no columns to name
            if not rows:
                captions.append(line)
            out.append(_Passage(tab_id, line, i))
            continue
        rows += 1
        names = not any(re.search(r"\d", c) for c in cells)
        if rows == 1:
            header = "\n".join(captions)
            # A first row without figures names the columns; one with figures is
            # data (an infobox has no header), and losing data would cost more
            # than quoting a header as a row.
            if names:
                header = "\n".join([*captions, line])
                continue
        elif names:  # below the first row, a row of names may still be one of a header
            row = tuple(cells)
            upper = tuple(c.strip() for c in row_cells(header.rsplit("\n", 1)[-1])) if header else ()
            first = out[-1] if rows == 2 and out and out[-1].order == previous else None
            above = tuple(c.strip() for c in row_cells(first.text)) if first is not None else ()
            if rows == 2 and upper and lower_header(upper, row):
                # Its second row, as `tables` reads one: "Apps | Goals" under "Total | Total".
                header = f"{header}\n{line}"
                continue
            if above and lower_header(above, row) and spans_columns(above, row):
                out.pop()  # "1975–1979 | 1975–1979" over "Obverse | Reverse": both rows name columns
                header = "\n".join([*captions, first.text, line])
                continue
            if rows > 2 and upper and row[0] == upper[0]:
                # The header again, or the next table's run on ("Outcome | No. | Date" under
                # "Outcome | Year | Championship" rows): it names columns, it answers nothing.
                header = "\n".join([*captions, line])
                continue
        out.append(_Passage(tab_id, line, i, header))
        previous = i
    return out


# A year, or a month beside a day or a year ("3 March", "Mar 2025"): not "may" or "mark" alone.
_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t|tember)?|"
          r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_HAS_DATE = re.compile(
    rf"\b(1[5-9]\d\d|20\d\d)\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH}(?!\w)|\b{_MONTH}\s+\d{{1,2}}\b", re.I)


def _asks(words: str) -> re.Pattern[str]:
    """What a question asking for a kind of value says: any of `words` (a regex alternation)."""
    return re.compile(rf"\b({words})\b", re.I)


def _heading_named(names: str) -> re.Pattern[str]:
    """A heading line, with or without its "#", that is one of `names` (a regex alternation)."""
    return re.compile(rf"^(?:#+\s*)?({names})\s*:?\s*$", re.I)


_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[a-z]{2,}", re.I)
_PHONE = re.compile(r"(?<!\d)(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)\s?)?\d{2,4}[\s.-]\d{3,4}[\s.-]\d{3,4}(?!\d)")
_BYTES = re.compile(r"\d\s?(kb|mb|gb|tb|kilobytes?|megabytes?|gigabytes?|terabytes?)\b", re.I)
# Question intents a lexical match misses: "how much" is answered by "$1,349".
# A kind of value: its term, what a question asking for it says, what a passage stating one holds.
_Kind = tuple[str, re.Pattern[str], re.Pattern[str]]
_INTENTS: tuple[_Kind, ...] = (
    (
        "xxmoneyxx",
        # "How much is it?" asks a price; "how much sugar" a quantity of what it names;
        # "how much does it weigh?" a weight.
        _asks(r"cost|costs|price|prices|priced|"
              r"how much(?=\s+(?:is|was|are|were|does|do|did|will|would|should|can|could|for|to|money)\b|\s*[?.]|\s*$)"
              r"(?![^?.]*\bweigh)|"
              r"pay|fee|fees|charge|expensive|cheap|cheaper|cheapest|pricier|"
              r"revenue|revenues|income|profit|profits|earnings|salary|salaries|budget"),
        re.compile(r"[$€£¥]\s?\d|\d\s?(usd|eur|gbp|dollars?|euros?)\b", re.I),
    ),
    (
        "xxdatexx",
        _asks(r"when|what year|which year|date|founded|born|died|opened|built|published|released|updated|"
              r"posted|older|oldest|newer|newest|younger|youngest|earliest"),
        _HAS_DATE,
    ),
    (
        "xxnumberxx",
        _asks(r"how many|number of|how long|how far|how tall|how big|how old|population|count"),
        re.compile(r"\d"),
    ),
    (
        "xxdurationxx",
        _asks(r"how long|duration|runtime|battery life|lifespan|lasts|lasted|(?:does|did|do|will|would|it|they)\s+last|longer|"
              r"longest|shorter|shortest"),
        re.compile(r"(\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a few|several))\s*"
                   r"(hours?|hrs?|minutes?|mins?|seconds?|secs?|days?|weeks?|months?|years?)\b", re.I),
    ),
    (
        "xxlengthxx",
        # "How long is the bridge?" may ask a length; "how long do I bake it?" asks a time.
        _asks(r"how long(?=\s+(?:is|are|was|were)\b)|how far|length|distance|longer|longest|shorter|shortest"),
        re.compile(r"\d\s?-?(km|kilometres?|kilometers?|mi|miles?|m|metres?|meters?|ft|feet|foot|yards?|cm)\b", re.I),
    ),
    (
        "xxweightxx",
        _asks(r"weigh|weighs|weight|heavy|heavier|heaviest|light|lighter|lightest"),
        re.compile(r"\d\s*(kg|kilograms?|g|grams?|pounds?|lbs?|ounces?|oz|tonnes?|tons?)\b", re.I),
    ),
    (
        # "Which town is bigger?", "more people": how many live there.
        "xxpopulationxx",
        _asks(r"population|populous|inhabitants|residents|people live|bigger|biggest|larger|largest|smaller|"
              r"smallest|more people|fewer people"),
        re.compile(r"\b(population|inhabitants|residents)\b[^.\n]{0,40}\d|\d[\d,.]*\s*(million\s+)?"
                   r"(inhabitants|residents|people)\b", re.I),
    ),
    (
        "xxrainxx",
        _asks(r"rain|rainy|rainier|rainfall|wet|wetter|wettest|dry|drier|driest|precipitation"),
        re.compile(r"\d\s?(mm|millimetres?|millimeters?)\b", re.I),
    ),
    # "More RAM?": "Memory: 32 GB", "16 GB of memory"; storage is sized alike, and asked apart.
    ("xxmemoryxx", _asks(r"ram|memory"), _BYTES),
    ("xxstoragexx", _asks(r"storage|ssd|hdd|disk|drive space"), _BYTES),
    (
        "xxtemperaturexx",
        _asks(r"temperatures?|how hot|how cold|how warm|degrees"),
        re.compile(r"\d\s?(°|º|℃|℉|degrees?\b)", re.I),
    ),
    (
        # "Who wrote this?" is answered by a byline: "By Maren Oyelaran, Transport Correspondent".
        "xxauthorxx",
        _asks(r"who wrote|who write|who writes|who is the author|author|authors|writer|writers|written by|byline"),
        # A name after "By": two or more capitalised words ("By Maren Oyelaran, …"), not "By using
        # generics, …" nor a filter's label ("By Role").
        re.compile(r"^(?i:by|written by|words by|authors?:)\s+[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*){1,3}"
                   r"(?:\s*[,·|–—-]|\s*$)"),
    ),
    (
        # "How do I make it?", "What are the steps?": the section a page gives its steps under
        # ("Method", "Instructions", "Installation"), whatever the question's verb.
        "xxstepsxx",
        _asks(r"steps|instructions|directions|procedure|how (?:do|can|should|would) (?:i|you|we|one) \w+|"
              r"how to \w+"),
        _heading_named(r"method|steps|instructions|directions|preparation|procedure|installation|installing|setup|"
                       r"set-up|getting started|usage|how to\b.{0,60}"),
    ),
    (
        # "What are the opening hours?": times of day ("1 pm - 5:30 pm", "Mon–Fri 9:00–17:00").
        "xxhoursxx",
        _asks(r"opening hours|open hours|opening times?|business hours|office hours|hours of operation|"
              r"closing times?|what time|what hours|when (?:is|are|does|do) [\w' ]{1,40} (?:open|close)"),
        re.compile(r"\b\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)(?!\w)|"
                   r"\b\d{1,2}[:.]\d{2}\s*[-–]\s*\d{1,2}[:.]\d{2}\b", re.I),
    ),
    # "How do I contact you?": an email address or a phone number; "the email address": the one.
    ("xxcontactxx", _asks(r"contact|get in touch|reach (?:you|them|us)"),
     re.compile(f"{_EMAIL.pattern}|{_PHONE.pattern}", re.I)),
    ("xxemailxx", _asks(r"e-?mail(?: address)?"), _EMAIL),
    ("xxphonexx", _asks(r"(?:tele)?phone(?: number)?|call (?:you|them|us)"), _PHONE),
    (
        # "What is there to see?": a travel page's section of sights.
        "xxsightsxx",
        _asks(r"see|visit|visiting|sights|sightseeing|attractions|things to do|what to do"),
        _heading_named(r"sights|sightseeing|attractions|things to (?:see|do)|what to (?:see|do)|landmarks"),
    ),
    (
        # A results table names its winner only by rank: "|1|104|Henrik Solvang|…|".
        "xxfirstxx",
        _asks(r"won|win|wins|winner|winners|winning|victor|champion|first place|came first|finished first"),
        re.compile(r"^\|\s*(1|1st|1\.|#1|first)\s*\|", re.I),
    ),
)


# Comparing tabs, "first" and "earlier" ask for dates ("Which documentary was produced
# first?"), and "higher" for heights; within one page they say how to order rows.
_COMPARED_KINDS = (
    *_INTENTS,
    ("xxdatexx", _asks(r"first|earlier|before"), _HAS_DATE),
    (
        "xxheightxx",
        _asks(r"high|higher|highest|tall|taller|tallest|height|elevation"),
        re.compile(r"\d\s?(m|metres?|meters?|ft|feet|km)\b", re.I),
    ),
)
_NAME_WORD = re.compile(r"\w+")
# A question across tabs, beyond comparing words: "What does each laptop cost?"
_ACROSS = re.compile(
    r"\b(each|both|every|all|compare|compared|versus|vs|difference|differ|which one|or|more|less|fewer)\b", re.I)
_TITLE_NOTE = re.compile(r"\s*\([^)]*\)\s*$")  # "The Crown (mountain)": the note is not the name


# "What is this page about?", "Summarize the article", "tl;dr": asked of the page itself,
# with no topic of their own. `_GIST_WORDS` are the words such a question may use.
_GIST = re.compile(
    r"\b(about|summar(y|ies|i[sz]e[sd]?)|sum up|overview|gist|tl;?dr|main (point|idea|topic)s?|key points?|"
    r"explain|topics?|covers?|says?|describe|for)\b|^\s*what(\s+i|')s\s+(this|it)\s*\??\s*$",
    re.I,
)
_GIST_WORDS = (
    "about summary summaries summarize summarise summarized summarised sum up overview gist tl dr tldr main point "
    "points idea ideas key topic topics explain cover covers say says describe article articles site website "
    "document post tab tabs"
)
# How a page begins, for a gist: its first paragraph that is prose, not a line of
# figures or a byline, cut at sentences.
LEAD_WORDS = 15
GIST_MAX_WORDS = 60
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"“(]?[A-Z0-9])")
GIST_LIMIT = f"This is how the page begins; summarizing all of it {table_quote.NEEDS_MODEL}."
# "Compare the two laptops": asked about no kind of value and matching no passage, each tab's beginning.
_COMPARE_WHOLE = re.compile(r"\b(compare|comparison|differences?|differ|versus|vs)\b", re.I)
COMPARE_LIMIT = f"This is how each page begins; comparing them point by point {table_quote.NEEDS_MODEL}."


def _asks_gist(question: str) -> bool:
    """Whether the question asks what a page is about, with no topic of its own."""
    if not _GIST.search(question) or _intent_terms(question) or _HOW_MANY.search(question):
        return False
    return not _question_terms(question) - set(_terms(_GIST_WORDS))


def _is_prose(p: _Passage) -> bool:
    return not (p.code or p.text.startswith("|") or _HEADING_MARK.match(p.text) or _LABEL.match(p.text))


def _lead(passages: list[_Passage]) -> str | None:
    """A page's opening paragraph, up to two sentences: the first of at least `LEAD_WORDS`
    words (a line broken mid-sentence, as a PDF's are, goes on into the next), else its
    first line that is not a list's item."""
    prose = [i for i, p in enumerate(passages) if _is_prose(p)]
    if not prose:
        return None
    long = [i for i in prose if len(passages[i].text.split()) >= LEAD_WORDS]
    # A paragraph over a list's item (a page opening with a list of what it covers).
    start = next((i for i in long if not _ITEM.match(passages[i].text)),
                 next(iter(long), next((i for i in prose if not _ITEM.match(passages[i].text)), prose[0])))
    text = passages[start].quote()
    for p in passages[start + 1 :]:
        if re.search(r"[.!?]\W*$", text) or len(text.split()) >= GIST_MAX_WORDS or not _is_prose(p):
            break
        text = f"{text} {p.quote()}"
    words = " ".join(_SENTENCE_END.split(text)[:2]).split()
    return " ".join(words[:GIST_MAX_WORDS]) + (" …" if len(words) > GIST_MAX_WORDS else "")


def _gist(passages: dict[str, list[_Passage]], turn: _Turn, limit: str = GIST_LIMIT) -> str | None:
    """What each tab is, by its title and how it begins, and the one-line limit."""
    leads = {tab_id: lead for tab_id, ps in passages.items() if (lead := _lead(ps))}
    if not leads:
        return None
    if len(leads) == 1:
        tab_id, lead = next(iter(leads.items()))
        first = passages[tab_id][0]
        # The page's own title line: the prompt's copy of the title has its quotes changed.
        title = first.quote() if first.text.startswith("# ") else clean(turn.titles().get(tab_id, ""))
        body = f"{title}: {lead} [Tab {tab_id}]" if title else f"{lead} [Tab {tab_id}]"
    else:
        body = _side_by_side(list(leads.items()), turn)
    return f"{body}\n\n{limit}"


def _asked(kinds: Sequence[_Kind], question: str, general: str) -> list[_Kind]:
    """The `kinds` the question asks for; the `general` one only when it asks for no other."""
    found = [k for k in kinds if k[1].search(question)]
    return [k for k in found if k[0] != general] or found


def _intent_terms(question: str) -> set[str]:
    # "How do I contact you?" asks for a phone number, not for a section of steps.
    return {term for term, _, _ in _asked(_INTENTS, question, "xxstepsxx")}


def _intent_words(question: str) -> set[str]:
    """The question's words that an intent answers: "cost" is answered by "$1,349"."""
    return {t for _, asks, _ in _INTENTS for m in asks.finditer(question) for t in _terms(m.group(0))}


def _counted(question: str) -> set[str]:
    """What a "how many" question counts: its words after "how many", up to the first
    function word ("how many business days are …" counts business days)."""
    m = _HOW_MANY.search(question)
    out: set[str] = set()
    for word in m["what"].split() if m else []:
        stems = _terms(word)
        if not stems:
            break
        out.update(stems)
    return out


def _counts(text: str, counted: set[str]) -> bool:
    """Whether a number in the text counts one of the counted words: "19 stops",
    "six tram lines", "Finishers: 41"."""
    found = list(_WORD_OR_NUMBER.finditer(text))
    words = [m.group(0) for m in found]
    stems = ANALYSER.stems(words)
    for i, w in enumerate(words):
        if w[0].isdigit() or _NUMBER_WORD.match(w):
            if counted & set(stems[i + 1 : i + 1 + COUNT_REACH]):
                return True
            # A label names the figure after it ("Finishers: 41"); "per route, 2026" is a year.
            if i and stems[i - 1] in counted and _LABELS.fullmatch(text[found[i - 1].end() : found[i].start()]):
                return True
    return False


_LABELS = re.compile(r"\s*[:=]\s*")


def _kinds(question: str) -> list[_Kind]:
    """The kinds of value the question asks for; "a number" only when no kind more precise
    is asked ("how far" asks for a length, not for any figure on the page)."""
    return _asked(_COMPARED_KINDS, question, "xxnumberxx")


def _said(question: str) -> set[str]:
    """The words that ask for the kinds of value the question asks for: what passages stating
    such a value call it ("cost" asks, "price" says; not "older", which no passage says)."""
    return set().union(*(_said_of(asks) for _, asks, _ in _kinds(question)))


def _said_of(asks: re.Pattern[str]) -> set[str]:
    """`_said` for one kind of value."""
    return set(_terms(asks.pattern)) - set(_terms(" ".join(_COMPARING_WORDS)))


def _passage_intents(text: str) -> str:
    return " ".join(term for term, _, has in _INTENTS if has.search(text))


_WHAT_IS = re.compile(r"^\s*what\s+(?P<verb>is|are|was|were)\s+(?:an?\s+|the\s+)?(?P<x>[\w' -]+?)(?:\s+(?:in|on|of|for)\s+[^?]*)?\s*\??\s*$", re.I)


def _definition(question: str) -> re.Pattern[str] | None:
    """For "what is X?", what a sentence defining X looks like: "X is …", "An X is …"."""
    m = _WHAT_IS.match(question)
    if not m or len(m["x"].split()) > 4:
        return None
    verbs = "is|was|refers to|means" if m["verb"].lower() in ("is", "was") else "are|were|refer to|mean"
    return re.compile(rf"\b{re.escape(m['x'].strip())}\s+({verbs})\b", re.I)


def _best(
    passages: list[_Passage], question: str, titles: dict[str, str] | None = None, ranker: RankerFactory = BM25Ranker
) -> list[tuple[float, float, _Passage]]:
    """(coverage, score, passage) for passages covering enough of the question, best first.

    A passage is about its page, so its tab's title words count towards coverage
    ("tram lines | 6" answers "does Port Averly have trams?" on Port Averly's
    page), but the passage itself must match something beyond the title, and at
    least half of the question's own topic: its words beyond every tab's title,
    beyond what an intent answers and beyond how values are compared. Otherwise
    the passage answers another question ("within 30 days" of a return for
    "within how many business days are refunds issued?") and the answer is more
    likely elsewhere on the page.
    For a "how many" question, a tab's passages that count what is asked
    ("19 stops") push out its other ones. Passages are ranked by what they
    match beyond the title; a heading only names what the sentences under it
    state, so those come first.
    """
    intents = _intent_terms(question)
    q = _question_terms(question) | intents
    if not passages or not q:
        return []
    title_terms = {tab_id: set(_terms(t)) for tab_id, t in (titles or {}).items()}
    comparing = {t for m in _COMPARING.finditer(question) for t in _terms(m.group(0))}
    topic = _question_terms(question) - set().union(*title_terms.values()) - _intent_words(question) - comparing
    counted = _counted(question)
    # A table row is matched with its caption and column names: "Time" is what "2:09:47" is.
    index = ranker([f"{p.text} {p.header} {_passage_intents(p.text)}" for p in passages], ANALYSER)
    corpus = [set(t) for t in index.terms]
    sections = [set(t) for t in ANALYSER.analyse(p.section for p in passages)]
    query = Query(question, tuple(sorted(q)))
    # Score each passage on what the question asks beyond its own page's title.
    # When the title holds every word of the question ("What is a resource?" on "Resources —
    # Terraform"), the passage must hold one of them itself.
    beyond_title = {tab_id: q - title_terms.get(tab_id, set()) for tab_id in {p.tab_id for p in passages}}
    scores_by_tab = {
        tab_id: index.scores(query.without(title_terms.get(tab_id, set())) if rest else query)
        for tab_id, rest in beyond_title.items()
    }
    defines = _definition(question)
    said = _said(question)
    # The words asking for a kind of value are covered by a value of it: "$35.00" answers all of
    # "how much does it cost", "281-999-3191" all of "phone number".
    asked = (q - _intent_words(question)) | intents or q
    scored = []
    for i, (p, own) in enumerate(zip(passages, corpus)):
        s = scores_by_tab[p.tab_id][i]
        title = title_terms.get(p.tab_id, set()) if beyond_title[p.tab_id] else set()
        beyond = len((q & own) - title)
        # The heading a passage is under says what it is about ("## Battery" over "lasted 11 hours").
        under = own | sections[i]
        coverage = len(asked & (under | title)) / len(asked)
        on_topic = len(topic & under) / len(topic) if topic else 1.0
        # A value of the kind asked ("$35.00" for "cost"), not only the question's words.
        states = bool(intents & own)
        # A question only about a kind of value ("How much does it cost?") is answered by a
        # value of that kind, not by its word ("… the temperature at all costs").
        answers_kind = states or bool(topic) or not intents
        if coverage >= MIN_COVERAGE and on_topic >= MIN_COVERAGE and beyond and s > 0 and answers_kind:
            defining = bool(defines and defines.search(clean(p.text)))
            # Among equals: one stating a value of the kind asked ("Memory: 32 GB" over "I wish the
            # RAM were upgradeable"), then one naming every title word of the question ("the tram
            # route"; "Aurora X16" shares one word with "Aurora X14 Pro": another thing), then one
            # naming the kind ("price" for "cost").
            named = bool(q & title) and q & title <= own
            kind = bool(said & under)
            key = (not defining, -beyond, -coverage, p.text.startswith("#"), -states, -named, -kind, -s, p.order)
            scored.append((key, coverage, float(s), p))
    if counted:
        # Where a tab counts what is asked, its other passages answer another question.
        counting = {id(p) for _, _, _, p in scored if _counts(p.text, counted)}
        tabs = {p.tab_id for _, _, _, p in scored if id(p) in counting}
        scored = [x for x in scored if id(x[3]) in counting or x[3].tab_id not in tabs]
    scored.sort(key=lambda x: x[0])
    return [(c, s, p) for _, c, s, p in scored]


class _ToolCall(NamedTuple):
    """A tool call of this turn and its result."""

    name: str
    args: dict[str, Any]
    text: str  # the result, unfenced
    ok: bool
    scroll: ScrollResult | None  # where a scroll left the tab (the tool message's artifact), when it says

    def at_bottom(self) -> bool:
        """Nothing further down: the scroll reached the bottom, or failed (do not try there again)."""
        return not self.ok or (self.scroll is not None and self.scroll.at_bottom)


@dataclass
class _Turn:
    """What the conversation tells the model: tabs, question, tool activity so far."""

    tabs: dict[str, tuple[str, str, str]]  # id -> (url, title, body)
    question: str
    tool_calls: list[_ToolCall]  # after the question
    fresh_text: list[tuple[str, str]]  # (tab_id, text) from scrolls and refreshes
    # id -> (authors, published): what each page's markup says of itself
    selves: dict[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)

    def titles(self) -> dict[str, str]:
        return {tab_id: title for tab_id, (_, title, _) in self.tabs.items()}


def _read(messages: Sequence[BaseMessage]) -> _Turn:
    tabs: dict[str, tuple[str, str, str]] = {}
    selves: dict[str, tuple[tuple[str, ...], str]] = {}
    q_index = -1
    for i, m in enumerate(messages):
        text = message_text(m)
        if isinstance(m, HumanMessage) and is_fenced(text, "page_context"):
            for t in parse_tabs(text):
                tabs[t.tab_id] = (t.url, t.title, t.text)
                selves[t.tab_id] = (t.authors, t.published)
        elif isinstance(m, HumanMessage) and not is_fenced(text, "browser_state") and text.strip():
            q_index = i
    question = message_text(messages[q_index]) if q_index >= 0 else ""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    tool_calls: list[_ToolCall] = []
    fresh: list[tuple[str, str]] = []
    for m in messages[q_index + 1 :]:
        if isinstance(m, AIMessage):
            for c in m.tool_calls:
                calls[c["id"] or ""] = (c["name"], c["args"])
        elif isinstance(m, ToolMessage):
            name, args = calls.get(m.tool_call_id, (m.name or "", {}))
            text = unfence(message_text(m))
            ok = m.status != "error"
            scroll = m.artifact if isinstance(m.artifact, ScrollResult) else None
            tool_calls.append(_ToolCall(name, args, text, ok, scroll))
            if name == "scroll_tool" and ok:
                # The page's text as scrolled, not the tool's report around it ("Tab 1 scrolled
                # down. [viewport at 0px …] (no text visible)"), which is no quote of the page.
                shown = scroll.text if scroll is not None else text
                if shown.strip():
                    fresh.append((str(args.get("tab_id") or _only(tabs)), shown))
        elif isinstance(m, HumanMessage) and is_fenced(message_text(m), "browser_state"):
            for t in parse_tabs(message_text(m)):
                fresh.append((t.tab_id, t.text))
                tabs[t.tab_id] = (t.url, t.title, t.text)
    return _Turn(tabs, question, tool_calls, fresh, selves)


def _only(tabs: dict[str, Any]) -> str:
    """The tab a call that named none was about: the only one."""
    return next(iter(tabs), "1")


# What a heading heads: the passages under it, up to the next heading of its level, this many words.
SECTION_WORDS = 60
_HEADING_LEVEL = re.compile(r"^(#+)\s")


def _heads(p: _Passage) -> int:
    """A heading's level (1 for "# …"), or 0 for a passage that states something. A heading
    can lose its "#" (in text read from the screen, or extracted without markup): there a
    short line of words, without a figure or an ending stop ("Customer reviews",
    "Ingredients"), heads what follows, below any "#" heading."""
    if m := _HEADING_LEVEL.match(p.text):
        return len(m.group(1))
    words = p.text.split()
    plain = (0 < len(words) <= 4 and not _ITEM.match(p.text) and re.search(r"[^\W\d_]", p.text)
             and not re.search(r"[\d.!?:;|]", p.text))
    return 9 if plain else 0


def _section(p: _Passage, passages: Sequence[_Passage]) -> list[_Passage]:
    """A heading and what it heads ("Ingredients" over "4 eggs", …) among its tab's `passages`,
    up to the next heading of its level, or a short line (the next item's start) past half of
    `SECTION_WORDS`."""
    level = _heads(p)
    if not level:
        return [p]
    out, words = [p], 0
    for q in passages[passages.index(p) + 1 :]:
        size = len(q.text.split())
        if words >= SECTION_WORDS or 0 < _heads(q) <= level or (words >= SECTION_WORDS / 2 and size <= 4):
            break
        out.append(q)
        words += size
    return out


def _quote_section(p: _Passage, passages: Sequence[_Passage]) -> str:
    """A passage as quoted; a heading with the lines under it as a list."""
    return _quote_lines(_section(p, passages))


def _quote_lines(section: list[_Passage]) -> str:
    """A `_section` quoted: its first passage, and the lines under it as a list."""
    head, *under = section
    return "\n".join([head.quote(), *(f"- {q.quote()}" for q in under)])


def _format_answer(hits: list[tuple[float, float, _Passage]], passages: Sequence[_Passage]) -> str:
    """One tab's best passage (a heading with what it heads, among the tab's `passages`), and
    a second when it is nearly as good and says something of its own."""
    top = hits[0][1]
    section = _section(hits[0][2], passages)
    shown = {id(q) for q in section}
    more = [
        h for h in hits[1:]
        if h[0] >= hits[0][0] and h[1] >= 0.8 * top and len(h[2].text.split()) >= 6 and not h[2].text.startswith("#")
        and id(h[2]) not in shown
    ]
    quotes = [_cited(_quote_lines(section), hits[0][2])]
    quotes += [_cited(_quote_section(h[2], passages), h[2]) for h in more[: MAX_PASSAGES_SINGLE - 1]]
    return "\n\n".join(quotes)


def _cited(text: str, p: _Passage) -> str:
    """The citation after a quote's first line: under a heading, the lines follow it."""
    first, _, rest = text.partition("\n")
    return f"{first} {p.cite()}" + (f"\n{rest}" if rest else "")


def _named_tabs(question: str, tab_ids: Sequence[str], turn: _Turn) -> list[str]:
    """The tabs whose page the question names by its title ("Distaghil Sar or The Crown")."""
    asked = f" {' '.join(_NAME_WORD.findall(fold(question).lower()))} "
    named = []
    for tab_id in tab_ids:
        title = _TITLE_NOTE.sub("", turn.titles().get(tab_id, ""))
        words = " ".join(_NAME_WORD.findall(fold(title).lower()))
        if words and f" {words} " in asked:
            named.append(tab_id)
    return named


def _compares(question: str) -> bool:
    """Whether a question asks across the open tabs ("cheaper", "each", "or")."""
    return bool(_COMPARING.search(question) or _ACROSS.search(question))


def _by_kind(
    question: str, passages: dict[str, list[_Passage]], named: list[str], turn: _Turn, ranker: RankerFactory
) -> str | None:
    """Comparing tabs by a kind of value (a price, a duration, a weight, a date …): each tab's
    best passage stating a value of that kind, however it is worded ("Battery life: 14 hours
    20 minutes" against "lasted 11 hours 5 minutes"), side by side; for a question asking
    several kinds ("which town has more people, and which gets more rain?"), each tab's best
    passage of each. The tabs compared are those the question names by title, or else all.
    None unless each has such a passage."""
    kinds = _kinds(question)
    if len(named) >= 2:
        passages = {tab_id: ps for tab_id, ps in passages.items() if tab_id in named}
    elif not _compares(question):
        return None  # "When was Port Averly founded?" asks one tab, whatever else is open
    if len(passages) < 2 or not kinds:
        return None
    terms = Query(question, tuple(sorted(_question_terms(question) | _said(question))))
    blocks = []
    for tab_id, ps in passages.items():
        title = set(_terms(turn.titles().get(tab_id, "")))
        chosen: list[_Passage] = []
        for _, asks, has in kinds:
            found = [p for p in ps if not p.text.startswith("#") and has.search(p.text)]
            if not found:
                continue
            scores = ranker([f"{p.text} {p.section} {p.header}" for p in found], ANALYSER).scores(terms.without(title))
            # A passage naming the kind ("Our price: …") over one that only states a value of it.
            said = _said_of(asks)
            names = [bool(said & set(_terms(f"{p.text} {p.section}"))) for p in found]
            best = found[max(range(len(found)), key=lambda i: (names[i], scores[i], -found[i].order))]
            if best not in chosen:
                chosen.append(best)
        if not chosen:
            return None
        # A heading ("Method") with its lines; several kinds in the page's order.
        blocks.append((tab_id, "\n\n".join(_quote_section(p, ps) for p in sorted(chosen, key=lambda p: p.order))))
    return _side_by_side(blocks, turn)


def _each_named(
    question: str, passages: dict[str, list[_Passage]], named: list[str], turn: _Turn, ranker: RankerFactory
) -> str | None:
    """A question naming two or more tabs by title ("Are both A and B …?", "Which is …: A,
    B or C?"): each named tab's passage that best matches the rest of the question."""
    if len(named) < 2:
        return None
    terms = _question_terms(question) | _intent_terms(question)
    blocks = []
    for tab_id, ps in passages.items():
        found = [p for p in ps if not p.text.startswith("#")] if tab_id in named else []
        if not found:
            continue
        title = set(_terms(turn.titles().get(tab_id, "")))
        rest = Query(question, tuple(sorted(terms - title)))
        scores = ranker([f"{p.text} {p.section} {p.header} {_passage_intents(p.text)}" for p in found], ANALYSER).scores(rest)
        best = max(range(len(found)), key=lambda i: (scores[i], -found[i].order))
        # Nothing beyond its name matches: what the page says its subject is, its first sentence.
        blocks.append((tab_id, (found[best] if scores[best] > 0 else found[0]).quote()))
    return _side_by_side(blocks, turn) if len(blocks) >= 2 else None


def _side_by_side(blocks: list[tuple[str, str]], turn: _Turn) -> str:
    """Each tab's evidence under a heading naming the tab, in tab order."""
    out = []
    for tab_id, body in sorted(blocks, key=lambda b: (len(b[0]), b[0])):
        title = turn.tabs.get(tab_id, ("", "", ""))[1] or f"Tab {tab_id}"
        out.append(f"From [Tab {tab_id}] ({title}):\n\n{body}")
    return "\n\n".join(out)


def _coverage(tq: table_quote.TableQuote, question: str, title: str) -> float:
    """As `_best` measures a passage: the share of the question's terms in the rows shown,
    their caption and columns, or the tab's title."""
    q = _question_terms(question) | _intent_terms(question)
    t = tq.table
    cells = [c for i in tq.rows for c in t.rows[i]] + (tq.distinct[1] if tq.distinct else [])
    columns = [table_quote.column_words(c) for c in t.columns]  # "Nation" says "country" too
    held = set(_terms(" ".join([title, t.caption, *columns, *cells]))) | set(_terms(_passage_intents(" ".join(cells))))
    return len(q & held) / len(q) if q else 0.0


# "Which boots are cheapest?" over a page of product cards: the list item with the lowest price.
_CHEAPEST = re.compile(r"\b(cheapest|least expensive|lowest[- ]priced|lowest price|most affordable)\b", re.I)
_DEAREST = re.compile(r"\b(most expensive|priciest|dearest|highest[- ]priced|highest price)\b", re.I)
_PRICE = re.compile(r"[$€£¥]\s?(\d[\d,]*(?:\.\d+)?)")
MIN_PRICED_ITEMS = 3  # a list of things for sale, not a page's one price and its accessory


def _priced_item(question: str, passages: list[_Passage], title: str) -> str | None:
    """For the cheapest (or dearest) of a list whose items each state one price, that item;
    among the items with the question's other words ("the cheapest waterproof boot")."""
    cheapest, dearest = bool(_CHEAPEST.search(question)), bool(_DEAREST.search(question))
    if cheapest == dearest:
        return None
    priced = [(float(m[0].replace(",", "")), p) for p in passages
              if _ITEM.match(p.text) and len(m := _PRICE.findall(p.text)) == 1]
    if len(priced) < MIN_PRICED_ITEMS:
        return None
    rest = _DEAREST.sub(" ", _CHEAPEST.sub(" ", question))
    topic = _question_terms(rest) - set(_terms(title)) - _intent_words(rest)
    if topic:
        priced = [(price, p) for price, p in priced if topic <= set(_terms(f"{p.text} {p.section}"))]
    if not priced:
        return None
    _, item = (min if cheapest else max)(priced, key=lambda x: x[0])
    return f"{_ITEM.sub('', item.quote())} {item.cite()}"


# "Who wrote this?", "When was the article published?": the page itself, which its markup
# names the authors and first day of (the tab's author and published attributes).
_ASKS_PUBLISHED = re.compile(
    r"\bwhen\b.*\b(?:published|posted|written)\b|\bpublication date\b|\bdate of publication\b|"
    r"\b(?:what|which) (?:day|date|year) was\b.*\b(?:published|posted|written)\b", re.I)
_ASKS_AUTHOR, _BYLINE = next((asks, says) for term, asks, says in _INTENTS if term == "xxauthorxx")
# What such a question may say beyond asking: the page ("this article", "the post") and how it asks.
_OF_ITSELF = frozenset(_terms(
    "who wrote write writes written author authors writer writers byline by when published publish publication "
    "date day year posted article page post story piece blog report review guide site website "
    "document essay entry news item tab text paper"))


def _of_itself(question: str, turn: _Turn) -> str | None:
    """The answer to a question about who wrote the page or when it was published, from
    what its markup says of it; None when the question is about something else, or the
    page does not say. Each tab that says, in order."""
    author, published = bool(_ASKS_AUTHOR.search(question)), bool(_ASKS_PUBLISHED.search(question))
    if not (author or published):
        return None
    if set(_terms(question)) - _OF_ITSELF:
        # "Who wrote Harry Potter?", "When was Thriller released?", even on that book's or that
        # album's page: what the page is about, not the page.
        return None
    lines, silent = [], []
    for tab_id, (authors, day) in turn.selves.items():
        if (author and not authors) or (published and not day):
            silent.append(tab_id)  # half an answer is no answer: the page text may hold the rest
            continue
        said, quoted = [], False
        if author:
            body = turn.tabs[tab_id][2]
            # Its byline as the page shows it ("By Maren Oyelaran, Transport Correspondent · 3 March"), if quoted.
            byline = next((ln.strip() for ln in body.splitlines()[:40] if len(ln) <= 200
                           and _BYLINE.search(ln.strip()) and any(a in ln for a in authors)), "")
            quoted = bool(byline)
            said.append(byline or f"By {', '.join(authors)}")
        if published and not (quoted and _HAS_DATE.search(said[0])):  # a byline often gives the day too
            said.append(f"Published {_day(day)}")
        # Only a byline quoted whole is the page's text; the rest is its markup, which may be the site's word.
        whence = "" if quoted and len(said) == 1 else ", as the page's markup says"
        lines.append(f"{' · '.join(said)}{whence} [Tab {tab_id}]")
    if lines:  # of several tabs, those whose markup does not say are named, not left out
        lines += [f"Tab {tab_id}: its page's markup does not say." for tab_id in silent]
    return "\n".join(lines) or None


def _day(iso: str) -> str:
    """"2018-07-10" as "10 July 2018 (2018-07-10)"; as given when it is not a day."""
    try:
        d = date.fromisoformat(iso)
    except ValueError:
        return iso
    return f"{d.day} {d:%B %Y} ({iso})"


def _evidence(
    question: str, texts: Sequence[tuple[str, str]], turn: _Turn, ranker: RankerFactory = BM25Ranker
) -> str | None:
    """The smallest sufficient quote from `texts` ((tab id, text) pairs), or None.

    Per tab, the rows of its tables that the question names
    (`table_quote`), unless a passage of its text covers more of the question.
    """
    if itself := _of_itself(question, turn):
        return itself
    merged: dict[str, list[str]] = {}
    for tab_id, text in texts:  # pass 2 reads a tab in pieces: each scroll's text
        merged.setdefault(tab_id, []).append(text)
    bodies = {tab_id: "\n\n".join(parts) for tab_id, parts in merged.items()}
    passages = {tab_id: _passages(tab_id, body) for tab_id, body in bodies.items()}
    if _asks_gist(question):
        return _gist(passages, turn)
    if len(passages) == 1:
        tab_id, ps = next(iter(passages.items()))
        if priced := _priced_item(question, ps, turn.titles().get(tab_id, "")):
            return priced
    named = _named_tabs(question, list(bodies), turn)
    compared = _by_kind(question, passages, named, turn, ranker) or _each_named(question, passages, named, turn, ranker)
    if compared:
        return compared
    hits = _best([p for ps in passages.values() for p in ps], question, turn.titles(), ranker)
    rows: dict[str, table_quote.TableQuote] = {}
    strength: dict[str, float] = {}  # how much of the question each tab's evidence covers
    for tab_id, body in bodies.items():
        title = turn.titles().get(tab_id, "") or table_quote.subject(body)
        tq = table_quote.quote(body, question, title)
        prose = max((c for c, _, p in hits if p.tab_id == tab_id), default=0.0)
        covered = _coverage(tq, question, title) if tq is not None else 0.0
        # "The first name listed in the table": a data table's rows, before any sentence.
        listed = tq is not None and bool(tq.table.columns) and table_quote.says_table(question)
        if tq is not None and (covered + PROSE_MARGIN >= prose or listed):
            rows[tab_id] = tq
            strength[tab_id] = max(covered, prose)
        elif prose:
            strength[tab_id] = prose
    if not strength:
        if len(passages) >= 2 and _COMPARE_WHOLE.search(question):
            return _gist(passages, turn, COMPARE_LIMIT)
        return None
    if len(turn.tabs) == 1:
        if not rows:
            return _format_answer(hits, passages[hits[0][2].tab_id])
        tab_id, tq = next(iter(rows.items()))
        return table_quote.render(tq, tab_id)
    shown = list(strength)
    if not _compares(question):
        # One question, several tabs: the tabs that answer it best ("When was Port Elm founded?"
        # is answered by Port Elm's page, whatever the other town's page says of its own founding).
        top = max(strength.values())
        shown = [t for t in shown if strength[t] >= top]
    blocks = [
        (tab_id, table_quote.render(rows[tab_id], tab_id, cite=False) if tab_id in rows
         else next(_quote_section(p, passages[tab_id]) for _, _, p in hits if p.tab_id == tab_id))
        for tab_id in shown
    ]
    return _side_by_side(blocks, turn)


class ExtractiveChatModel(BaseChatModel):
    """Offline, deterministic extractive QA over the page context (see module doc)."""

    chunk_words: int = 4  # words per streamed chunk
    ranker: RankerFactory = Field(default=BM25Ranker, exclude=True)  # what ranks the passages

    @property
    def _llm_type(self) -> str:
        return "chatagent-extractive"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": "extractive"}

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    # --- decisions -------------------------------------------------------
    def _reply(self, messages: Sequence[BaseMessage], tools: list[dict[str, Any]] | None) -> AIMessage:
        turn = _read(messages)
        tool_names = {t["function"]["name"] for t in tools or []}
        visual = is_visual(turn.question, [body for _, _, body in turn.tabs.values()])
        if not tool_names:
            bodies = [(t, body) for t, (_, _, body) in turn.tabs.items()]
            answer = None if visual else _evidence(turn.question, bodies, turn, self.ranker)
            if answer:
                return AIMessage(answer)
            reason = "the question is about something visual" if visual else "nothing in the page text matches the question"
            return AIMessage(f"{ESCALATION_MARKER} {reason}")
        return self._use_tools(turn, tool_names, visual)

    def _use_tools(self, turn: _Turn, tool_names: set[str], visual: bool) -> AIMessage:
        done = [(c.name, c.args) for c in turn.tool_calls]
        if visual:
            shot_tabs = {str(a.get("tab_id")) for n, a in done if n == "screenshot_tool"}
            target = self._best_tab(turn)
            if "screenshot_tool" in tool_names and target not in shot_tabs:
                return self._call("screenshot_tool", {"tab_id": target})
            shot_ok = any(c.name == "screenshot_tool" and c.ok for c in turn.tool_calls)
            did = f"I took a screenshot of [Tab {target}], but" if shot_ok else f"I could not take a screenshot of [Tab {target}], and"
            return AIMessage(
                f"{did} I am the offline extractive model: I can only quote page text and cannot read "
                "images, so I can't tell what it shows. Ask again with a vision model such as gemini-2.5-flash "
                "(`--model`, `chatagent config` or the side panel's settings)."
            )
        answer = _evidence(turn.question, turn.fresh_text, turn, self.ranker)
        if answer:
            return AIMessage(answer)
        refreshed = {str(a.get("tab_id")) for n, a in done if n == "refresh_browser_state_tool"}
        for tab_id in turn.tabs:
            if "refresh_browser_state_tool" in tool_names and tab_id not in refreshed:
                return self._call("refresh_browser_state_tool", {"tab_id": tab_id})
        bottom = {
            str(c.args.get("tab_id") or _only(turn.tabs)) for c in turn.tool_calls
            if c.name == "scroll_tool" and c.at_bottom()
        }
        for tab_id in turn.tabs:
            if "scroll_tool" in tool_names and tab_id not in bottom:
                return self._call("scroll_tool", {"tab_id": tab_id, "direction": "down"})
        searched = ("I read the whole text of the pages, re-read them and scrolled each to the bottom"
                    if len(turn.tabs) > 1 else "I read the whole page text, re-read the page and scrolled to the bottom")
        return AIMessage(f"{searched}, but found nothing that answers this question.")

    @staticmethod
    def _best_tab(turn: _Turn) -> str:
        ranked = sorted(
            turn.tabs,
            key=lambda t: -len(_question_terms(turn.question) & set(_terms(turn.tabs[t][1] + " " + turn.tabs[t][2][:2000]))),
        )
        return ranked[0] if ranked else "1"

    @staticmethod
    def _call(name: str, args: dict[str, Any]) -> AIMessage:
        return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:12]}", "type": "tool_call"}])

    # --- LangChain plumbing ----------------------------------------------
    def _usage(self, messages: Sequence[BaseMessage], reply: AIMessage) -> dict[str, int]:
        inp = sum(count_tokens(message_text(m)) for m in messages)
        out = count_tokens(message_text(reply)) + sum(count_tokens(json.dumps(c["args"])) for c in reply.tool_calls)
        return {"input_tokens": inp, "output_tokens": out, "total_tokens": inp + out}

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self._reply(messages, kwargs.get("tools"))
        reply.usage_metadata = self._usage(messages, reply)  # type: ignore[assignment]
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _pieces(self, reply: AIMessage) -> Iterator[AIMessageChunk]:
        if reply.tool_calls:
            yield AIMessageChunk(
                content="",
                tool_call_chunks=[
                    {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i, "type": "tool_call_chunk"}
                    for i, c in enumerate(reply.tool_calls)
                ],
            )
            return
        text = message_text(reply)
        if text.startswith(ESCALATION_MARKER):
            yield AIMessageChunk(content=text)  # marker and reason in one piece
            return
        words = re.findall(r"\S+\s*|\s+", text)
        for i in range(0, len(words), self.chunk_words):
            yield AIMessageChunk(content="".join(words[i : i + self.chunk_words]))

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        reply = self._reply(messages, kwargs.get("tools"))
        for piece in self._pieces(reply):
            yield ChatGenerationChunk(message=piece)
        yield ChatGenerationChunk(message=AIMessageChunk(content="", usage_metadata=self._usage(messages, reply)))  # type: ignore[arg-type]

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in self._stream(messages, stop, None, **kwargs):
            yield chunk
