"""The rows of a tab's tables that answer a question (tables parsed by `chatagent.tables`): the
row named by its values, the top of the column "most / first" compares by, the rows "how many" or
"more than 500" / "no wins" / "more wins than X" pass, the next row "after X", the side of a figure the
row named is on, two rows' figures set side by side, a column of words tallied. Beyond counts and the
difference, total or average of two figures it writes no value a cell does not hold, and says in one line
what needs a language model."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property

from ..ranking import QUESTION_WORDS, STOPWORDS_EN, Analyser
from ..tables import NONE_CELLS, Table, tables
from .question import COMPARATIVES, MONTH, MONTH_NUMBER, SUPERLATIVES, UNITS, YEAR, Question, quantities

ANALYSER = Analyser(STOPWORDS_EN | QUESTION_WORDS)
PHRASING = frozenset(ANALYSER.terms("times time total number amount listed list"))  # how asked, not what about
NEEDS_MODEL = "needs a language model: set one with `chatagent config` or the panel's ⚙"
COUNT_LIMIT = f"I can show the rows; counting exactly what you asked {NEEDS_MODEL}."
MAX_ROWS = 3  # rows shown for a count
MAX_LISTED = 5  # rows shown when they are the answer
SIZE_PRIOR = 0.7  # weight of a table's size (log rows) in choosing it
INFOBOX_PENALTY = 2.0  # "first", "most" order rows, which a box of facts has none of
PREFIX = 5  # stems sharing this many first letters name the same thing ("attendees", "attendance")

_NUMBER = re.compile(r"-?(?:\d[\d,]*(?:\.\d+)?|\.\d+)")
_CLOCK = re.compile(r"\s*(\d{1,3}):(\d{2})(?::(\d{2}))?(\.\d+)?(?![\d:])")
_MONTH_IN = re.compile(rf"\b({MONTH})", re.I)
_DAY = re.compile(r"\b([0-3]?\d)(?:st|nd|rd|th)?\b")
_YEARISH = re.compile(r"\b(year|years|date|dates|season|born|founded|established|opened|released|built|held)\b", re.I)
_RANKISH = re.compile(r"^(#|no\.?|rank|ranking|pos\.?|position|place|placing|pl\.?|seed)$", re.I)
_TOTAL_COLUMN = re.compile(r"^(total|overall|sum|tot\.?)\b", re.I)

_UP = {w for w, (_, s) in SUPERLATIVES.items() if s > 0} - {"latest", "newest", "youngest", "fastest", "quickest"}
_DOWN = {w for w, (_, s) in SUPERLATIVES.items() if s < 0} - {"earliest", "oldest", "slowest"}
_MOST = re.compile(r"\b(?<!at )(" + "|".join(sorted(_UP | {"maximum", "top(?!\\s*\\d)", "slowest"})) + r")\b", re.I)
_LEAST = re.compile(r"\b(?<!at )(" + "|".join(sorted(_DOWN | {"minimum", "fastest", "quickest"})) + r")\b", re.I)
_SPEED = re.compile(r"\b(fastest|quickest|slowest)\b", re.I)
_TIMED = re.compile(r"\btime\b|speed|km/h|mph|per hour", re.I)
_FIRST = re.compile(r"\b(first|earliest|oldest|original|initial|debut)\b", re.I)
_LAST = re.compile(r"\b(last|latest|newest|most recent|final|youngest|recently)\b", re.I)
_PLACED_FIRST = re.compile(r"\b(?:(?:finish(?:ed|es)?|placed|ranked|ended)\s+(?:in\s+)?|came\s+in\s+)first\b", re.I)
# The question asks about a table as such ("the last one listed").
LISTED = re.compile(r"\b(?:listed|on (?:the|this) (?:list|chart|table)|(?:of|in) (?:the|this) (?:list|chart|table))\b", re.I)
_AFTER = re.compile(r"\b(after|next|following|succeeded|subsequent)\b", re.I)
_BEFORE = re.compile(r"\b(before|previous|preceding|prior|preceded)\b", re.I)
_COUNT = re.compile(r"\b(how many|number of|total amount of|count|times)\b", re.I)
_DIFFER = re.compile(r"\b(difference|how (many|much) (more|less|fewer|longer|shorter|higher|lower|older|younger))\b", re.I)
_ARITHMETIC = re.compile(rf"{_DIFFER.pattern}|\b(total(?! (?:number|amount))|sum|combined|average|altogether|in all)\b", re.I)
# A value typed with punctuation inside ("1:05", "2–1"), or a code ("GL-B-5").
_VALUE = re.compile(r"\d+(?:[:–\-/]\d+)+|(?<![\w-])[A-Za-z]+(?:-[A-Za-z0-9]+)*-\d+(?![\w-])")
_DATE = rf"{MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}|\d{{1,2}}(?:st|nd|rd|th)?\s+{MONTH},?\s+\d{{4}}|{MONTH},?\s+\d{{4}}"
_OPS = {"more than": ">", "greater than": ">", "higher than": ">", "larger than": ">", "over": ">", "above": ">",
        "exceed": ">", "exceeds": ">", "exceeded": ">", "after": ">", "later than": ">", "at least": ">=",
        "since": ">=", "less than": "<", "fewer than": "<", "lower than": "<", "smaller than": "<", "under": "<",
        "below": "<", "before": "<", "prior to": "<", "earlier than": "<", "until": "<=", "at most": "<="} | {
        f"{c} than": ">" if sign > 0 else "<" for c, (dim, sign) in COMPARATIVES.items() if dim not in (None, "time")}
_FILTER = re.compile(r"\b(?P<no>no |not )?(?P<op>" + "|".join(sorted(_OPS, key=len, reverse=True)) +
                     rf")\s+(?P<cur>[$£€])?(?P<n>{_DATE}|\d{{1,3}}:\d{{2}}(?::\d{{2}})?|\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?"
                     r"|\d+(?:\.\d+)?)(?!\d|,\d)", re.I)
_RANGE = re.compile(r"\b(?:between|from)\s+(?:[a-z]+\s+)?(?P<n>\d{1,2}:\d{2}|\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)"
                    r"(?:\s+(?:and|to|through)\s+|\s*[-–]\s*)(?P<n2>\d{1,2}:\d{2}|\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\d:]|,\d)",
                    re.I)
# "other than X", "not from X", "never in X": rows holding X are set aside (unless cells say "not X").
_EXCEPT = re.compile(r"\b(?P<how>other than|besides|beside|except(?: for)?|apart from|aside from|excluding|not counting|"
                     r"not|n't|never)\s+(?P<what>[^,?]+?)(?=,|\?|\.|$|\s+(?:who|what|which|where|when|how|is|was|are|"
                     r"were|did|does|do|has|had|have|between|before|after|since)\b)", re.I)
# "no gold medals", "did not win any titles", "zero points": rows with nothing in a column.
_NONE = re.compile(r"\b(?:no|zero|without|(?:not|n't|never) (?:\w+ ){0,3}(?:any|a|an))\b", re.I)
# "above or below 3000?", "more or less than 10?": which side of a figure the named row is on.
_SIDES = r"more|less|above|below|over|under|higher|lower|greater|fewer|larger|smaller|longer|shorter"
_EITHER_SIDE = re.compile(rf"\b(?P<a>{_SIDES})\s*(?:or|/)\s*(?P<b>{_SIDES})\b", re.I)
_YES_NO = re.compile(r"^\s*(?:is|was|are|were|did|does|do|has|have|had)\b", re.I)
_ASKED = re.compile(r"\b(?:what|which|whose)\s+(?:(?:is|was|were|are|the)\s+)*(?P<what>\w+)", re.I)
# "more wins than X": a figure against another row's, not against a number.
_THAN_ROW = re.compile(rf"\b(?P<op>{'|'.join(COMPARATIVES)})\b(?P<what>(?:\s+[\w-]+){{0,3}}?)\s+than\s+(?![\d$£€])", re.I)
_SUM = re.compile(r"\b(total|sum|combined|altogether|in all|together)\b", re.I)
_OFTEN = re.compile(r"\b(?:most|least)\s+(?:often|frequent\w*|common\w*)\b", re.I)
_MOST_OF = re.compile(r"\b(?:most|least|fewest)\b", re.I)  # a count of rows, unless a column of figures is named
_DISTINCT = re.compile(r"\b(different|distinct|unique|separate|various)\b", re.I)
_SAME = re.compile(r"\b(?:same|as many|as much)\s+(?P<what>(?:[\w'-]+\s+){0,4}?)as\b", re.I)
_LISTING = re.compile(r"\b(?:list|name (?:all|the|each|every)|what are|which are|who are|each|every|all the)\b", re.I)
# What a table's header abbreviates, as questions spell it.
_HEADER_WORDS = {
    "w": "wins won", "l": "losses lost", "d": "draws drawn", "pts": "points", "att": "attendance",
    "apps": "appearances", "pop": "population", "%": "percent percentage", "nation": "country", "country": "nation",
    "nationality": "country nation", "nat": "nationality country nation", "name": "player athlete person",
    "player": "name", "athlete": "name", "result": "score", "score": "result",
}


@dataclass
class TableQuote:
    """What to show from one table, and what the offline model cannot add to it."""

    table: Table
    rows: list[int]
    count: int | None = None  # rows that match a "how many", when all were seen
    matched: list[str] = field(default_factory=list)  # the words (or tests) the counted rows share
    limit: str = ""  # a line on what needs a language model
    verdict: str = ""  # "Yes: Points is 12, against 10": the named row's figure against the question's test


def number(cell: str) -> float | None:
    """A cell's figure: a date sorts by time ("3 Sep 1921" → 19210903), a time in its smallest unit."""
    month = _MONTH_IN.search(cell)
    if month:
        year = YEAR.search(cell)
        day = _DAY.search(YEAR.sub(" ", cell))
        return float((int(year.group(1)) if year else 0) * 10_000 + MONTH_NUMBER[month.group(1)[:3].lower()] * 100
                     + (int(day.group(1)) if day else 0))
    if clock := _CLOCK.match(cell):
        parts = [int(p) for p in clock.group(1, 2, 3) if p is not None]
        return float(sum(p * 60 ** k for k, p in enumerate(reversed(parts)))) + float(clock.group(4) or 0)
    m = _NUMBER.search(cell)  # a digit, then digits and commas: always a float once the commas are gone
    return float(m.group(0).replace(",", "")) if m else None


