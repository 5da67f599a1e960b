"""The smallest sufficient quote from a tab's tables, for the offline model.

A question about a table names some of its rows by their values ("Italy",
"2008") and some of its columns by their names ("points", "attendance"). This
finds the table and the rows the question names, and picks what to show by
what the question asks:

- the row it names (a lookup), and for "after X" / "before X" the row next to it;
- for "most / highest / least / first / last …", the row at the top of the
  column it compares by (sorted here: retrieval, not arithmetic), or the
  first / last row in the table's order when no column is named;
- for "how many", the rows that match, with how many there are; and for
  either, one line saying that what it cannot do (count by meaning, compute a
  difference or a total) needs a language model.

Rows are shown as "column: value" pairs under the table's caption, never as
pipe rows. Everything here is deterministic; it never writes a value that is
not in a cell.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from ..ranking.base import QUESTION_WORDS, STOPWORDS_EN, Analyser
from ..tables import NONE_CELLS, Table, clean, tables

ANALYSER = Analyser(STOPWORDS_EN | QUESTION_WORDS)
# How a question about a table is put, not what it is about: "how many times", "the total number".
PHRASING = frozenset(ANALYSER.terms("times time total number amount listed list"))
# Said to whoever asked: a terminal, an agent over MCP or the side panel, so both ways to choose one.
NEEDS_MODEL = "needs a language model: set one with `chatagent config` or the panel's ⚙"
MAX_ROWS = 3  # rows shown for a count or a list
MAX_LISTED = 5  # rows shown when they are what is asked for ("which teams raced at least 13 races?")
MAX_VALUES = 8  # a column's different values listed
TESTED_BONUS = 1.0  # about one word of the question found in a row
INFOBOX_PENALTY = 2.0  # tuned on the even WTQ ids
SIZE_PRIOR = 0.7  # weight of a table's size (log rows) in choosing it; tuned on the even WTQ ids
_NUMBER = re.compile(r"-?(?:\d[\d,]*(?:\.\d+)?|\.\d+)")
_YEARISH = re.compile(r"\b(year|years|date|dates|season|born|founded|established|opened|released|built|held)\b", re.I)
_RANKISH = re.compile(r"^(#|no\.?|rank|ranking|pos\.?|position|place|placing|pl\.?|seed)$", re.I)

# Not "at most", "at least": those test a figure (`_FILTER`), they rank nothing.
_MOST = re.compile(
    r"\b(?<!at )(most|highest|largest|biggest|greatest|longest|tallest|heaviest|maximum|best|winningest|slowest|top(?!\s*\d))\b",
    re.I,
)
_LEAST = re.compile(
    r"\b(?<!at )(least|lowest|smallest|fewest|shortest|lightest|minimum|worst|fastest|quickest)\b", re.I
)
_SPEED = re.compile(r"\b(fastest|quickest|slowest)\b", re.I)
_RATE = re.compile(r"speed|km/h|mph|per hour|rate", re.I)
_TIMED = re.compile(r"\btime\b|speed|km/h|mph|per hour", re.I)  # a column "the fastest" is ranked by
_FIRST = re.compile(r"\b(first|earliest|oldest|original|initial|debut)\b", re.I)
_LAST = re.compile(r"\b(last|latest|newest|most recent|final|youngest|recently)\b", re.I)
# "The last rider on this chart", "the first date listed": the table's own order, not time.
_LISTED = re.compile(r"\b(?:listed|on (?:the|this) (?:list|chart|table)|(?:of|in) (?:the|this) (?:list|chart|table))\b", re.I)

_EARLIER = re.compile(r"\b(earlier|sooner|older)\b", re.I)  # of two rows
_LATER = re.compile(r"\b(later|newer|more recent|younger)\b", re.I)
_AFTER = re.compile(r"\b(after|next|following|below|succeeded|subsequent|later)\b", re.I)
_BEFORE = re.compile(r"\b(before|previous|preceding|above|prior|preceded|earlier)\b", re.I)
_BESIDE = re.compile(r"\b(?:next|immediately|right|directly|just)\b|\blisted (?:before|after)\b", re.I)
_COUNT = re.compile(r"\b(how many|number of|total amount of|count|times)\b", re.I)
_ARITHMETIC = re.compile(
    # "The total number of trains", "the total amount of head coaches" count rows: a count, not a sum.
    r"\b(difference|how (many|much) (more|less|fewer|longer|shorter|higher|lower|older|younger)|total(?! (?:number|amount))|sum|combined|"
    r"average|altogether|in all)\b",
    re.I,
)
# A value typed with punctuation inside: "1:05", "2–1", "3-0". (Words and plain numbers are terms.)
_VALUE = re.compile(r"\d+(?:[:–\-/]\d+)+|(?<![\w-])[A-Za-z]+(?:-[A-Za-z0-9]+)*-\d+(?![\w-])")  # also codes: "GL-B-5"
# A day the question names, "before December 15, 1965", "after 3 May 2001", "since June 1990":
# its figure sorts with a column's dates (`_number`).
_MONTH_ABBR = "jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec"
_MONTH_NAME = rf"(?:{_MONTH_ABBR})[a-z]*\.?"
_ON_DATE = (rf"{_MONTH_NAME}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}|\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH_NAME},?\s+\d{{4}}|"
            rf"{_MONTH_NAME},?\s+\d{{4}}")
# "more than 500", "at least 10", "before 1990": rows filtered by a figure, not ranked.
_FILTER = re.compile(
    r"\b(?P<no>no |not )?(?P<op>more than|greater than|higher than|larger than|over|above|exceed(?:s|ed|ing)?|at least|less than|fewer than|lower than|"
    r"smaller than|under|below|at most|before|after|since|prior to|previous to|earlier than|later than|until|"
    r"(?:faster|quicker|slower) than(?=\s+\d{1,3}:))\s+(?P<cur>\$|£|€)?"
    rf"(?P<n>{_ON_DATE}|\d{{1,3}}:\d{{2}}(?::\d{{2}})?(?:\.\d+)?|\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?!\d|,\d)",  # "before 1999, how many …"
    re.I,
)
_DECADE = re.compile(r"\b(?:in|during|of|from)\s+the\s+(1[5-9]\d|20\d)0'?s\b", re.I)  # "in the 1990s": 1990 to 1999
_EXCEEDS = re.compile(r"exceed\w*")  # "can exceed 180 km/h": more than 180
# "between 2009 and 2013", "from 1961 to 1987", "between picks 148 and 168", "from 14:08 to
# 15:48": both ends count.
_RANGE = re.compile(
    r"\b(?P<op>between|from)\s+(?:[a-z]+\s+)?(?P<n>\d{1,2}:\d{2}(?::\d{2})?|\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)"
    r"(?:\s+(?:and|to|through)\s+|\s*[-–]\s*)(?P<n2>\d{1,2}:\d{2}(?::\d{2})?|\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\d:]|,\d)",
    re.I,
)
# "in the top 5", "3rd or better", "10th or worse": a test of a place.
_OR_BETTER = r"\s+or\s+(?:(?P<better>better|higher)|worse|lower)\b"  # after a place: "3rd or better"
_PLACED = re.compile(rf"\b(?:(?P<top>top)\s+(?P<n>\d{{1,3}})\b|(?P<m>\d{{1,3}})(?:st|nd|rd|th){_OR_BETTER})", re.I)
# "Other than Cumberland County, which county …": what the question sets aside, up to a comma or a question word.
_EXCEPT = re.compile(
    r"\b(?:other than|besides|beside|except(?: for)?|apart from|aside from|excluding|not counting)\s+"
    r"(?P<what>[^,?]+?)(?=,|\?|$|\s+(?:who|what|which|where|when|how|is|was|are|were|did|does|do|has|had|have)\b)",
    re.I,
)
# "players not from Canada", "the only rider not to ride a Ducati": rows set aside, as by `_EXCEPT`.
_NOT = re.compile(
    r"\b(?:not|n't)\s+(?:(?:be|been|from|in|on|by|at|of|to|with|won|played|made|published|use|used|ride|rode|have|has|had|the|a|an)\s+)*"
    r"(?P<what>[^,?]+?)(?=,|\?|\.|$|\s+(?:who|what|which|where|when|how|is|was|are|were|did|does|do|between|before|after|since|in \d)\b)",
    re.I,
)
# A cell saying "not" to a word ("Did not qualify"), and a question that may ask for such rows.
_NEGATED = re.compile(r"\b(?:not|never|n't|failed to)\s+(?:been\s+|be\s+)?\w+", re.I)
_NEGATIVE = re.compile(r"\b(?:not|never|fail\w*|miss\w*|no|without)\b|n't\b", re.I)
# "no gold medals", "didn't win any bronze", "did not receive any votes", "zero points".
_NONE = re.compile(r"\b(?:no|zero|without|(?:not|n't|never) (?:\w+ ){0,3}(?:any|a|an))\b", re.I)
# What a question asks for: "which year …", "what was the team …".
_ASKED = re.compile(r"\b(?:what|which|whose)\s+(?:(?:is|was|were|are|the)\s+)*(?P<what>\w+)", re.I)
_TOTAL_COLUMN = re.compile(r"^(total|overall|sum|tot\.?)\b", re.I)
# How often, not how much: "the most common position", "recorded the most", "most frequent".
_OFTEN = re.compile(r"\b(?:most|least) (?:common|frequent|often)|\b(?:most|least) commonly\b|\b(?:recorded|listed|appears?) the (?:most|least)\b", re.I)
_ALSO = re.compile(r"\b(?:what|which|who) (?:other|else)\b|\bwho also\b|\balso\b", re.I)
QUOTES = "\"“” "
_QUOTED = re.compile(r'["“”]([^"“”]{1,60})["“”]')
_LISTING = re.compile(r"\b(?:list|name (?:all|the|each|every)|what are|which are|who are|each|every|all the)\b", re.I)
_DISTINCT = re.compile(r"\b(different|distinct|unique|separate|various)\b", re.I)
_SAME = re.compile(r"\b(same|equal|as many|as much|tied)\b", re.I)


@dataclass
class TableQuote:
    """What to show from one table, and what the offline model cannot add to it."""

    table: Table
    rows: list[int]  # rows to show, in the order shown
    count: int | None = None  # rows that match a "how many" question, when they were all seen
    matched: list[str] = field(default_factory=list)  # the question's words the counted rows share
    # The question's words that set rows aside ("not from Canada"), and how many rows they set aside.
    left_out: tuple[list[str], int] | None = None
    limit: str = ""  # a line on what needs a language model
    often: tuple[str, str, int, int, bool] | None = None  # (column, value, rows with it, rows, fewest?)
    distinct: tuple[str, list[str]] | None = None  # (column, its different values), for "how many different …"
    more: tuple[str, list[str]] | None = None  # (column, its values in the rows not shown), for a list
    verdict: str = ""  # "Above: Capacity is 27,000, against 23000": the named row's figure against the question's test


_MONTHS = {m: i for i, m in enumerate(_MONTH_ABBR.split("|"), 1)}
_DATE_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")
_DATE_MONTH = re.compile(rf"\b({_MONTH_ABBR})[a-z]*\.?\b", re.I)
_DATE_DAY = re.compile(r"\b([0-3]?\d)(?:st|nd|rd|th)?\b")


_CLOCK = re.compile(r"\s*(\d{1,3}):(\d{2})(?::(\d{2}))?(\.\d+)?(?![\d:])")


def _number(cell: str) -> float | None:
    """A cell's figure: a date as a number that sorts by time ("3 Sep 1921" → 19210903),
    a time in its smallest unit ("2:09:47" → 7787), otherwise its first number."""
    month = _DATE_MONTH.search(cell)
    if month:
        year = _DATE_YEAR.search(cell)
        rest = _DATE_YEAR.sub(" ", cell)
        day = _DATE_DAY.search(rest)
        return float((int(year.group(1)) if year else 0) * 10_000 + _MONTHS[month.group(1).lower()] * 100 + (
            int(day.group(1)) if day else 0
        ))
    clock = _CLOCK.match(cell)
    if clock:  # "2:09:47", "7:07.33", "14:08": a time, in its smallest unit (so times sort right)
        parts = [int(p) for p in clock.group(1, 2, 3) if p is not None]
        return float(sum(p * 60 ** k for k, p in enumerate(reversed(parts)))) + float(clock.group(4) or 0)
    m = _NUMBER.search(cell)
    if not m:
        return None
    try:
        return float(m.group(0).replace(",", ""))
    except ValueError:
        return None


@dataclass
class _Scored:
    table: Table
    cells: list[set[str]]  # each row's terms
    row_scores: list[float]
    row_hits: list[frozenset[str]]
    column_terms: list[set[str]]  # each column's name, as terms (`_column_terms`)
    column_hits: list[int]  # question terms in each column's name
    score: float
    denying: frozenset[int] = frozenset()  # rows saying "not" to what the question asks ("did not qualify")
    refused: frozenset[str] = frozenset()  # the question's words all those rows say "not" to

    @cached_property
    def numeric(self) -> list[int]:
        """The table's columns of figures (asked several times per question)."""
        return _numeric_columns(self.table)


