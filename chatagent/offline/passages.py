"""A tab's text as passages (lines, list items, table rows under their header), and
which of them answer a question: BM25 (or another `ranking.Ranker`) over the
question's terms, with kinds of value ("how much" is answered by "$1,349")."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import takewhile

from ..markers import is_marker
from ..pdf import PAGE_MARK
from ..ranking import BM25Ranker, Query, RankerFactory
from ..rows import row_cells
from ..tables import clean, lower_header, tables
from .question import ANALYSER, CHARTS, GRADED, HAS_DATE, MONEY, NUMBER_WORDS, PICTURES, written_in

MIN_COVERAGE = 0.5  # a passage must hold at least this share of the question's content words
MAX_PASSAGES = 2
SECTION_WORDS = 60  # what a heading heads: the passages under it, up to this many words
COUNT_REACH = 3  # a counted noun may stand this many words after its number ("19 low-floor stops")

_LABEL = re.compile(r"^(?:[-*+]\s+)?[^:]{1,40}:$")  # a list item naming what the next one states
ITEM = re.compile(r"^[-*+]\s+")
HEADING_MARK = re.compile(r"^\s*(?:[-*+]\s+)?#+\s*")
# The budgeter's notes of text left out (the two forms `budget.py` writes): no quote of the page.
_HEADING_LEVEL = re.compile(r"^(#+)\s")
_WORD_OR_NUMBER = re.compile(r"\d[\d.,:]*|[^\W\d_]+")
_HOW_MANY = re.compile(r"\bhow many\s+(?P<what>[^?.,;]*)", re.I)
GRADING_TERMS = frozenset(ANALYSER.terms(" ".join(w for g in GRADED for w in g[:2]) + " first last"))
# "which one", "this article": what is compared or the page itself, not a topic.
_WHICH_ONE = re.compile(r"\b(which|each|every|any|the other|this|that) ones?\b|\b(each|every)\b", re.I)
_THIS_PAGE = re.compile(r"\b(this|the|these)\s+(article|site|website|document|post|story|blog|report|tab|page)s?\b", re.I)
_VISUAL_WORDS = re.compile(rf"\b({PICTURES}|{CHARTS})\b", re.I)
HOW_MEASURE = re.compile(r"\bhow\s+(long|far|old)\b", re.I)  # no row or passage is named "long"


@dataclass
class Passage:
    tab_id: str
    text: str
    order: int
    header: str = ""  # a table row's caption and header rows
    section: str = ""  # the heading it is under

    def quote(self) -> str:
        """As a person reads it: a row as "column: value" pairs under its caption, no Markdown."""
        if self.text.startswith("|"):
            found = tables(f"{self.header}\n{self.text}" if self.header else self.text)
            if found:
                t = found[0]
                return f"{t.caption}: {t.render(len(t.rows) - 1)}" if t.caption else t.render(len(t.rows) - 1)
            return "; ".join(c for c in map(clean, row_cells(self.text)) if c)
        return clean(HEADING_MARK.sub("", PAGE_MARK.sub("", self.text)))

    def cite(self) -> str:
        """[Tab N], with a PDF's page: [Tab N, p. 3]."""
        page = PAGE_MARK.match(self.text)
        return f"[Tab {self.tab_id}, p. {page.group(1)}]" if page else f"[Tab {self.tab_id}]"


def terms(text: str) -> list[str]:
    return ANALYSER.terms(text)


def question_terms(question: str) -> set[str]:
    question = _THIS_PAGE.sub(r"\1", _WHICH_ONE.sub(r"\1", HOW_MEASURE.sub("how", question)))
    return set(terms(_VISUAL_WORDS.sub(" ", question))) or set(terms(question))


