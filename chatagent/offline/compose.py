"""The offline answer: the smallest sufficient quotes from the tabs, each citing its tab
("[Tab 2]"); a verdict with both values when tabs are compared ("cheaper", "older");
each part of a question asked at once, or a line saying the page does not say it."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property

from ..ranking import BM25Ranker, Query, RankerFactory, fold
from ..tables import clean
from . import tables
from .passages import (
    ANALYSER, ASKS_AUTHOR, BYLINE, Kind, Passage, best, compared_kinds, format_best, intent_terms,
    passage_intents, question_terms, quote_section, said_of, split, terms,
)
from .summary import Tab, summary
from .question import GRADED, HAS_DATE, Quantity, Question, quantities, restate

PROSE_MARGIN = 0.6  # a passage must cover this much more of the question than table rows to be quoted instead
_ACROSS = re.compile(r"\b(each|both|every|all|compare|compared|versus|vs|difference|differ|which one|or|more|less|"
                     r"fewer)\b", re.I)
_GRADING = re.compile(r"\b(" + "|".join(w for g in GRADED for w in g[:2]) + r"|first|last)\b", re.I)
_TITLE_NOTE = re.compile(r"\s*\([^)]*\)\s*$")  # "The Crown (mountain)": the note is not the name
_WORD = re.compile(r"\w+")
_TITLE_PARTS = re.compile(r"\s+[—–|·-]\s+|:\s+")
# "Who wrote this?", "When was it published?": the page itself, as its markup says.
_ASKS_PUBLISHED = re.compile(r"\bwhen\b.*\b(?:published|posted|written)\b|\bpublication date\b|\bdate of publication\b|"
                             r"\b(?:what|which) (?:day|date|year) was\b.*\b(?:published|posted|written)\b", re.I)
_OF_ITSELF = frozenset(terms(
    "who wrote write writes written author authors writer writers byline by when published publish publication date "
    "day year posted article page post story piece blog report review guide site website document essay entry news "
    "item tab text paper"))


@dataclass
class Page:
    """One tab as the offline model reads it (from the typed context)."""

    tab_id: str
    title: str
    text: str
    authors: Sequence[str] = ()
    published: str = ""
    passages: list[Passage] = field(init=False)

    def __post_init__(self) -> None:
        self.passages = split(self.tab_id, self.text)

    @cached_property
    def name(self) -> str:
        """What the page is about, for a verdict: "Orion 14" of "Orion 14 review: a quiet workhorse | …"."""
        head = _TITLE_PARTS.split(_TITLE_NOTE.sub("", clean(self.title)).strip())[0].strip()
        words = head.split()
        lead = []
        for w in words:
            if not (w[0].isupper() or w[0].isdigit()):
                break
            lead.append(w)
        return " ".join(lead or words) or f"Tab {self.tab_id}"


def answer(question: Question, pages: list[Page], tabs: int, ranker: RankerFactory = BM25Ranker, *,
           whole: bool = False, time_s: float | None = None) -> str | None:
    """The answer from `pages` (of `tabs` tabs open), or None when nothing on them answers;
    `whole`: the question is about the pages as a whole (`TabContext.scope`), and is answered
    with their summary (`summary.py`). `time_s`: a question of many parts is answered part by
    part for this long; the parts not reached by then are named, not answered."""
    if itself := _of_itself(question.text, pages):
        return itself
    if whole:
        return summary(question.text, [Tab(p.tab_id, p.title, p.text) for p in pages])
    if len(question.parts) == 1:
        return _one(question, pages, tabs, ranker)
    # Each part reads every tab again: a question of many parts over many tabs is minutes of CPU.
    until = None if time_s is None else time.monotonic() + time_s
    answers: list[str | None] = []
    for part in question.parts:
        if until is not None and answers and time.monotonic() > until:
            break
        answers.append(_one(Question.parse(part), pages, tabs, ranker))
    left = len(question.parts) - len(answers)
    if not any(answers) and not left:  # stopped early: said so, rather than read it all again in pass 2
        return None
    silent = "The pages do not say" if len(pages) > 1 else "The page does not say"
    out: list[str] = []
    if left:  # first: a long answer may be cut at its length limit
        them, their = ("it", "its") if left == 1 else ("them", "their")
        out.append(f"I stopped reading after {time_s:g} s (the offline_timeout setting), before the last {left} of "
                   f"the question's {len(question.parts)} parts: ask {them} on {their} own.")
    for part, said in zip(question.parts, answers):
        if not said:
            out.append(f"{silent} {restate(part)}.")
        elif said not in out:  # two parts answered by one quote: quoted once
            out.append(said)
    return "\n\n".join(out)


def _one(question: Question, pages: list[Page], tabs: int, ranker: RankerFactory) -> str | None:
    text = question.text
    by_tab = {p.tab_id: p for p in pages}
    titles = {p.tab_id: p.title for p in pages}
    named = _named_tabs(text, pages)
    if compared := _by_kind(question, pages, named, ranker) or _each_named(text, pages, named, ranker):
        return compared
    hits = best([p for page in pages for p in page.passages], text, titles, ranker)
    q = question_terms(text) | intent_terms(text)
    rows: dict[str, tables.TableQuote] = {}
    strength: dict[str, float] = {}
    for page in pages:
        tq = tables.quote(page.text, text, page.title)
        prose = max((c for c, _, p in hits if p.tab_id == page.tab_id), default=0.0)
        covered = _coverage(tq, q, page.title) if tq is not None else 0.0
        listed = tq is not None and bool(tq.table.columns) and bool(tables.LISTED.search(text))
        if tq is not None and (covered + PROSE_MARGIN >= prose or listed):
            rows[page.tab_id], strength[page.tab_id] = tq, max(covered, prose)
        elif prose:
            strength[page.tab_id] = prose
    if not strength:
        return None
    if tabs == 1:
        if not rows:
            return format_best(hits, by_tab[hits[0][2].tab_id].passages)
        tab_id, tq = next(iter(rows.items()))
        return tables.render(tq, tab_id)
    shown = list(strength)
    if not _compares(text):  # one question, several tabs: the tabs that answer it best
        shown = [t for t in shown if strength[t] >= max(strength.values())]
    blocks = [(t, tables.render(rows[t], t, cite=False) if t in rows
               else next(quote_section(p, by_tab[t].passages) for _, _, p in hits if p.tab_id == t)) for t in shown]
    return _side_by_side(blocks, by_tab)


def _coverage(tq: tables.TableQuote, q: set[str], title: str) -> float:
    """As `best` measures a passage: the share of the question's terms in the rows shown, caption, columns, title."""
    t = tq.table
    cells = [c for i in tq.rows for c in t.rows[i]]
    held = set(terms(" ".join([title, t.caption, *map(tables.column_words, t.columns), *cells])))
    held |= set(terms(passage_intents(" ".join(cells))))
    return len(q & held) / len(q) if q else 0.0