def _values_in(row: tuple[str, ...], values: set[str]) -> set[str]:
    """The question's values ("1:05", "2–1") that a row's cells hold."""
    if not values:
        return set()
    text = " ".join(row)
    return {v for v in values if re.search(rf"(?<![\w.:]){re.escape(v)}(?![\d:])", text, re.I)}


def _score(
    table: Table, q: set[str], caption_terms: set[str], values: set[str] = frozenset(), excluded: Sequence[set[str]] = (),
    numbered: Sequence[tuple[float, set[str]]] = (), quoted: Sequence[str] = (), negative: bool = False,
) -> _Scored:
    column_terms = [_column_terms(table, j) for j in range(table.width)]
    column_hits = [len(_alike(q, c)) for c in column_terms]
    # A word naming a column ("designed") names what is compared, not which rows.
    q = q - _alike(q, set().union(*column_terms))
    texts = [" ".join(r) for r in table.rows]
    denying: frozenset[int] = frozenset()
    refused: frozenset[str] = frozenset()
    if not negative:
        # "Did not qualify" names no row that qualified: it is set aside when others may have;
        # in the columns the question names when it names some ("qualify for the playoffs").
        named = [j for j in range(table.width) if column_hits[j]]
        judged = [" ".join(table.value(i, j) for j in named) for i in range(len(texts))] if named else texts
        denied = ANALYSER.analyse(" ".join(_NEGATED.findall(t)) for t in judged)
        denying = frozenset(i for i, d in enumerate(denied) if q.intersection(d))
        refused = frozenset(q.intersection(*(denied[i] for i in denying))) if denying else frozenset()
        texts = [_NEGATED.sub(" ", t) for t in texts]
    cells = [set(t) | _values_in(row, values) for row, t in zip(table.rows, ANALYSER.analyse(texts))]
    _kin(q, cells)
    # A value the question quotes ('the venue is "h"') names the rows with a cell that is it.
    for said in quoted:
        term = f'"{said}"'
        q = q | {term}
        for i, row in enumerate(table.rows):
            if any(cell.strip(QUOTES).casefold() == said for cell in row):  # a title cell may be quoted
                cells[i].add(term)
    # "6 hospital beds", "match day 6": the rows with that figure in the column named beside it.
    numeric = _numeric_columns(table)
    for figure, beside in numbered:
        # The column the words beside it name ("start in the 1st position": Start), else for
        # a place any column of places.
        named = [j for j in numeric if _alike(beside - {RANK}, column_terms[j])]
        for j in named or [j for j in numeric if RANK in beside and _PLACE.match(table.column(j).strip())]:
            term = f"#{j}={figure:g}"
            q = q | {term}
            for i in range(len(table.rows)):
                cell = table.value(i, j)
                if _number(cell) == figure or (figure == 0 and cell in NONE_CELLS):
                    cells[i].add(term)
    q = q | values
    df = Counter(t for c in cells for t in c & q)
    n = len(cells)
    idf = {t: math.log(1 + n / df[t]) for t in df}
    # A row the question sets aside ("other than MLW") is not one it names.
    hits = [frozenset() if _set_aside(c, excluded) else frozenset(c & q) for c in cells]
    # fsum: a set's order changes with the hash seed, and rows that tie must tie in every process.
    row_scores = [math.fsum(idf[t] for t in h) for h in hits]
    best = max(row_scores, default=0.0)
    score = best + 1.5 * sum(column_hits) + 0.5 * len(caption_terms & q)
    return _Scored(table, cells, row_scores, hits, column_terms, column_hits, score, denying, refused)