def split(tab_id: str, body: str) -> list[Passage]:
    """The passages of one tab's text, table rows with the header rows above them."""
    out: list[Passage] = []
    header, captions, rows, last, section = "", [], 0, -2, ""
    for i, raw in enumerate(body.splitlines()):
        line = raw.strip()
        if line.startswith("```"):
            continue
        if not line or is_marker(line) or set(line) <= set("|-: "):
            continue
        if not line.startswith("|"):
            header, captions, rows = "", [], 0
            if out and _LABEL.match(out[-1].text) and i == last + 1 and not out[-1].header:
                # "- Battery life:" above "- 14 hours 20 minutes": one statement.
                out[-1] = Passage(tab_id, f"{out[-1].text} {ITEM.sub('', line)}", i, section=section)
            else:
                out.append(Passage(tab_id, line, i, section=section))
            if line.startswith("#"):
                section = line.lstrip("#").strip()
            last = i
            continue
        cells = [c.strip() for c in row_cells(line)]
        if len(cells) < 2:  # a caption or a footer spans the table
            if not rows:
                captions.append(line)
            out.append(Passage(tab_id, line, i))
            continue
        rows += 1
        names = not any(re.search(r"\d", c) for c in cells)
        if rows == 1:
            header = "\n".join(captions)
            if names:  # a first row without figures names the columns
                header = "\n".join([*captions, line])
                continue
        elif names and rows == 2 and header and lower_header(tuple(row_cells(header.rsplit("\n", 1)[-1])), tuple(cells)):
            header = f"{header}\n{line}"  # its second header row: "Apps | Goals" under "Total | Total"
            continue
        out.append(Passage(tab_id, line, i, header))
    return out


_EMAIL = r"[\w.+-]+@[\w-]+\.[a-z]{2,}"
_PHONE = r"(?<!\d)(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)\s?)?\d{2,4}[\s.-]\d{3,4}[\s.-]\d{3,4}(?!\d)"


def _asks(words: str) -> re.Pattern[str]:
    return re.compile(rf"\b({words})\b", re.I)


ASKS_AUTHOR = _asks(r"who wrote|who write|who writes|who is the author|author|authors|writer|writers|written by|byline")
# A byline: two or more capitalised words after "By", not a filter's label ("By Role").
BYLINE = re.compile(r"^(?i:by|written by|words by|authors?:)\s+[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*){1,3}(?:\s*[,·|–—-]|\s*$)")


def _heading_named(names: str) -> re.Pattern[str]:
    return re.compile(rf"^(?:#+\s*)?({names})\s*:?\s*$", re.I)


@dataclass(frozen=True)
class Kind:
    """A kind of value: its term, what a question asking for one says, what a passage stating one holds."""

    term: str
    asks: re.Pattern[str]
    has: re.Pattern[str]
    measures: str | None = None  # the dimension its values are in, when a verdict compares them


def _measured(dim: str, figure: str = r"\d") -> re.Pattern[str]:
    """A figure in one of the units of `dim`: "14 hours", "1.2 kg"."""
    return re.compile(rf"(?:{figure})\s?-?(?:{written_in(dim)})\b", re.I)