def _compares(text: str) -> bool:
    return bool(_GRADING.search(text) or _ACROSS.search(text))


def _named_tabs(text: str, pages: list[Page]) -> list[str]:
    """The tabs whose page the question names by title ("A or B?")."""
    asked = f" {' '.join(_WORD.findall(fold(text).lower()))} "
    return [p.tab_id for p in pages if (words := " ".join(_WORD.findall(fold(_TITLE_NOTE.sub("", p.title)).lower())))
            and f" {words} " in asked]


def _by_kind(question: Question, pages: list[Page], named: list[str], ranker: RankerFactory) -> str | None:
    """Tabs compared by a kind of value (a price, a duration, a date …): each tab's best passage
    stating one, however worded, side by side, under a verdict when the question grades them."""
    text = question.text
    kinds = compared_kinds(text)
    if len(named) >= 2:
        pages = [p for p in pages if p.tab_id in named]
    elif not _compares(text):
        return None  # "When was Port Elm founded?" asks one tab, whatever else is open
    if len(pages) < 2 or not kinds:
        return None
    query = Query(text, tuple(sorted(question_terms(text) | set().union(*(said_of(k) for k in kinds)))))
    chosen: dict[str, list[Passage]] = {}
    for page in pages:
        title = set(terms(page.title))
        picks: list[Passage] = []
        for kind in kinds:
            found = [p for p in page.passages if not p.text.startswith("#") and kind.has.search(p.text)]
            if not found:
                continue
            scores = ranker([f"{p.text} {p.section} {p.header}" for p in found], ANALYSER).scores(query.without(title))
            names = [bool(said_of(kind) & set(terms(f"{p.text} {p.section}"))) for p in found]
            pick = found[max(range(len(found)), key=lambda i: (names[i], scores[i], -found[i].order))]
            if pick not in picks:
                picks.append(pick)
        if not picks:
            return None
        chosen[page.tab_id] = sorted(picks, key=lambda p: p.order)
    by_tab = {p.tab_id: p for p in pages}
    blocks = [(t, "\n\n".join(quote_section(p, by_tab[t].passages) for p in ps)) for t, ps in chosen.items()]
    body = _side_by_side(blocks, by_tab)
    verdict = _verdict(question, kinds, chosen, by_tab)
    return f"{verdict}\n\n{body}" if verdict else body