PREFIX = 5  # stems sharing this many first letters name the same thing ("attendees", "attendance")


def _kin(q: set[str], cells: list[set[str]]) -> None:
    """A word of the question no cell holds names the cells holding a word that starts it or
    that it starts ("Kenyans": "Kenya"; "Italian": "Italy"), both of `PREFIX` letters or more;
    each such cell gets the question's word."""
    held = set().union(*cells) if cells else set()
    for t in q - held:
        if len(t) < PREFIX or t.startswith("#"):
            continue
        kin = {c for c in held if len(c) >= PREFIX and (t.startswith(c) or c.startswith(t))}
        if kin:
            for cell in cells:
                if cell & kin:
                    cell.add(t)


def _alike(q: set[str], names: set[str]) -> set[str]:
    """The question's terms that a column's name holds, or a word starting the same way."""
    prefixes = {n[:PREFIX] for n in names if len(n) >= PREFIX}
    return {t for t in q if t in names or (len(t) >= PREFIX and t[:PREFIX] in prefixes)}


# What a table's header abbreviates, as questions spell it ("W" is wins): sports tables mostly.
_HEADER_WORDS = {
    "w": "wins won", "l": "losses lost", "d": "draws drawn", "t": "ties tied", "pts": "points", "att": "attendance",
    "apps": "appearances", "pop": "population", "%": "percent percentage",
    "nation": "country", "country": "nation", "nationality": "country nation", "nat": "nationality country nation",
    "name": "player athlete person", "player": "name", "athlete": "name", "result": "score", "score": "result",
}
# A unit as questions spell it and as cells write it ("1.8 meters": "1.77 m").
_UNITS = {
    "percent": "%", "percentage": "%", "meters": "m", "metres": "m", "meter": "m", "metre": "m", "kilometers": "km",
    "kilometres": "km", "feet": "ft", "foot": "ft", "inches": "in", "miles": "mi", "kilograms": "kg", "pounds": "lb",
    "millimeters": "mm", "millimetres": "mm", "centimeters": "cm", "centimetres": "cm",
}
_UNIT = re.compile(r"\s*(%|[a-z]+/[a-z]+|[a-z]+)", re.I)


def _unit(question: str, end: int) -> str:
    """The word written after a threshold's figure (ending at `end`), as cells write units
    ("100 km/h", "5%", "1.8 meters": "m"; "10 seniti"), or "" for a word that is not one ("10 in 1990")."""
    m = _UNIT.match(question, end)
    if not m:
        return ""
    word = m[1].lower()
    unit = _UNITS.get(word, word)
    return unit if unit in _MEASURES or "/" in unit or ANALYSER.terms(word) else ""


_MEASURES = {"%", *_UNITS.values()}


def _column_terms(table: Table, j: int) -> set[str]:
    """The terms of column `j`'s name, with what its abbreviations stand for."""
    return set(ANALYSER.terms(column_words(table.column(j))))


def column_words(name: str) -> str:
    """A column's name with what its abbreviations stand for ("Pts": "Pts points")."""
    spelled = " ".join(_HEADER_WORDS.get(w.casefold(), "") for w in re.findall(r"[A-Za-z]+|%", name))
    return f"{name} {spelled}"


def _filled(table: Table, j: int) -> list[str]:
    """Column `j`'s cells that say something ("–" says none)."""
    return [v for i in range(len(table.rows)) if (v := table.value(i, j)) not in NONE_CELLS]


def _carries(table: Table, j: int, unit: str) -> bool:
    """Whether column `j` is in `unit`: its name says so ("Area (km²)", "% of votes"), or most
    of its figures are written with it ("100 km/h")."""
    if re.search(rf"(?<![\w%]){re.escape(unit)}(?![\w%])", table.column(j), re.I):
        return True
    cells = _filled(table, j)
    written = rf"\d\s*{re.escape(unit)}(?![\w%])"
    return bool(cells) and sum(bool(re.search(written, c, re.I)) for c in cells) * 2 > len(cells)


def _numeric_columns(table: Table) -> list[int]:
    """Columns most of whose cells hold a figure."""
    out = []
    for j in range(table.width):
        values = [_number(v) for v in _filled(table, j)]
        if values and sum(v is not None for v in values) >= 0.6 * len(values) and len(values) >= 2:
            out.append(j)
    return out


def _dated(table: Table, j: int) -> bool:
    """A column of times: named so ("Year", "Released"), or whose figures are all years
    or dates ("Designed": 1953, 1958, …)."""
    if _YEARISH.search(table.column(j)):
        return True
    values = _filled(table, j)
    return bool(values) and all(_DATE_YEAR.fullmatch(v.strip()) or _DATE_MONTH.search(v) and _DATE_YEAR.search(v)
                                for v in values)


def _clocks(table: Table, j: int) -> bool:
    """A column of times of day or durations ("2:09:47")."""
    values = _filled(table, j)
    return bool(values) and sum(bool(_CLOCK.match(v)) for v in values) >= 0.6 * len(values)


def _comparator(s: _Scored, question: str) -> int | None:
    """The column a superlative compares by: for "most / least", a numeric column the
    question names; for "first / last", a column of years or dates (else the table's order)."""
    numeric = s.numeric
    named = [j for j in numeric if s.column_hits[j]]
    # "What year had the highest earnings?": the year is what is asked for, the earnings
    # what is compared.
    asked = _ASKED.search(question)
    if asked and len(named) > 1:
        head = set(ANALYSER.terms(asked["what"]))
        compared = [j for j in named if not _alike(head, s.column_terms[j])]
        named = compared or named
    ranks = _MOST.search(question) or _LEAST.search(question)
    if _SPEED.search(question) and not named:
        # "The fastest swimmer": by the column of times (or of speeds), though none is named.
        timed = [j for j in numeric if _clocks(s.table, j) or _TIMED.search(s.table.column(j))]
        if timed:
            return timed[0]
    if ranks and not named:
        # "Which nation won the most medals?": ranked by the table's total when it has one.
        totals = [j for j in numeric if _TOTAL_COLUMN.match(s.table.column(j))]
        if totals:
            return totals[-1]
    dated_named = [j for j in named if _dated(s.table, j)]
    if named and (ranks or dated_named):
        # "When did the first episode premiere?": first in time, by the column of dates it names.
        among = named if ranks else dated_named
        return max(among, key=lambda j: s.column_hits[j])
    if (_ordered_first(question) or _LAST.search(question)) and not _LISTED.search(question):
        dated = [j for j in numeric if _dated(s.table, j)]
        return dated[0] if dated else None
    return None


_NUMBER_WORDS = {
    w: i for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
}
_FIGURE = re.compile(r"(?<![\w.,:\-–/])(\d+(?:\.\d+)?|" + "|".join(_NUMBER_WORDS) + r")(?![\w.,:\-–/])", re.I)
_THRESHOLD_BEFORE = re.compile(
    r"\b(than|least|most|over|under|above|below|before|after|since|until|to|between|from|through)\s*$"
    r"|\bbetween\s+(?:[a-z]+\s+)?\d[\d,.]*\s+and\s*$|\b\d[\d,.]*\s*[-–]\s*$",
    re.I,
)
# "Who came fourth?", "the 3rd place": a place, in a column of ranks ("first" and "last"
# order rows instead: `_FIRST`, `_LAST`).
_ORDINAL_WORDS = {
    w: i for i, w in enumerate(
        "second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth "
        "fifteenth sixteenth seventeenth eighteenth nineteenth twentieth".split(), 2)
}
_ORDINAL = re.compile(r"\b(?:(" + "|".join(_ORDINAL_WORDS) + r")|(\d{1,3})(?:st|nd|rd|th))\b", re.I)
# "Finished first", "came in first": first is a place there, not an order of rows (but
# "which came first, A or B?" orders two).
_PLACED_FIRST = re.compile(r"\b(?:(?:finish(?:ed|es)?|placed|ranked|ended)\s+(?:in\s+)?|came\s+in\s+)first\b(?![\s-]+(?:time|round|half|game|race))", re.I)
RANK = "#rank"  # in a figure's words: the figure is a place, found in a column of places
_PLACE = re.compile(r"^(rank|ranking|pos\.?|position|place|placing|pl\.?|finish|finished)$", re.I)  # not "No.": a number worn