def column_words(name: str) -> str:
    """A column's name with what its abbreviations stand for ("Pts": "Pts points")."""
    return f"{name} " + " ".join(_HEADER_WORDS.get(w.casefold(), "") for w in re.findall(r"[A-Za-z]+|%", name))


def _alike(q: set[str], names: set[str]) -> set[str]:
    """The question's terms a column's name holds, or a word starting the same way."""
    prefixes = {n[:PREFIX] for n in names if len(n) >= PREFIX}
    return {t for t in q if t in names or (len(t) >= PREFIX and t[:PREFIX] in prefixes)}


def _filled(table: Table, j: int) -> list[str]:
    return [v for i in range(len(table.rows)) if (v := table.value(i, j)) not in NONE_CELLS]


def _dated(table: Table, j: int) -> bool:
    """A column of times: named so ("Year"), or all of whose figures are years or dates."""
    values = _filled(table, j)
    return bool(_YEARISH.search(table.column(j))) or bool(values) and all(
        YEAR.fullmatch(v.strip()) or _MONTH_IN.search(v) and YEAR.search(v) for v in values)


def _clocks(table: Table, j: int) -> bool:
    values = _filled(table, j)
    return bool(values) and sum(bool(_CLOCK.match(v)) for v in values) >= 0.6 * len(values)