KINDS: tuple[Kind, ...] = (
    Kind("xxmoneyxx", _asks(
        r"cost|costs|price|prices|priced|how much(?=\s+(?:is|was|are|were|does|do|did|will|would|should|can|could|"
        r"for|to|money)\b|\s*[?.]|\s*$)(?![^?.]*\bweigh)|pay|fee|fees|charge|expensive|cheap|cheaper|cheapest|"
        r"pricier|revenue|revenues|income|profit|profits|earnings|salary|salaries|budget"),
        MONEY, "money"),
    Kind("xxdatexx", _asks(r"when|what year|which year|date|founded|born|died|opened|built|published|released|"
                           r"updated|posted|older|oldest|newer|newest|younger|youngest|earliest"), HAS_DATE, "time"),
    Kind("xxnumberxx", _asks(r"how many|number of|how long|how far|how tall|how big|how old|population|count"),
         re.compile(r"\d")),
    Kind("xxdurationxx", _asks(
        r"how long|duration|runtime|battery life|lifespan|lasts|lasted|(?:does|did|do|will|would|it|they)\s+last|"
        r"longer|longest|shorter|shortest"),
        _measured("duration", r"\d|\b(?:" + "|".join(w for w, n in NUMBER_WORDS.items() if 0 < n <= 12) + r"|a few|several)"),
        "duration"),
    Kind("xxlengthxx", _asks(r"how long(?=\s+(?:is|are|was|were)\b)|how far|length|distance|longer|longest|shorter|"
                             r"shortest"),
         _measured("length"), "length"),
    Kind("xxweightxx", _asks(r"weigh|weighs|weight|heavy|heavier|heaviest|light|lighter|lightest"),
         _measured("weight"), "weight"),
    Kind("xxpopulationxx", _asks(r"population|populous|inhabitants|residents|people live|bigger|biggest|larger|"
                                 r"largest|smaller|smallest|more people|fewer people"),
         re.compile(r"\b(population|inhabitants|residents)\b[^.\n]{0,40}\d|\d[\d,.]*\s*(million\s+)?"
                    r"(inhabitants|residents|people)\b", re.I)),
    Kind("xxrainxx", _asks(r"rain|rainy|rainier|rainfall|wet|wetter|wettest|dry|drier|driest|precipitation"),
         re.compile(r"\d\s?(mm|millimetres?|millimeters?)\b", re.I)),
    Kind("xxmemoryxx", _asks(r"ram|memory"), _measured("data"), "data"),
    Kind("xxstoragexx", _asks(r"storage|ssd|hdd|disk|drive space"), _measured("data"), "data"),
    Kind("xxtemperaturexx", _asks(r"temperatures?|how hot|how cold|how warm|degrees"),
         re.compile(r"\d\s?(°|º|℃|℉|degrees?\b)", re.I)),
    Kind("xxauthorxx", ASKS_AUTHOR, BYLINE),
    Kind("xxstepsxx", _asks(r"steps|instructions|directions|procedure|how (?:do|can|should|would) (?:i|you|we|one) "
                            r"\w+|how to \w+"),
         _heading_named(r"method|steps|instructions|directions|preparation|procedure|installation|installing|setup|"
                        r"set-up|getting started|usage|how to\b.{0,60}")),
    Kind("xxhoursxx", _asks(r"opening hours|open hours|opening times?|business hours|office hours|hours of operation|"
                            r"closing times?|what time|what hours|when (?:is|are|does|do) [\w' ]{1,40} (?:open|close)"),
         re.compile(r"\b\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)(?!\w)|\b\d{1,2}[:.]\d{2}\s*[-–]\s*\d{1,2}[:.]\d{2}\b",
                    re.I)),
    Kind("xxcontactxx", _asks(r"contact|get in touch|reach (?:you|them|us)"), re.compile(f"{_EMAIL}|{_PHONE}", re.I)),
    Kind("xxemailxx", _asks(r"e-?mail(?: address)?"), re.compile(_EMAIL, re.I)),
    Kind("xxphonexx", _asks(r"(?:tele)?phone(?: number)?|call (?:you|them|us)"), re.compile(_PHONE)),
    Kind("xxsightsxx", _asks(r"see|visit|visiting|sights|sightseeing|attractions|things to do|what to do"),
         _heading_named(r"sights|sightseeing|attractions|things to (?:see|do)|what to (?:see|do)|landmarks")),
    Kind("xxfirstxx", _asks(r"won|win|wins|winner|winners|winning|victor|champion|first place|came first|"
                            r"finished first"),
         re.compile(r"^\|\s*(1|1st|1\.|#1|first)\s*\|", re.I)),
)
# Across tabs, "first" and "earlier" ask for dates, and "higher" for heights.
COMPARED_KINDS = (
    *KINDS,
    Kind("xxdatexx", _asks(r"first|earlier|before"), HAS_DATE, "time"),
    Kind("xxheightxx", _asks(r"high|higher|highest|tall|taller|tallest|height|elevation"),
         _measured("length"), "length"),
)