def _only_asked(s: _Scored, question: str) -> bool:
    """Whether every column the question names is the one it asks for ("which season … the
    most events?": no column of events to rank by)."""
    asked = _ASKED.search(question) or re.search(r"\b(?:in|on|at) (?:which|what) (?P<what>\w+)", question, re.I)
    named = [j for j in range(s.table.width) if s.column_hits[j]]
    if not asked or not named:
        return False
    head = set(ANALYSER.terms(asked["what"]))
    rest = set(ANALYSER.terms(question[: asked.start()] + " " + question[asked.end():]))
    return all(
        _alike(head, terms) and not _alike(rest, terms)  # "the largest amount of hospital beds" names one
        for terms in (s.column_terms[j] for j in named)
    )


def _numbered(question: str) -> list[tuple[float, set[str]]]:
    """The question's figures that are not thresholds ("more than 5"), each with the words
    around it: "only 2 teams had 7 draws" → (2, {team, …}), (7, {draw, …})."""
    out = []
    for m in _FIGURE.finditer(question):
        token = m.group(1).lower()
        if _THRESHOLD_BEFORE.search(question[: m.start()]):
            continue
        out.append((float(_NUMBER_WORDS.get(token, token)), _around(question, m)))
    for m in _ORDINAL.finditer(question):
        if _THRESHOLD_BEFORE.search(question[: m.start()]) or re.match(_OR_BETTER, question[m.end():], re.I):
            continue  # "at least 2nd", "3rd or better": a test of places
        # "The 8th place time" is a place; "start in the 1st position", "the 16th opus" may
        # name their column ("Start", "Opus") by the words around.
        place = re.match(r"[\s-]*(?:place|position|spot|rank)\b", question[m.end():], re.I)
        out.append((float(_ORDINAL_WORDS[m[1].lower()] if m[1] else m[2]), {RANK} | (set() if place else _around(question, m))))
    out += [(1.0, {RANK}) for _ in _PLACED_FIRST.finditer(question)]
    return out


def _around(question: str, m: re.Match[str]) -> set[str]:
    """The terms of the two words either side of a figure: what it is a figure of."""
    return set(ANALYSER.terms(" ".join(question[: m.start()].split()[-2:] + question[m.end():].split()[:2])))


def says_table(question: str) -> bool:
    """Whether the question asks about a table as such ("the first name listed in the table",
    "the last on the chart"): a table's rows answer it before any sentence does."""
    return bool(_LISTED.search(question))


def _ordered_first(question: str) -> bool:
    """Whether the question asks for the first of some rows ("the first album"), not for a first place."""
    return bool(_FIRST.search(_PLACED_FIRST.sub(" ", question)))


_LEAD_ROW = re.compile(r"\|([^|\n]{2,120})\|")
_LEAD_HEADING = re.compile(r"#{1,2} (.{2,120})")
_LEAD_BOLD = re.compile(r"\*\*\*?([^*\n]{2,80}?)\*?\*\*")


def subject(text: str) -> str:
    """What a page without a title is about: its first heading or one-cell row (an
    infobox's name), else the first bold words of its opening (an encyclopedia's lead
    names its subject so)."""
    first = text.lstrip().split("\n", 1)[0].strip()
    lead = _LEAD_HEADING.fullmatch(first) or _LEAD_ROW.fullmatch(first) or _LEAD_BOLD.search(text[:400])
    if lead:
        return clean(lead.group(1))
    # "This is a list of … designed by architect Eero Saarinen.": the names in its first
    # sentence, after its start (a name there is what the sentence says something about).
    sentence = re.split(r"(?<=[.!?])\s", first, maxsplit=1)[0] if not first.startswith("|") else ""
    return " ".join(m[0] for m in _NAMES.finditer(sentence) if m.start() > 0)


_NAMES = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)+")  # two or more capitalised words: a name


# "How long did it take?" asks for a time or a length: no row or column is named "long"
# ("Long jump"), and a sentence saying "32 metres long" is not about what is asked.
HOW_MEASURE = re.compile(r"\bhow\s+(long|far|old)\b", re.I)


def _ordering(question: str) -> set[str]:
    """The question's words that order rows: "first", "most", "final"."""
    return {t for p in (_MOST, _LEAST, _FIRST, _LAST) for m in p.finditer(question) for t in ANALYSER.terms(m.group(0))}


def quote(text: str, question: str, title: str = "") -> TableQuote | None:
    """The rows of `text`'s tables that answer `question`, or None when no table is about it.

    Words of the page's `title` are what the whole page is about ("Davis Love" on his
    page): they name no row, unless the question has no other words."""
    q = set(ANALYSER.terms(HOW_MEASURE.sub("how", question))) - PHRASING
    if re.search(r"\btime\b", question, re.I):  # "the fastest time" names a column; "how many times" only phrases
        q |= set(ANALYSER.terms("time"))
    q = q - set(ANALYSER.terms(title)) or q
    # "before 1999": a test on a column, not a row named 1999
    tests = _tests(question)
    tested = {t for test in tests for t in ANALYSER.terms(f"{test.n} {test.n2} {_ordinal(question, test)}")}
    # "at least 100 km/h": a unit names the column tested, not rows ("games" may do both).
    units = {u for test in tests if (u := _unit(question, test.end)) in _MEASURES or "/" in u}
    tested |= {t for u in units for t in ANALYSER.terms(u)}
    q = q - tested or q
    # "First", "most" order the rows; a row saying "First round" is not named by them.
    q = q - _ordering(question) or q
    found = tables(text)
    quoted = _quote_tables(found, question, q, tests) if found and q else None
    return quoted if quoted is not None and (quoted.rows or quoted.distinct) else None


def _needed(s: _Scored, top: int) -> frozenset[str]:
    """The words a row must hold to be one the question names, from its best row's. A word
    only that row holds is its own detail, not the question's condition ("how many times was
    Lanny Poffo champion?": his rows, not the one saying "champion")."""
    need = s.row_hits[top]
    shared = frozenset(t for t in need if sum(t in h for h in s.row_hits) >= 2)
    if shared and shared != need and sum(shared <= h for h in s.row_hits) >= 2:
        return shared
    return need


def _set_aside(cell_terms: set[str], excluded: Sequence[set[str]]) -> bool:
    """Whether a row (its terms) is one the question sets aside: it holds all of one exclusion's terms."""
    return any(e <= cell_terms for e in excluded)


def _not(found: list[Table], question: str) -> re.Match[str] | None:
    """What "not" sets aside ("not from Canada"), unless cells say it: "did not qualify" names rows."""
    m = _NOT.search(question)
    quoted = any(q.start() < m.start() < q.end() for q in _QUOTED.finditer(question)) if m else False
    if not m or quoted or re.search(r"\bthan\b", m["what"], re.I):  # '"did not qualify"'; "not longer than 2 miles"
        return None
    said = re.compile(rf"\bnot\s+{re.escape(m['what'].split()[0])}", re.I)
    return None if any(said.search(cell) for t in found for row in t.rows for cell in row) else m