def _verdict(question: Question, kinds: list[Kind], chosen: dict[str, list[Passage]], pages: dict[str, Page]) -> str:
    """"Orion 14 is cheaper: $1,099 [Tab 2] against $1,349 [Tab 1]." The value each tab's passages
    state in the dimension the question grades by (units converted); "" when a tab states none."""
    if not question.compares or (direction := question.direction) is None:
        return ""
    dims, sign = direction
    dims = dims or tuple(k.measures for k in kinds if k.measures)  # "more memory": what memory is in
    for dim in dims:
        values: dict[str, Quantity] = {}
        for tab_id, ps in chosen.items():
            found = [q for p in ps for q in quantities(p.quote()) if q.dimension == dim]
            if found:
                values[tab_id] = found[0]
        if len(values) == len(chosen) >= 2:
            break
    else:
        return ""
    ranked = sorted(values.items(), key=lambda kv: -sign * kv[1].value)
    (win, top), rest = ranked[0], ranked[1:]
    against = " and ".join(f"{q.text} [Tab {t}]" for t, q in rest)
    if all(q.value == top.value for _, q in rest):
        return f"They are the same: {top.text} [Tab {win}] and {against}."
    word = question.graded[0] if question.graded else ("first" if sign < 0 else "later")
    word = next((c for c, s, _, _ in GRADED if s == word), word)  # "cheapest" of two is "cheaper"
    # "Which has the longer battery life?": "X has the longer battery life"; else "X is cheaper".
    noun = re.search(rf"\b(?:the|a)\s+{re.escape(word)}\s+([a-z][\w -]*?)\s*(?:[?,.]|$|\bthan\b)", question.text, re.I)
    said = (f"has the {word} {noun[1]}" if noun else f"came {word}" if word in ("first", "later") else f"is {word}")
    return f"{pages[win].name} {said}: {top.text} [Tab {win}] against {against}."


def _each_named(text: str, pages: list[Page], named: list[str], ranker: RankerFactory) -> str | None:
    """A question naming two or more tabs by title: each one's passage best matching the rest of it."""
    if len(named) < 2:
        return None
    q, blocks = question_terms(text) | intent_terms(text), []
    for page in (p for p in pages if p.tab_id in named):
        found = [p for p in page.passages if not p.text.startswith("#")]
        if found:
            rest = Query(text, tuple(sorted(q - set(terms(page.title)))))
            scores = ranker([f"{p.text} {p.section} {p.header} {passage_intents(p.text)}" for p in found],
                            ANALYSER).scores(rest)
            i = max(range(len(found)), key=lambda i: (scores[i], -found[i].order))
            blocks.append((page.tab_id, (found[i] if scores[i] > 0 else found[0]).quote()))
    return _side_by_side(blocks, {p.tab_id: p for p in pages}) if len(blocks) >= 2 else None


def _side_by_side(blocks: list[tuple[str, str]], pages: dict[str, Page]) -> str:
    """Each tab's evidence under a heading naming the tab, in tab order."""
    return "\n\n".join(f"From [Tab {t}] ({pages[t].title or f'Tab {t}'}):\n\n{body}"
                       for t, body in sorted(blocks, key=lambda b: (len(b[0]), b[0])))


def _of_itself(text: str, pages: list[Page]) -> str | None:
    """Who wrote the page or when it was published, from what its markup says; None when the
    question is about something else ("Who wrote that novel?") or no page says."""
    author, published = bool(ASKS_AUTHOR.search(text)), bool(_ASKS_PUBLISHED.search(text))
    if not (author or published) or set(terms(text)) - _OF_ITSELF:
        return None
    lines, silent = [], []
    for page in pages:
        if (author and not page.authors) or (published and not page.published):
            silent.append(page.tab_id)
            continue
        said, quoted = [], False
        if author:
            byline = next((ln.strip() for ln in page.text.splitlines()[:40] if len(ln) <= 200
                           and BYLINE.search(ln.strip()) and any(a in ln for a in page.authors)), "")
            quoted = bool(byline)
            said.append(byline or f"By {', '.join(page.authors)}")
        if published and not (quoted and HAS_DATE.search(said[0])):
            said.append(f"Published {_day(page.published)}")
        whence = "" if quoted and len(said) == 1 else ", as the page's markup says"
        lines.append(f"{' · '.join(said)}{whence} [Tab {page.tab_id}]")
    if lines:
        lines += [f"Tab {t}: its page's markup does not say." for t in silent]
    return "\n".join(lines) or None


def _day(iso: str) -> str:
    try:
        d = date.fromisoformat(iso)
    except ValueError:
        return iso
    return f"{d.day} {d:%B %Y} ({iso})"