@dataclass
class _Scored:
    table: Table
    cells: list[set[str]]  # each row's terms
    row_scores: list[float]
    row_hits: list[frozenset[str]]
    column_terms: list[set[str]]
    column_hits: list[int]
    score: float

    @cached_property
    def numeric(self) -> list[int]:
        """Columns most of whose cells hold a figure."""
        figures = [[number(v) for v in _filled(self.table, j)] for j in range(self.table.width)]
        return [j for j, fs in enumerate(figures) if len(fs) >= 2 and sum(f is not None for f in fs) >= 0.6 * len(fs)]


def _score(table: Table, q: set[str], caption: set[str], values: set[str]) -> _Scored:
    column_terms = [set(ANALYSER.terms(column_words(table.column(j)))) for j in range(table.width)]
    column_hits = [len(_alike(q, c)) for c in column_terms]
    q = q - _alike(q, set().union(*column_terms))  # a word naming a column names no row
    texts = [" ".join(r) for r in table.rows]
    cells = [set(t) | {v for v in values if v in text} for t, text in zip(ANALYSER.analyse(texts), texts)]
    held = set().union(*cells) if cells else set()
    for t in q - held:  # "Kenyans" names the rows saying "Kenya"
        kin = {c for c in held if len(t) >= PREFIX and len(c) >= PREFIX and (t.startswith(c) or c.startswith(t))}
        for cell in cells:
            if cell & kin:
                cell.add(t)
    q = q | values
    df = Counter(t for c in cells for t in c & q)
    idf = {t: math.log(1 + len(cells) / df[t]) for t in df}
    hits = [frozenset(c & q) for c in cells]
    row_scores = [math.fsum(idf[t] for t in h) for h in hits]  # fsum: ties tie in every process
    score = max(row_scores, default=0.0) + 1.5 * sum(column_hits) + 0.5 * len(caption & q)
    return _Scored(table, cells, row_scores, hits, column_terms, column_hits, score)