def _quote_tables(found: list[Table], question: str, q: set[str], tests: list[_Test]) -> TableQuote | None:
    # A test's figures ("from 14:08 to 15:48") test a column: they name no row.
    values = set(_VALUE.findall(question)) - {n for t in tests for n in (t.n, t.n2)}
    setting = _EXCEPT.search(question) or (None if _NONE.search(question) else _not(found, question))
    # "not from Canada or the Soviet Union": a row is set aside by either.
    excluded = [e for part in re.split(r",|\bor\b|\bnor\b", setting["what"]) if (e := set(ANALYSER.terms(part)) & q)] if setting else []
    set_aside = frozenset().union(*excluded)
    not_words = _words_for(question, set_aside) if excluded else []  # "Kenya" of "not from Kenya"
    numbered = _numbered(question)
    quoted = [m.strip().casefold() for m in _QUOTED.findall(question) if m.strip()]
    negative = bool(_NEGATIVE.search(question))
    scored = [_score(t, q - set_aside, set(ANALYSER.terms(t.caption)), values, excluded, numbered, quoted, negative)
              for t in found]
    ordinal = any(p.search(question) for p in (_MOST, _LEAST, _FIRST, _LAST))
    for sc in scored:
        # "Losses between 2007 and 2009": a table with rows of those years (its years name no
        # row); one bonus a test some of its rows pass.
        sc.score += TESTED_BONUS * sum(bool((passing := _passing(sc, question, t)) and passing[0]) for t in tests)
        # Pages are mostly about their big tables; a small one must match better to be chosen.
        sc.score += SIZE_PRIOR * math.log(1 + len(sc.table.rows))
        if ordinal and not sc.table.columns and sc.table.width <= 2:
            sc.score -= INFOBOX_PENALTY  # "first", "most": an order of rows, which a box of facts is not
    best = max(scored, key=lambda s: s.score)
    if best.score <= 0:
        return None
    table = best.table
    # The rows the question sets aside: "other than Cumberland County", "not from Canada".
    set_apart = {i for i, c in enumerate(best.cells) if _set_aside(c, excluded)}  # by the question's words
    aside = set_apart | best.denying if len(best.denying) < len(best.table.rows) else set(set_apart)
    top = max(range(len(table.rows)), key=lambda i: (best.row_scores[i], -i))
    named_rows = best.row_scores[top] > 0
    if named_rows:
        # Of rows naming it alike, the one with a cell that is all the name: "the Grand Prix"
        # is "Grand Prix", not "Malta Grand Prix".
        tied = [i for i, sc in enumerate(best.row_scores) if sc == best.row_scores[top]]
        if len(tied) > 1 and len(best.row_hits[top]) > 1:  # a name of one word says too little to prefer one
            top = next((i for i in tied if _names_wholly(table, i, best.row_hits[i])), top)
    most, least = bool(_MOST.search(question)), bool(_LEAST.search(question))
    first, last = _ordered_first(question), bool(_LAST.search(question))
    limit = ""
    if _ARITHMETIC.search(question):
        limit = f"Computing a difference or a total {NEEDS_MODEL}."

    candidates = [i for i, sc in enumerate(best.row_scores) if sc >= best.row_scores[top]] if named_rows else []
    others = _other_rows(best, top) if named_rows else []
    counts_cells = any(best.column_hits[j] for j in best.numeric)
    if named_rows and (verdict := _verdict(best, top, question, tests)):
        return TableQuote(table, [top], verdict=verdict, limit=limit)
    filtered = _filter(best, question, tests)
    left_out: tuple[list[str], int] | None = None  # "not from Kenya": its words, and the rows they set aside
    if filtered is not None:
        rows, words = filtered
        if aside & set(rows):  # "the top 3 not from Kenya"
            if not_words and (apart := set_apart & set(rows)):
                left_out = not_words, len(apart)
            rows = [i for i in rows if i not in aside]
        filtered = rows, words
        # The filter applies to the rows the question names; but "Croatia and what other
        # country had no gold?" names the row it does not ask for.
        if named_rows and not _ALSO.search(question):
            # None of them passes: the words named the thing counted ("in how many games …").
            need = _needed(best, top)
            named = [i for i in rows if need <= best.row_hits[i]]
            if not named and rows:
                # The best row named does not pass ("the first book by Harper & Brothers
                # between 1903 and 1923": "Book of Camps" is by them, but of 1928): the rows
                # named are those named like the best of the rows that pass.
                inner = max(rows, key=lambda i: (best.row_scores[i], -i))
                if best.row_scores[inner] > 0:
                    need = _needed(best, inner)
                    named = [i for i in rows if need <= best.row_hits[i]]
            rows = named or rows
            filtered = rows, words
        # "the first album after 1970": ordered among those; but "how many cars had a maximum
        # velocity of at least 100 km/h?" counts them.
        if rows and (most or least or first or last) and not _COUNT.search(question):
            candidates, named_rows = rows, True
            filtered = None
    if filtered is not None and not filtered[0] and named_rows:
        filtered = None  # nothing passes: the figure named a column ("Pop. 1998"), so show the rows named
    if filtered is not None:
        rows, words = filtered
        counting = bool(_COUNT.search(question))
        shown = MAX_ROWS if counting else MAX_LISTED  # the rows are the answer unless a count is
        return TableQuote(
            table,
            rows[:shown],
            count=len(rows) if table.complete else None,
            matched=words,
            left_out=left_out,
            limit=limit or (f"I can show the rows; counting exactly what you asked {NEEDS_MODEL}." if counting else ""),
            more=None if counting else _more(best, question, rows[shown:]),
        )
    than = _THAN_ROW.search(question)
    if than and named_rows and not _ARITHMETIC.search(question):
        beyond = _beyond(best, top, than)  # "which nation won more bronze medals than China?"
        if beyond is not None:
            rows, words = beyond
            return TableQuote(table, rows[:MAX_ROWS], count=len(rows) if table.complete else None, matched=words)
    if _ARITHMETIC.search(question) and others:  # "Italy and Spain combined": each one's row
        return TableQuote(table, [top, *others][:MAX_ROWS], limit=limit)
    if _SAME.search(question) and named_rows:
        same = _same_as(best, top, question)
        if same:
            counting = bool(_COUNT.search(question))  # "how many … the same score as Rybakov?"
            return TableQuote(
                table, [top, *same][:MAX_ROWS], count=len(same) if counting and table.complete else None,
                limit=limit, more=None if counting else _more(best, question, same[MAX_ROWS - 1:], top),
            )
    if _ALSO.search(question) and named_rows:
        # "Finland and what other nation earned three gold medals?": rows sharing the
        # named row's matches but for the words naming it alone.
        shared = frozenset(t for t in best.row_hits[top] if sum(t in h for h in best.row_hits) >= 2)
        also = [i for i, h in enumerate(best.row_hits) if i != top and shared and shared <= h]
        if also:
            return TableQuote(table, [top, *also][:MAX_ROWS], limit=limit, more=_more(best, question, also[MAX_ROWS - 1:], top))
    # "The least number of attendees" ranks by a column it names; it does not count.
    ranking = (most or least) and any(best.column_hits[j] for j in best.numeric)
    # The rows in question: those named (or filtered), else all but a totals row.
    pool = [i for i in (candidates if named_rows else range(len(table.rows))) if not table.is_total(i) and i not in aside]
    # "Connecticut or New York?": each side's row; "which was founded first, A or B?" orders those two.
    pair = _either(best, question) if named_rows and not _ARITHMETIC.search(question) else None
    if pair and not (most or least or first or last):
        # "Which was earlier, A or B?": the first of the two in time.
        first, last = bool(_EARLIER.search(question)), bool(_LATER.search(question))
    ordinal_pair = bool(pair) and (most or least or first or last)
    if pair and ordinal_pair:
        pool = pair
    counted = _COUNTED.search(question)
    # "How many venues are there?" over a column of venues: its different values.
    counts_column = not named_rows and counted and _alike(set(ANALYSER.terms(counted["what"])), _text_column_terms(best))
    if _COUNT.search(question) and (_DISTINCT.search(question) or counts_column):
        distinct = _distinct(best, pool)
        if distinct is not None and (_DISTINCT.search(question) or len(distinct[1]) < len(pool)):
            return TableQuote(table, [], distinct=distinct, limit=limit)
    if _COUNT.search(question) and not ranking:
        if named_rows:
            need = _needed(best, top)
            rows = [i for i, h in enumerate(best.row_hits) if need <= h]
            matched = _words_for(question, need)
        else:
            # Rows left as the question asks: "made the playoffs", the rows saying "did not make" set aside.
            kept = _words_for(question, best.refused) if best.denying and best.denying <= aside else []
            rows, matched = pool, kept
        # A question naming a row and a column of figures may ask for the figure: that row first.
        shown = [top, *(i for i in rows if i != top)] if named_rows and counts_cells else rows
        return TableQuote(
            table,
            shown[:MAX_ROWS],
            count=len(rows) if table.complete else None,
            matched=matched,
            left_out=None if named_rows or not not_words else (not_words, len(set_apart)),
            limit=limit or f"I can show the rows; counting exactly what you asked {NEEDS_MODEL}.",
        )

    if pair and not ordinal_pair and not set(pair) <= set(candidates[:1] + others):
        return TableQuote(table, list(dict.fromkeys([top, *pair]))[:MAX_ROWS], limit=limit)
    # "The tallest structure before the Burj Khalifa": the row next to the one named.
    after, before = bool(_AFTER.search(question)), bool(_BEFORE.search(question))
    if named_rows and after != before and not ordinal_pair:
        nearby = _neighbour(best, top, after=after)
        return TableQuote(table, [top, *nearby] if after else [*nearby, top], limit=limit)

    timed = bool(_SPEED.search(question)) and _comparator(best, question) is not None  # "the fastest swimmer": by times
    if _OFTEN.search(question) or ((most or least) and not timed and _only_asked(best, question)):
        # "The most common position": the value listed most often, figures or not; so too
        # "in which season did he compete in the most events?" when only the season is a column.
        often = _most_often(best, question, pool, fewest=bool(_LEAST.search(question)), figures=True)
        if often is not None:
            return often
    if most or least or first or last:
        # Rows the question names are what it compares ("first place in 2008": the 2008 rows).
        col = _comparator(best, question)
        if col is not None:
            valued = [(v, i) for i in pool if (v := _number(table.value(i, col))) is not None]
            if valued:
                rankish = bool(_RANKISH.match(table.column(col)))
                high = (most or last) and not (first or least)
                if rankish:
                    high = not high  # rank 1 is the best
                if _SPEED.search(question) and _RATE.search(table.column(col)):
                    high = not high  # "fastest" is the least time, but the highest speed
                # Among equal values, "last" means the last in the table's order.
                later = last and not first
                valued.sort(key=lambda x: (-x[0] if high else x[0], -x[1] if later else x[1]))
                top_value = valued[0][0]
                # Of a choice, both rows, the one asked for first: the figures show why.
                rows = [i for _, i in valued] if ordinal_pair else [i for v, i in valued if v == top_value][:MAX_ROWS]
                return TableQuote(table, rows, limit=limit)
        if ordinal_pair:  # nothing to order the two by: both, as the table lists them
            return TableQuote(table, sorted(pool), limit=limit)
        if (most or least) and not (first or last):
            often = _most_often(best, question, pool, fewest=least and not most)
            if often is not None:
                return often
        if first and not last:
            return TableQuote(table, pool[:1], limit=limit)
        if last and not first:
            return TableQuote(table, pool[-1:], limit=limit)

    if not named_rows:
        # "The only location not in France": the rows left, when they are few.
        return TableQuote(table, pool) if aside and len(pool) <= MAX_LISTED else None
    shown = MAX_LISTED if _LISTING.search(question) else MAX_ROWS
    rows = candidates[:1] + others if others else candidates
    return TableQuote(table, rows[:shown], limit=limit, more=_more(best, question, rows[shown:], top))