def _asked(kinds: Sequence[Kind], question: str, general: str) -> list[Kind]:
    """The kinds the question asks for; the `general` one only when it asks for no other."""
    found = [k for k in kinds if k.asks.search(question)]
    return [k for k in found if k.term != general] or found


def intent_terms(question: str) -> set[str]:
    return {k.term for k in _asked(KINDS, question, "xxstepsxx")}


def intent_words(question: str) -> set[str]:
    """The question's words that a kind of value answers: "cost" is answered by "$1,349"."""
    return {t for k in KINDS for m in k.asks.finditer(question) for t in terms(m.group(0))}


def compared_kinds(question: str) -> list[Kind]:
    """The kinds of value asked for; "a number" only when no kind more precise is."""
    return _asked(COMPARED_KINDS, question, "xxnumberxx")


def said_of(kind: Kind) -> set[str]:
    """The words naming a kind that passages use too ("price", not "cheaper")."""
    return set(terms(kind.asks.pattern)) - GRADING_TERMS


def passage_intents(text: str) -> str:
    return " ".join(k.term for k in KINDS if k.has.search(text))


def _counted(question: str) -> set[str]:
    """What "how many" counts: its words up to the first function word."""
    m = _HOW_MANY.search(question)
    return set().union(*takewhile(bool, (terms(word) for word in (m["what"].split() if m else []))))


def _counts(text: str, counted: set[str]) -> bool:
    """Whether a number in the text counts a counted word: "19 stops", "six lines", "Finishers: 41"."""
    found = list(_WORD_OR_NUMBER.finditer(text))
    words = [m.group(0) for m in found]
    stems = ANALYSER.stems(words)
    for i, w in enumerate(words):
        if w[0].isdigit() or w.lower() in NUMBER_WORDS:
            if counted & set(stems[i + 1 : i + 1 + COUNT_REACH]):
                return True
            if i and stems[i - 1] in counted and re.fullmatch(r"\s*[:=]\s*", text[found[i - 1].end() : found[i].start()]):
                return True
    return False


_WHAT_IS = re.compile(r"^\s*what\s+(?P<verb>is|are|was|were)\s+(?:an?\s+|the\s+)?(?P<x>[\w' -]+?)"
                      r"(?:\s+(?:in|on|of|for)\s+[^?]*)?\s*\??\s*$", re.I)


def _definition(question: str) -> re.Pattern[str] | None:
    """For "what is X?", what a sentence defining X looks like: "X is …"."""
    m = _WHAT_IS.match(question)
    if not m or len(m["x"].split()) > 4:
        return None
    verbs = "is|was|refers to|means" if m["verb"].lower() in ("is", "was") else "are|were|refer to|mean"
    return re.compile(rf"\b{re.escape(m['x'].strip())}\s+({verbs})\b", re.I)