def _comparator(s: _Scored, question: str) -> int | None:
    """The column a superlative compares by: a numeric column named; for "first / last", of years or dates."""
    named = [j for j in s.numeric if s.column_hits[j]]
    asked = _ASKED.search(question)
    if asked and len(named) > 1:  # "which season had the most points?": the points are compared
        head = set(ANALYSER.terms(asked["what"]))
        named = [j for j in named if not _alike(head, s.column_terms[j])] or named
    ranks = _MOST.search(question) or _LEAST.search(question)
    timed = [j for j in s.numeric if _clocks(s.table, j) or _TIMED.search(s.table.column(j))]
    if _SPEED.search(question) and not named and timed:
        return timed[0]
    if ranks and not named:
        totals = [j for j in s.numeric if _TOTAL_COLUMN.match(s.table.column(j))]
        # "The longest", "the cheapest": by the column whose cells are lengths or durations, prices.
        dims = (Question.parse(question).direction or ((), 0))[0]
        measured = [j for j in s.numeric if any(q.dimension in dims for c in _filled(s.table, j)[:5] for q in quantities(c))]
        if totals or measured:
            return measured[0] if measured else totals[-1]
    dated_named = [j for j in named if _dated(s.table, j)]
    if named and (ranks or dated_named):
        return max(named if ranks else dated_named, key=lambda j: s.column_hits[j])
    if (_first(question) or _LAST.search(question)) and not LISTED.search(question):
        return next((j for j in s.numeric if _dated(s.table, j)), None)
    return None


def _first(question: str) -> bool:
    """Asks for the first of some rows, not for a first place."""
    return bool(_FIRST.search(_PLACED_FIRST.sub(" ", question)))


@dataclass(frozen=True)
class _Test:
    op: str  # > >= < <= or "range"
    n: float
    n2: float
    words: str
    start: int
    end: int
    of_time: bool = False
    cur: str = ""


def _tests(question: str) -> list[_Test]:
    """The question's tests of figures: "more than 500", "not before 1990", "from 5 to 8"."""
    out = []
    for m in _FILTER.finditer(question):
        op = {">": "<=", ">=": "<", "<": ">=", "<=": ">"}[_OPS[m["op"].lower()]] if m["no"] else _OPS[m["op"].lower()]
        n = number(m["n"].replace(",", "")) or 0.0
        timed = m["op"].lower() in ("before", "after", "since", "until", "prior to", "earlier than", "later than")
        out.append(_Test(op, n, n, f"{m['no'] or ''}{m['op']} {m['n']}".lower(), m.start(), m.end(), timed, m["cur"] or ""))
    for m in _RANGE.finditer(question):
        a, b = (number(v.replace(",", "")) or 0.0 for v in (m["n"], m["n2"]))
        years = all(YEAR.fullmatch(v) for v in (m["n"], m["n2"]))
        out.append(_Test("range", min(a, b), max(a, b), f"from {m['n']} to {m['n2']}", m.start(), m.end(), years))
    return sorted(out, key=lambda t: t.start)


def _unit(question: str, end: int) -> str:
    m = re.match(r"\s*(%|[a-z]+/[a-z]+|[a-z]+)", question[end:], re.I)
    word = m[1].lower() if m else ""
    return word if word == "%" or "/" in word or word in UNITS else ""


def _passing(s: _Scored, question: str, t: _Test) -> tuple[list[int], str, int] | None:
    """The rows whose figure in the column the test names passes it, the test in words, and the column."""
    numeric, table = s.numeric, s.table
    named = [j for j in numeric if s.column_hits[j]]
    if t.of_time:
        named = [j for j in numeric if _dated(table, j)] or named
    elif t.cur:
        named = named or [j for j in numeric if t.cur in table.column(j)]
    elif unit := _unit(question, t.end):
        written = rf"(?<![\w%]){re.escape(unit)}(?![\w%])"
        measured = [j for j in numeric if re.search(written, table.column(j), re.I)
                    or sum(bool(re.search(rf"\d\s*{re.escape(unit)}", c, re.I)) for c in _filled(table, j)) * 2
                    > len(_filled(table, j))]
        named = [j for j in named if j in measured] or named or measured
    after = set(ANALYSER.terms(" ".join(question[t.end:].split()[:3])))
    before = set(ANALYSER.terms(" ".join(question[: t.start].split()[-3:])))
    named = named or [j for j in numeric if _alike(after | before, s.column_terms[j])]
    if not named:
        return None
    beside = next((w for w in (after, before) if any(_alike(w, s.column_terms[j]) for j in named)), set())
    col = max(named, key=lambda j: (len(_alike(beside, s.column_terms[j])), s.column_hits[j]))
    if re.search(rf"(?<![\d.]){t.n:g}(?![\d.])", table.column(col)):
        return None  # "the population after 1998" over "Pop. 1998": the figure names the column

    def passes(v: float) -> bool:
        if t.of_time and v >= 10_000 > t.n:
            v = v // 10_000  # a date against a year: its year
        return {"range": t.n <= v <= t.n2, ">": v > t.n, ">=": v >= t.n, "<": v < t.n, "<=": v <= t.n}[t.op]

    rows = [i for i in range(len(table.rows)) if (v := number(table.value(i, col))) is not None and passes(v)]
    return rows, f"{table.column(col) or 'value'} {t.words}", col