def _more(s: _Scored, question: str, rest: list[int], top: int | None = None) -> tuple[str, list[str]] | None:
    """The rows of a list not shown, by the column that names them: the one asked for
    ("which associations …"), else the one naming the question's row ("the same height as
    Natalia Varnakova": Candidate), else the table's first column of different words."""
    if not rest:
        return None
    numeric = set(s.numeric)
    asked = _ASKED.search(question)
    head = set(ANALYSER.terms(asked["what"])) if asked else set()
    text = [j for j in range(s.table.width) if j not in numeric]
    named = [j for j in text if _alike(head, s.column_terms[j])]
    naming = [
        j for j in text
        if top is not None and s.row_hits[top] & set(ANALYSER.terms(s.table.value(top, j)))
    ]
    labels = [j for j in text if len(set(cells := _filled(s.table, j))) >= 0.8 * len(cells) > 0]
    col = (named or naming or labels or [None])[0]
    values = [v for i in rest if (v := s.table.value(i, col))] if col is not None else []
    return (s.table.column(col), values) if col is not None and values else None


_SIDES = r"more|less|above|below|over|under|higher|lower|greater|fewer|larger|smaller|longer|shorter"
# "above or below 23000?", "more/less than 10 wins?": one side of a figure, the row's.
_EITHER_SIDE = re.compile(rf"\b(?P<a>{_SIDES})\s*(?:or|/)\s*(?P<b>{_SIDES})\b", re.I)
_YES_NO = re.compile(r"^\s*(?:is|was|are|were|did|does|do|has|have|had)\b", re.I)


def _verdict(s: _Scored, top: int, question: str, tests: list[_Test]) -> str:
    """For "is X above or below 23000?" or "does X have at least 10000?" asked of the
    row named: which side of the figure its value is on ("Above"), or "Yes"/"No"; "" else."""
    side, yes_no = _EITHER_SIDE.search(question), _YES_NO.match(question)
    if not tests or not (side or yes_no):
        return ""
    t = tests[0]
    passing = _passing(s, question, t)
    if passing is None or t.n2:
        return ""
    rows, _, col = passing
    passes = top in rows
    if side:  # the test is the side written next to the figure: "below 3" in "above or below 3"
        word = (side["b"] if passes else side["a"]).capitalize()
    else:
        word = "Yes" if passes else "No"
    return f"{word}: {s.table.column(col) or 'the value'} is {s.table.value(top, col)}, against {t.n}"


TIMES = ("before", "after", "since", "prior to", "previous to", "earlier than", "later than", "until", "in")
# "How many games did they play in October?": a month with no day or year, any year's.
_IN_MONTH = re.compile(r"\b(?:in|during)\s+(?P<n>january|february|march|april|may|june|july|august|september|october|"
                       r"november|december)\b(?!\s*,?\s*\d)", re.I)


@dataclass(frozen=True)
class _Test:
    """A test of a figure the question sets: "more than 500", "no more than 3", "between 2009 and 2013"."""

    op: str
    n: str  # as the question writes it
    start: int
    end: int
    n2: str = ""  # a range's other end
    no: bool = False
    cur: str = ""  # "$500": a column of money
    place: bool = False  # "3rd", "the top 5": a place, where less is better

    @property
    def words(self) -> str:
        return f"from {self.n} to {self.n2}" if self.n2 else f"{'not ' if self.no else ''}{self.op} {self.n}"

    @property
    def of_time(self) -> bool:
        """Whether the test is on a time: "before 1990"; a range of years. Not a time of
        day ("after 20:00"): that is in a column of clock times."""
        years = all(re.fullmatch(r"1[5-9]\d\d|20\d\d", v) for v in (self.n, self.n2))
        return ":" not in self.n and (self.op in TIMES or (bool(self.n2) and years))


def _ordinal(question: str, t: _Test) -> str:
    """The test's figure as an ordinal ("at least 2nd": "2nd"), or ""."""
    suffix = re.match(r"(?:st|nd|rd|th)\b", question[t.end:], re.I)
    return f"{t.n}{suffix.group(0)}" if suffix else ""