def best(
    passages: list[Passage], question: str, titles: dict[str, str] | None = None, ranker: RankerFactory = BM25Ranker
) -> list[tuple[float, float, Passage]]:
    """(coverage, score, passage) for passages covering enough of the question, best first. A tab's title
    counts towards coverage, but a passage must match something beyond it and half of the question's topic
    (its words beyond titles, kinds of value and grading). For "how many", passages that count push out the rest."""
    intents = intent_terms(question)
    q = question_terms(question) | intents
    if not passages or not q:
        return []
    title_terms = {tab_id: set(terms(t)) for tab_id, t in (titles or {}).items()}
    topic = question_terms(question) - set().union(*title_terms.values()) - intent_words(question) - GRADING_TERMS
    counted = _counted(question)
    index = ranker([f"{p.text} {p.header} {passage_intents(p.text)}" for p in passages], ANALYSER)
    corpus = [set(t) for t in index.terms]
    sections = [set(t) for t in ANALYSER.analyse(p.section for p in passages)]
    query = Query(question, tuple(sorted(q)))
    beyond_title = {tab_id: q - title_terms.get(tab_id, set()) for tab_id in {p.tab_id for p in passages}}
    scores_by_tab = {tab_id: index.scores(query.without(title_terms.get(tab_id, set())) if rest else query)
                     for tab_id, rest in beyond_title.items()}
    defines = _definition(question)
    said = set().union(*(said_of(k) for k in compared_kinds(question)))
    asked = (q - intent_words(question)) | intents or q  # "$35.00" answers all of "how much does it cost"
    scored = []
    for i, (p, own) in enumerate(zip(passages, corpus)):
        s = scores_by_tab[p.tab_id][i]
        title = title_terms.get(p.tab_id, set()) if beyond_title[p.tab_id] else set()
        beyond = len((q & own) - title)
        under = own | sections[i]  # the heading it is under says what it is about
        coverage = len(asked & (under | title)) / len(asked)
        on_topic = len(topic & under) / len(topic) if topic else 1.0
        states = bool(intents & own)
        answers_kind = states or bool(topic) or not intents
        if coverage >= MIN_COVERAGE and on_topic >= MIN_COVERAGE and beyond and s > 0 and answers_kind:
            defining = bool(defines and defines.search(clean(p.text)))
            named = bool(q & title) and q & title <= own
            key = (not defining, -beyond, -coverage, p.text.startswith("#"), -states, -named, -bool(said & under), -s,
                   p.order)
            scored.append((key, coverage, float(s), p))
    if counted:
        counting = {id(p) for _, _, _, p in scored if _counts(p.text, counted)}
        tabs = {p.tab_id for _, _, _, p in scored if id(p) in counting}
        scored = [x for x in scored if id(x[3]) in counting or x[3].tab_id not in tabs]
    scored.sort(key=lambda x: x[0])
    return [(c, s, p) for _, c, s, p in scored]


def _heads(p: Passage) -> int:
    """A heading's level, or 0. A short line of words with no figure or stop heads what follows too."""
    if m := _HEADING_LEVEL.match(p.text):
        return len(m.group(1))
    words = p.text.split()
    plain = (0 < len(words) <= 4 and not ITEM.match(p.text) and re.search(r"[^\W\d_]", p.text)
             and not re.search(r"[\d.!?:;|]", p.text))
    return 9 if plain else 0


def section(p: Passage, passages: Sequence[Passage]) -> list[Passage]:
    """A heading and what it heads, up to the next heading of its level or `SECTION_WORDS` words."""
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


def quote_section(p: Passage, passages: Sequence[Passage]) -> str:
    head, *under = section(p, passages)
    return "\n".join([head.quote(), *(f"- {q.quote()}" for q in under)])


def cited(text: str, p: Passage) -> str:
    """The citation after a quote's first line."""
    first, _, rest = text.partition("\n")
    return f"{first} {p.cite()}" + (f"\n{rest}" if rest else "")


def format_best(hits: list[tuple[float, float, Passage]], passages: Sequence[Passage]) -> str:
    """One tab's best passage with what it heads, and a second nearly as good that says something of its own."""
    top = hits[0][1]
    shown = {id(q) for q in section(hits[0][2], passages)}
    more = [h for h in hits[1:] if h[0] >= hits[0][0] and h[1] >= 0.8 * top and _words(h[2].text) >= 6
            and not h[2].text.startswith("#") and id(h[2]) not in shown]
    quotes = [cited(quote_section(h[2], passages), h[2]) for h in [hits[0], *more[: MAX_PASSAGES - 1]]]
    return "\n\n".join(quotes)


def _words(text: str) -> int:
    """Words, not the bullets and dashes between them: "- Sleeve — $39" is two words and a price."""
    return sum(1 for w in text.split() if any(c.isalnum() for c in w))


def is_prose(p: Passage) -> bool:
    return not (p.text.startswith("|") or HEADING_MARK.match(p.text) or _LABEL.match(p.text))