def _zero(s: _Scored, question: str, tests: list[_Test]) -> tuple[list[int], str, int] | None:
    """"Which team had no wins?": rows with 0 or nothing in the column named (next after "no", if several)."""
    none = next((m for m in _NONE.finditer(question) if not any(t.start <= m.start() < t.end for t in tests)), None)
    named = [j for j in s.numeric if s.column_hits[j]]
    if not none or not named:
        return None
    after = set(ANALYSER.terms(" ".join(question[none.end():].split()[:4])))
    col = max([j for j in named if _alike(after, s.column_terms[j])] or named, key=lambda j: s.column_hits[j])
    rows = [i for i in range(len(s.table.rows)) if not s.table.is_total(i)
            and (number(v := s.table.value(i, col)) == 0 or v in NONE_CELLS)]
    return rows, f"{s.table.column(col)} 0", col


def _set_aside(found: list[Table], question: str) -> re.Match[str] | None:
    """What the question sets aside; not "not" in a test ("not more than") or said by cells ("did not finish")."""
    found_aside = list(_EXCEPT.finditer(question))
    if m := next((m for m in found_aside if m["how"].lower() not in ("not", "n't", "never")), None):
        return m
    if _NONE.search(question) or not found_aside or re.search(r"\bthan\b", (m := found_aside[0])["what"], re.I):
        return None
    said = re.compile(rf"\b(?:not|n't|never)\s+{re.escape(m['what'].split()[0])}", re.I)
    return None if any(said.search(cell) for t in found for row in t.rows for cell in row) else m


def _verdict(s: _Scored, top: int, question: str, tests: list[_Test]) -> str:
    """"Is X above or below 3000?", "did X score at least 10?": the side the row named is on, or Yes/No."""
    side = _EITHER_SIDE.search(question)
    asks = bool(tests) and tests[0].op != "range" and bool(side or _YES_NO.match(question))
    passing = _passing(s, question, tests[0]) if asks else None
    if passing is None or (v := s.table.value(top, passing[2])) in NONE_CELLS:
        return ""
    passes = top in passing[0]
    word = (side["b"] if passes else side["a"]).capitalize() if side else "Yes" if passes else "No"
    return f"{word}: {s.table.column(passing[2]) or 'the value'} is {v}, against {tests[0].n:g}"


def _label(s: _Scored, i: int) -> str:
    """The cell that names row `i` in the question's words."""
    return max(s.table.rows[i], key=lambda c: len(s.row_hits[i] & set(ANALYSER.terms(c))))


def _figure_column(s: _Scored, rows: list[int], what: set[str]) -> int | None:
    """The column of figures rows are compared by: one named (by `what`, else by the question), else a total, else the
    only measure."""
    named = [j for j in s.numeric if _alike(what, s.column_terms[j])] or [j for j in s.numeric if s.column_hits[j]]
    measures = [j for j in s.numeric if not _dated(s.table, j) and not _RANKISH.match(s.table.column(j))]
    totals = [j for j in measures if _TOTAL_COLUMN.match(s.table.column(j))][-1:]
    cols = [j for j in named or totals or measures[:len(measures) == 1]
            if all(number(s.table.value(i, j)) is not None for i in rows)]
    return max(cols, key=lambda j: s.column_hits[j]) if cols else None


def _pair(s: _Scored, top: int, others: list[int], than: re.Match[str] | None, question: str) -> list[int] | None:
    """The two rows a question sets side by side: either side of "than", else the two it names, as it names them."""
    if than:
        right = set(ANALYSER.terms(question[than.end():]))
        left = set(ANALYSER.terms(question[:than.start()])) - right
        b = max(range(len(s.table.rows)), key=lambda i: (len(s.row_hits[i] & right), s.row_scores[i], -i))
        a = max(range(len(s.table.rows)), key=lambda i: (i != b, len(s.row_hits[i] & left), s.row_scores[i], -i))
        return [a, b] if a != b and s.row_hits[a] & left and s.row_hits[b] & right else None
    at = {i: min((question.lower().find(w.lower()) for w in _words_for(question, s.row_hits[i])), default=0)
          for i in (top, *others[:1])}
    return sorted(at, key=at.__getitem__) if others else None