def _tests(question: str) -> list[_Test]:
    """The question's tests of figures, in its order."""
    found = [
        _Test(_EXCEEDS.sub("more than", m["op"].lower()), m["n"], m.start(), m.end(), no=bool(m["no"]), cur=m["cur"] or "")
        for m in _FILTER.finditer(question)
        # "The date next listed after June 14, 2010": the row beside that day's, not the days after it.
        if not (_DATE_MONTH.search(m["n"]) and _BESIDE.search(question))
    ] + [_Test("from", m["n"], m.start(), m.end(), n2=m["n2"]) for m in _RANGE.finditer(question)] + [
        _Test("from", f"{m[1]}0", m.start(), m.end(), n2=f"{m[1]}9") for m in _DECADE.finditer(question)
    ] + [
        _Test("in", m["n"], m.start(), m.end()) for m in _IN_MONTH.finditer(question)
    ] + [
        _Test("at most" if m["top"] or m["better"] else "at least", m["n"] or m["m"], m.start(), m.end(), place=True)
        for m in _PLACED.finditer(question)
    ]
    # "at least 3rd place" is 3rd or better: a lower place.
    ordinal = [t for t in found if not t.place and _ordinal(question, t)]
    found = [t for t in found if t not in ordinal] + [
        _Test({"at least": "at most", "at most": "at least"}.get(t.op, t.op), t.n, t.start, t.end, no=t.no, place=True)
        for t in ordinal
    ]
    return sorted(found, key=lambda t: t.start)


def _filter(s: _Scored, question: str, tests: list[_Test]) -> tuple[list[int], list[str]] | None:
    """Rows whose figures in the columns the question names pass its tests ("more than
    500 points"; "before 1990" in a column of years; "no wins"), and the tests in words."""
    # "More than 7 wins but less than 10": the rows that pass every test.
    # A test whose column the table lacks ("more than 10 points") is left out.
    passed = [one for t in tests if (one := _passing(s, question, t)) is not None]
    if (none := _zero(s, question, tests)) is not None:
        passed.append(none)
    if not passed:
        return None
    rows = sorted(set.intersection(*(set(p[0]) for p in passed)))
    return rows, [" and ".join(p[1] for p in passed)]


def _zero(s: _Scored, question: str, tests: list[_Test]) -> tuple[list[int], str, int] | None:
    """"Which country had no gold medals?": the rows with a zero (or nothing) in the column
    it names, the one named right after "no" when several are ("one silver but no bronze")."""
    # Not the "no" of a test ("no more than 8 wins").
    none = next((m for m in _NONE.finditer(question) if not any(t.start <= m.start() < t.end for t in tests)), None)
    named = [j for j in s.numeric if s.column_hits[j]]
    if not none or not named:
        return None
    after = set(ANALYSER.terms(" ".join(question[none.end():].split()[:4])))
    near = [j for j in named if _alike(after, s.column_terms[j])]
    col = max(near or named, key=lambda j: s.column_hits[j])
    rows = [
        i for i in range(len(s.table.rows))
        if (_number(s.table.value(i, col)) == 0 or s.table.value(i, col) in NONE_CELLS) and not s.table.is_total(i)
    ]
    return rows, f"{s.table.column(col)} 0", col


def _passing(s: _Scored, question: str, t: _Test) -> tuple[list[int], str, int] | None:
    """The rows whose figure in the column the test names passes it, the test in words, and the column."""
    n, n2 = (_number(v.replace(",", "")) or 0.0 for v in (t.n, t.n2 or t.n))
    numeric = s.numeric
    named = [j for j in numeric if s.column_hits[j]]
    if t.place:  # a place: a column of places ("Pos.", "Finish")
        placed = [j for j in numeric if _PLACE.match(s.table.column(j).strip()) or _RANKISH.match(s.table.column(j).strip())]
        if not placed:
            return None
        named = [j for j in named if j in placed] or placed
    elif t.of_time:  # a time: a column of years or dates ("Year" over "Season 1, 2, 3" for "before 2003")
        dated = [j for j in numeric if _dated(s.table, j)]
        named = [j for j in dated if _in_range(s.table, j, n)] or dated or named
    elif t.cur:  # an amount of money: a column of it
        named = named or [j for j in numeric if t.cur in s.table.column(j)]
    elif ":" in t.n:  # a time ("under 2:12:00"): a column of times, of those named if some are
        clocks = [j for j in numeric if _clocks(s.table, j)]
        named = [j for j in named if j in clocks] or named or clocks
    elif unit := _unit(question, t.end):  # "at least 100 km/h": the column in km/h
        measured = [j for j in numeric if _carries(s.table, j, unit)]
        named = [j for j in named if j in measured] or named or measured
    # "Seasons with no more than 8 wins": the column named beside the figure.
    after = set(ANALYSER.terms(" ".join([w for w in question[t.end:].split() if re.search(r"\w", w)][:3])))
    before = set(ANALYSER.terms(" ".join(question[: t.start].split()[-3:])))
    # Even by a word that names no row ("a total of more than 10": the Total column).
    named = named or [j for j in numeric if _alike(after | before, s.column_terms[j])]
    if not named:
        return None
    beside = next((words for words in (after, before) if any(_alike(words, s.column_terms[j]) for j in named)), set())
    # "460 points in their final score": "Final Points" over "Preliminary Points".
    col = max(named, key=lambda j: (len(_alike(beside, s.column_terms[j])), s.column_hits[j]))
    if re.search(rf"(?<![\d.]){re.escape(t.n)}(?![\d.])", s.table.column(col)):
        return None  # "the population after 1998" over "Pop. 1998": the figure names the column
    tests = {
        "more than": float.__gt__, "greater than": float.__gt__, "higher than": float.__gt__, "larger than": float.__gt__,
        "over": float.__gt__, "above": float.__gt__, "after": float.__gt__, "at least": float.__ge__,
        "since": float.__ge__, "less than": float.__lt__, "fewer than": float.__lt__, "lower than": float.__lt__,
        "smaller than": float.__lt__, "under": float.__lt__, "below": float.__lt__, "before": float.__lt__,
        "prior to": float.__lt__, "previous to": float.__lt__, "earlier than": float.__lt__,
        "later than": float.__gt__, "until": float.__le__, "at most": float.__le__,
        "faster than": float.__lt__, "quicker than": float.__lt__, "slower than": float.__gt__,  # of times
    }

    def test(v: float) -> bool:
        if t.n2:
            return min(n, n2) <= v <= max(n, n2)
        if t.op == "in":  # a month: yyyymmdd against 00mm00
            return v >= 100 and v // 100 % 100 == n // 100 % 100
        return tests[t.op](v, n) != t.no  # "no more than 3": at most 3

    def figure(cell: str) -> float | None:
        v = _number(cell)
        if v is None or not t.of_time or t.op == "in":
            return v
        if v >= 10_000 and n < 10_000:  # a date against a year ("before 1990"): its year
            return v // 10_000
        if v < 10_000 <= n and _DATE_MONTH.search(cell):  # "October 26" against a day of a year: the day
            return v + n // 10_000 * 10_000
        return v

    rows = [i for i in range(len(s.table.rows)) if (v := figure(s.table.value(i, col))) is not None and test(v)]
    return rows, f"{s.table.column(col) or 'value'} {t.words}", col


_COUNTED = re.compile(r"\b(?:how many|number of)\s+(?:different\s+|distinct\s+|unique\s+)?(?P<what>[\w-]+)", re.I)


def _text_column_terms(s: _Scored) -> set[str]:
    """The words naming the table's columns of text (not of figures)."""
    numeric = set(s.numeric)
    return {t for j in range(s.table.width) if j not in numeric for t in s.column_terms[j]}