def _two_rows(s: _Scored, pair: list[int], question: str, than: re.Match[str] | None) -> str:
    """Two rows' figures: their difference, total or average, or which is ahead ("did A win more than B?")."""
    graded, arithmetic, summed = Question.parse(question).graded, _ARITHMETIC.search(question), _SUM.search(question)
    col = _figure_column(s, pair, set(ANALYSER.terms(than["what"])) if than else set())
    if col is None or not (graded or arithmetic or summed) or _clocks(s.table, col):
        return ""
    a, b = (number(s.table.value(i, col)) or 0.0 for i in pair)
    if _dated(s.table, col):  # dates: their years
        a, b = (v // 10_000 if v >= 10_000 else v for v in (a, b))
    name, (x, y) = s.table.column(col) or "the value", (f"{s.table.value(i, col)} ({_label(s, i)})" for i in pair)
    average = "average" in question.lower()  # a difference, an average, a verdict, a total: the first asked
    what, v = ("Difference", abs(a - b)) if _DIFFER.search(question) else ("Average", (a + b) / 2) if average else \
        ("", 0.0) if graded else ("Together", a + b)
    if what:
        return f"{what}: {f'{v:,.2f}'.rstrip('0').rstrip('.')}, of {name} {x} and {y}"
    up = (graded[2] > 0) != bool(_RANKISH.match(s.table.column(col)))  # rank 1 is ahead
    ahead, behind = pair if (a > b) == up else pair[::-1]
    said = ("Yes: " if ahead == pair[0] and a != b else "No: ") if _YES_NO.match(question) else ""
    if a == b:
        return f"{said}The same {name}: {x} and {y}"
    return (f"{said}{_label(s, ahead)}: {name} {s.table.value(ahead, col)}, "
            f"against {s.table.value(behind, col)} for {_label(s, behind)}")


def _relative(s: _Scored, top: int, question: str, than: re.Match[str] | None) -> tuple[list[int], str, int] | None:
    """Rows judged by the named row's cell: "more wins than A" beyond its figure, "the same city as A" sharing it."""
    t, same = s.table, _SAME.search(question)
    if than and (col := _figure_column(s, [top], set(ANALYSER.terms(than["what"])))) is not None:
        mark, sign = number(t.value(top, col)) or 0.0, COMPARATIVES[than["op"].lower()][1]
        rows = [i for i in range(len(t.rows)) if not t.is_total(i)
                and ((number(t.value(i, col)) or mark) - mark) * sign > 0]
        return rows, f"{t.column(col)} {than['op'].lower()} than {t.value(top, col)}", col
    named = [j for j in range(t.width) if same and _alike(set(ANALYSER.terms(same["what"])), s.column_terms[j])
             and t.value(top, j) not in NONE_CELLS and not s.row_hits[top] & set(ANALYSER.terms(t.value(top, j)))]
    if not named:  # (not the column naming the row)
        return None
    j = max(named, key=lambda j: s.column_hits[j])
    rows = [i for i in range(len(t.rows)) if i != top and t.value(i, j) == t.value(top, j)]
    return rows, f"{t.column(j)} {t.value(top, j)}", j


def _tally(s: _Scored, pool: list[int], question: str, distinct: bool) -> tuple[str, list[int]]:
    """A column of words the question names: its different values ("how many different cities?"), or the one
    found in the most (or fewest) rows ("which city is listed most often?")."""
    often = _OFTEN.search(question)  # "the most common place": figures too ("2nd")
    words = [j for j in range(s.table.width) if s.column_hits[j] and (often or j not in s.numeric)]
    for j in sorted(words, key=lambda j: -s.column_hits[j]):
        counts = Counter(v for i in pool if (v := s.table.value(i, j)) not in NONE_CELLS)
        if distinct and s.table.complete and counts:
            return f"{len(counts)} different {s.table.column(j)}: {', '.join(list(counts)[:MAX_LISTED])}", []
        if not distinct and len(counts) >= 2 and max(counts.values()) >= 2:
            fewest = bool(_LEAST.search(question)) and not _MOST.search(question)
            value, n = sorted(counts.items(), key=lambda kv: kv[1] if fewest else -kv[1])[0]
            rows = [i for i in pool if s.table.value(i, j) == value][:MAX_ROWS]
            return f"{value}: {n} of {len(pool)} rows ({s.table.column(j)})", rows
    return "", []


def _neighbour(s: _Scored, top: int, *, after: bool) -> list[int]:
    """The row after (or before) row `top` in time, past rows naming the same thing again."""
    t = s.table
    dated = [j for j in s.numeric if _dated(t, j)]
    if dated:
        years = [v for i in range(len(t.rows)) if (v := number(t.value(i, dated[0]))) is not None]
        if len(years) >= 3 and sum(b < a for a, b in zip(years, years[1:])) > 0.7 * (len(years) - 1):
            after = not after  # listed newest first
    step, named = (1 if after else -1), s.row_hits[top]
    j = max(range(t.width), key=lambda j: len(named & set(ANALYSER.terms(t.value(top, j)))))
    i = top + step
    while 0 <= i < len(t.rows) and t.value(top, j) and t.value(i, j) == t.value(top, j):
        i += step
    return [i] if 0 <= i < len(t.rows) else []


def _other_rows(s: _Scored, top: int) -> list[int]:
    """Rows naming more that the top row does not than what it does ("Ann Lee or Tom Lee"), best first."""
    seen, out = set(s.row_hits[top]), []
    for i in sorted(range(len(s.table.rows)), key=lambda i: (-s.row_scores[i], i)):
        new = s.row_hits[i] - seen
        if len(new) > len(s.row_hits[i] & seen):
            out.append(i)
            seen |= new
    return out


def _needed(s: _Scored, top: int) -> frozenset[str]:
    """The words a row must hold to be one the question names: those its best row shares with others."""
    need = s.row_hits[top]
    shared = frozenset(t for t in need if sum(t in h for h in s.row_hits) >= 2)
    return shared if shared and shared != need and sum(shared <= h for h in s.row_hits) >= 2 else need


def _words_for(question: str, stems: frozenset[str]) -> list[str]:
    words = re.findall(r"\w[\w'-]*", question)
    return [w for w, s in zip(words, ANALYSER.stems(words)) if s in stems]


def quote(text: str, question: str, title: str = "") -> TableQuote | None:
    """The rows of `text`'s tables that answer `question`, or None when no table is about it.
    The page's `title` words name no row, unless the question has no other words."""
    q = set(ANALYSER.terms(re.sub(r"\bhow\s+(long|far|old)\b", "how", question, flags=re.I))) - PHRASING
    q = q - set(ANALYSER.terms(title)) or q
    tests = _tests(question)
    tested = {t for test in tests for t in ANALYSER.terms(f"{question[test.start:test.end]} {_unit(question, test.end)}")}
    q = q - tested or q
    ordering = {t for p in (_MOST, _LEAST, _FIRST, _LAST) for m in p.finditer(question) for t in ANALYSER.terms(m[0])}
    q = q - ordering or q
    found = tables(text)
    quoted = _quote_tables(found, question, q, tests) if found and q else None
    return quoted if quoted is not None and (quoted.rows or quoted.verdict) else None


def _quote_tables(found: list[Table], question: str, q: set[str], tests: list[_Test]) -> TableQuote | None:
    values = set(_VALUE.findall(question))
    # "other than X", "not from X": rows holding all of X's words are set aside.
    setting = _set_aside(found, question)
    excluded = [e for part in re.split(r",|\bor\b|\bnor\b", setting["what"]) if (e := set(ANALYSER.terms(part)) & q)] \
        if setting else []
    q = q - set().union(*excluded)
    ordinal = any(p.search(question) for p in (_MOST, _LEAST, _FIRST, _LAST))
    scored = [_score(t, q, set(ANALYSER.terms(t.caption)), values) for t in found]
    for sc in scored:
        sc.score += sum(bool((p := _passing(sc, question, t)) and p[0]) for t in tests)
        sc.score += SIZE_PRIOR * math.log(1 + len(sc.table.rows))
        if ordinal and not sc.table.columns and sc.table.width <= 2:
            sc.score -= INFOBOX_PENALTY
    best = max(scored, key=lambda s: s.score)
    if best.score <= 0:
        return None
    table = best.table
    held = set().union(*best.cells)  # "not based in Portvale": the rows saying "Portvale"
    aside = {i for i, c in enumerate(best.cells) if any(e & held and e & held <= c for e in excluded)}
    for i in aside:
        best.row_scores[i], best.row_hits[i] = 0.0, frozenset()
    top = max(range(len(table.rows)), key=lambda i: (best.row_scores[i], -i))
    named_rows = best.row_scores[top] > 0
    most, least = bool(_MOST.search(question)), bool(_LEAST.search(question))
    first, last = _first(question), bool(_LAST.search(question))
    counting = bool(_COUNT.search(question))
    limit = f"Computing a difference or a total {NEEDS_MODEL}." if _ARITHMETIC.search(question) else ""
    candidates = [i for i, sc in enumerate(best.row_scores) if sc >= best.row_scores[top]] if named_rows else []
    others = _other_rows(best, top) if named_rows else []
    if named_rows and (verdict := _verdict(best, top, question, tests)):
        return TableQuote(table, [top], verdict=verdict, limit=limit)
    than = _THAN_ROW.search(question)
    pair = _pair(best, top, others, than, question) if named_rows else None
    if pair and (said := _two_rows(best, pair, question, than)):
        return TableQuote(table, pair, verdict=said)
    # "Longer than 20 km", "no titles", "more wins than A": the rows that pass every test.
    relative = _relative(best, top, question, than) if named_rows and not pair else None
    passed = [p for p in [*(_passing(best, question, t) for t in tests), _zero(best, question, tests), relative]
              if p is not None]
    if passed:
        rows = [i for i in sorted(set.intersection(*(set(p[0]) for p in passed))) if i not in aside]
        if named_rows:  # of those, the rows the question names
            need = _needed(best, top)
            rows = [i for i in rows if need <= best.row_hits[i]] or rows
        if rows and (most or least or first or last) and not counting:
            candidates, named_rows = rows, True  # "the first album after 1970": ordered among those
        elif rows or not named_rows:
            shown = MAX_ROWS if counting else MAX_LISTED
            return TableQuote(table, rows[:shown], count=len(rows) if table.complete else None,
                              matched=[" and ".join(p[1] for p in passed)],
                              limit=limit or (COUNT_LIMIT if counting else ""))
    if _ARITHMETIC.search(question) and others:
        return TableQuote(table, [top, *others][:MAX_ROWS], limit=limit)
    ranking = (most or least) and any(best.column_hits[j] for j in best.numeric)
    pool = [i for i in (candidates if named_rows else range(len(table.rows))) if not table.is_total(i) and i not in aside]
    tallied = _OFTEN.search(question) or _MOST_OF.search(question) and _comparator(best, question) is None
    if (counting and _DISTINCT.search(question) or tallied) and (tally := _tally(best, pool, question, not tallied))[0]:
        return TableQuote(table, tally[1], verdict=tally[0])
    if counting and not ranking:
        if named_rows:
            need = _needed(best, top)
            rows, matched = [i for i, h in enumerate(best.row_hits) if need <= h], _words_for(question, need)
        else:
            rows, matched = pool, []
        counts_cells = named_rows and any(best.column_hits[j] for j in best.numeric)  # the row named first
        shown = [top, *(i for i in rows if i != top)] if counts_cells else rows
        return TableQuote(table, shown[:MAX_ROWS], count=len(rows) if table.complete else None, matched=matched,
                          limit=limit or COUNT_LIMIT)
    after, before = bool(_AFTER.search(question)), bool(_BEFORE.search(question))
    if named_rows and after != before and not tests:
        nearby = _neighbour(best, top, after=after)
        return TableQuote(table, [top, *nearby] if after else [*nearby, top], limit=limit)
    if most or least or first or last:
        col = _comparator(best, question)
        if col is not None:
            valued = [(v, i) for i in pool if (v := number(table.value(i, col))) is not None]
            if valued:
                high = (most or last) and not (first or least)
                if _RANKISH.match(table.column(col)):
                    high = not high  # rank 1 is the best
                if _SPEED.search(question) and re.search(r"speed|km/h|mph|per hour|rate", table.column(col), re.I):
                    high = not high  # "fastest" is the least time, but the highest speed
                later = last and not first
                valued.sort(key=lambda x: (-x[0] if high else x[0], -x[1] if later else x[1]))
                return TableQuote(table, [i for v, i in valued if v == valued[0][0]][:MAX_ROWS], limit=limit)
        if first != last and pool:
            return TableQuote(table, pool[:1] if first else pool[-1:], limit=limit)
    if not named_rows:
        return TableQuote(table, pool) if aside and len(pool) <= MAX_LISTED else None
    shown = MAX_LISTED if _LISTING.search(question) else MAX_ROWS
    rows = candidates[:1] + others if others else candidates
    return TableQuote(table, rows[:shown], limit=limit)


def render(tq: TableQuote, tab_id: str, *, cite: bool = True) -> str:
    """The quote as Markdown: the caption, then each row as "column: value" pairs."""
    t = tq.table
    head, where = t.caption or "The table", f" [Tab {tab_id}]" if cite else ""
    lines = []
    if tq.verdict:
        lines.append(f"{tq.verdict}. {head}{where}")  # the figure, then the row it is in
    elif tq.count is not None:
        what = f" with “{' '.join(tq.matched)}”" if tq.matched else ""
        lines.append(f"{head}: {tq.count} row{'s' if tq.count != 1 else ''}{what}{where}")
    elif t.caption or cite:
        lines.append(f"{head}{where}")
    lines += [f"- {t.render(i)}" for i in tq.rows]
    if tq.count is not None and tq.count > len(tq.rows):
        lines.append(f"- … and {tq.count - len(tq.rows)} more")
    if tq.limit:
        lines += ["", tq.limit]
    return "\n".join(lines)