def _in_range(table: Table, j: int, n: float) -> bool:
    """Whether column `j`'s figures are of `n`'s magnitude: years for a year, dates (as
    `_number` writes them) for a year too."""
    values = [v for i in range(len(table.rows)) if (v := _number(table.value(i, j))) is not None]
    return bool(values) and sorted(values)[len(values) // 2] >= n / 10


# "more bronze medals than China": a comparison with a row, not with a figure.
_THAN_ROW = re.compile(
    r"\b(?P<op>more|greater|higher|larger|bigger|longer|better|less|fewer|lower|smaller|shorter)\b"
    r"(?P<what>(?:\s+[\w-]+){1,3}?)\s+than\s+(?![\d$£€])",
    re.I,
)
_UP = {"more", "greater", "higher", "larger", "bigger", "longer", "better"}


def _beyond(s: _Scored, top: int, than: re.Match[str]) -> tuple[list[int], list[str]] | None:
    """Rows whose figure in the column named passes the named row's: "more bronze medals than China"."""
    what = set(ANALYSER.terms(than["what"]))
    columns = [j for j in s.numeric if _alike(what, s.column_terms[j])]
    if not columns:
        # "A higher tally than Ann Smith": a table with one measure (not years, dates or places) compares by it.
        columns = [j for j in s.numeric if not _dated(s.table, j) and not _PLACE.match(s.table.column(j).strip())]
        if len(columns) != 1:
            return None
    j = columns[0]
    mark = _number(s.table.value(top, j))
    if mark is None:
        return None
    up = than["op"].lower() in _UP
    rows = [
        i for i in range(len(s.table.rows))
        if i != top and not s.table.is_total(i) and (v := _number(s.table.value(i, j))) is not None and (v > mark if up else v < mark)
    ]
    return (rows, [f"{s.table.column(j)} {than['op'].lower()} than {s.table.value(top, j)}"]) if rows else None


def _distinct(s: _Scored, pool: list[int]) -> tuple[str, list[str]] | None:
    """The different values of the column the question names, in table order."""
    numeric = set(s.numeric)
    named = [j for j in range(s.table.width) if s.column_hits[j] and j not in numeric]
    if not named or not s.table.complete:
        return None
    j = max(named, key=lambda j: s.column_hits[j])
    values = list(dict.fromkeys(v for i in pool if (v := s.table.value(i, j))))
    return (s.table.column(j), values) if values else None


def _most_often(
    s: _Scored, question: str, pool: list[int], *, fewest: bool, figures: bool = False
) -> TableQuote | None:
    """"Which team won the most?": the value found in the most (or fewest) rows of the
    column the question names, when the column repeats its values; a column of figures
    ("Position: 2nd") only when asked how often (`figures`)."""
    numeric = set() if figures else set(s.numeric)
    named = [j for j in range(s.table.width) if s.column_hits[j] and j not in numeric]
    for j in sorted(named, key=lambda j: -s.column_hits[j]):
        values = Counter(v for i in pool if (v := s.table.value(i, j)))
        if len(values) < 2 or values.most_common(1)[0][1] < 2:
            continue  # every value once: nothing is more often than another
        ranked = sorted(values.items(), key=lambda kv: (kv[1] if fewest else -kv[1]))
        value, n = ranked[0]
        rows = [i for i in pool if s.table.value(i, j) == value]
        return TableQuote(s.table, rows[:MAX_ROWS - 1], often=(s.table.column(j), value, n, len(pool), fewest))
    return None


def _same_as(s: _Scored, top: int, question: str) -> list[int]:
    """Rows with the named row's figure in the column the question names (or, naming
    none, in every column of figures): "the same number of gold medals as Canada";
    or its value in a column of text named ("played the same position as Ameche")."""
    numeric = s.numeric
    words = [
        j for j in range(s.table.width)
        if s.column_hits[j] and j not in numeric and s.table.value(top, j)
        and not s.row_hits[top] & set(ANALYSER.terms(s.table.value(top, j)))  # not the column naming the row
    ]
    named = [j for j in numeric if s.column_hits[j]] or words[:1] or numeric
    if not named:
        return []
    key = [s.table.value(top, j) for j in named]
    return [i for i in range(len(s.table.rows)) if i != top and [s.table.value(i, j) for j in named] == key]


_CHOICE = re.compile(
    r"(?:^|[,:;]|\b(?:which|who|what|was|is|were|are|did|does|has|had|between|either)\b)(?P<left>[^,:;]*?)\bor\b"
    r"(?P<right>[^,:;?]*)",
    re.I,
)


def _either(s: _Scored, question: str) -> list[int] | None:
    """For a choice ("… Connecticut or New York?"), the row that best names each side, by
    the words that side does not share with the other; None unless both are found."""
    choice = None
    for choice in _CHOICE.finditer(question):
        pass  # the last "… or …" is the choice
    if choice is None:
        return None
    left, right = set(ANALYSER.terms(choice["left"])), set(ANALYSER.terms(choice["right"]))
    out = []
    for side in (left - right, right - left):
        hits = [len(c & side) for c in s.cells]
        if not side or max(hits, default=0) == 0:
            return None
        out.append(hits.index(max(hits)))
    return out if out[0] != out[1] else None


def _neighbour(s: _Scored, top: int, *, after: bool) -> list[int]:
    """The row after (or before) row `top` in time: past rows naming the same thing again
    ("George Case" managed two seasons), and the other way when the table lists its years
    newest first."""
    t = s.table
    dated = [j for j in s.numeric if _YEARISH.search(t.column(j))] or [j for j in s.numeric if _dated(t, j)]
    if dated:
        years = [v for i in range(len(t.rows)) if (v := _number(t.value(i, dated[0]))) is not None]
        if len(years) >= 3 and sum(b < a for a, b in zip(years, years[1:])) > 0.7 * (len(years) - 1):
            after = not after
    step = 1 if after else -1
    named = s.row_hits[top]
    j = max(range(t.width), key=lambda j: len(named & set(ANALYSER.terms(t.value(top, j)))))
    same = t.value(top, j)
    i = top + step
    while 0 <= i < len(t.rows) and same and t.value(i, j) == same:
        i += step
    return [i] if 0 <= i < len(t.rows) else []


def _names_wholly(table: Table, i: int, hits: frozenset[str]) -> bool:
    """Whether a cell of row `i` says the words it was found by, and nothing else."""
    return any(set(ANALYSER.terms(cell)) == hits for cell in table.rows[i])


def _other_rows(s: _Scored, top: int) -> list[int]:
    """Rows naming what the top row does not ("Netherlands and United States"), best first."""
    seen = set(s.row_hits[top])
    out = []
    for i in sorted(range(len(s.table.rows)), key=lambda i: (-s.row_scores[i], i)):
        new = s.row_hits[i] - seen
        if new and not s.row_hits[i] & seen:
            out.append(i)
            seen |= new
    return out


def _words_for(question: str, stems: frozenset[str]) -> list[str]:
    """The question's own words behind some of its terms, in its order."""
    words = re.findall(r"\w[\w'-]*", question)
    return [w for w, s in zip(words, ANALYSER.stems(words)) if s in stems]


def _listed(values: list[str]) -> str:
    """A column's values, the first `MAX_VALUES` of them, then how many more."""
    rest = len(values) - MAX_VALUES
    return ", ".join(values[:MAX_VALUES]) + (f", … ({rest} more)" if rest > 0 else "")


def render(tq: TableQuote, tab_id: str, *, cite: bool = True) -> str:
    """The quote as Markdown: the caption, then each row as "column: value" pairs."""
    t = tq.table
    lines = []
    head = t.caption or "The table"
    where = f" [Tab {tab_id}]" if cite else ""
    if tq.distinct is not None:
        column, values = tq.distinct
        lines.append(f"{head}{where}: {len(values)} different {column} value{'s' if len(values) != 1 else ''}: {_listed(values)}")
    elif tq.verdict:
        lines.append(f"{tq.verdict}. {head}{where}")  # the figure, then the row it is in
    elif tq.often is not None:
        column, value, n, of, fewest = tq.often
        lines.append(f"{head}{where}: the {column} {'least' if fewest else 'most'} often listed is “{value}” ({n} of {of} rows)")
    elif tq.count is not None:
        what = f" with “{' '.join(tq.matched)}”" if tq.matched else ""
        if tq.left_out is not None:  # "not in West Yorkshire": the rows left out, or that none was
            words, n = tq.left_out
            what += f", leaving out {n} with “{' '.join(words)}”" if n else f" (none with “{' '.join(words)}” to leave out)"
        lines.append(f"{head}: {tq.count} row{'s' if tq.count != 1 else ''}{what}{where}")
    elif t.caption or cite:  # under a tab's heading, a table without a caption needs no line of its own
        lines.append(f"{head}{where}")
    lines += [f"- {t.render(i)}" for i in tq.rows]
    if tq.more is not None:
        column, values = tq.more
        lines.append(f"- … and {len(values)} more ({column}: {_listed(values)})")
    elif tq.count is not None and tq.count > len(tq.rows):
        lines.append(f"- … and {tq.count - len(tq.rows)} more")
    if tq.limit:
        lines.append("")
        lines.append(tq.limit)
    return "\n".join(lines)
