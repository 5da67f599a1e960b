"""Scoring: lenient answer matching, word-level P/R/F1 and WCXB snippet checks.

Answer matching normalises both sides the same way (case, accents, punctuation,
whitespace, thousands separators, dashes, month-name dates). The default test is
a substring test, the lenient convention of the figures quoted in issue 2, so
results compare with them; `whole_words=True` is the strict variant that wants
the answer as a whole-token sequence, so "1" does not match inside "2014".
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

from pydantic import BaseModel

_MONTHS = {
    "jan": "january", "feb": "february", "mar": "march", "apr": "april", "may": "may", "jun": "june",
    "jul": "july", "aug": "august", "sep": "september", "sept": "september", "oct": "october",
    "nov": "november", "dec": "december",
}
_MONTH_RE = "|".join(sorted({*_MONTHS, *_MONTHS.values()}, key=len, reverse=True))
_DASHES = re.compile(r"[\u2010-\u2015\u2212\ufe58\ufe63\uff0d]")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
# Punctuation kept only between digits ("1:46.70", "1-1/8", "20.25"); everywhere else it becomes a space.
_KEEP_BETWEEN_DIGITS = re.compile(r"(?<=\d)([.:/-])(?=\d)")
# A table cell's edge, from `strip_markdown` until `normalize` ends: a date at the end of
# a cell is not read with a number in the next ("|November 10|3:05pm|" holds "November 10").
_CELL = "\x04"
_PUNCT = re.compile(r"[^\w\s\x00-\x04]")
_WS = re.compile(r"\s+")
# "December 6 2010" and "6 December 2010" → one form; abbreviations only next to a number.
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH_RE})\s+(\d{{1,2}})(?:st|nd|rd|th)?\s+(\d{{4}})\b")
_MONTH_DAY = re.compile(rf"\b({_MONTH_RE})\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?!\s\d)")
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH_RE})\b")
_MONTH_NUM = re.compile(rf"\b({_MONTH_RE})\s+(?=\d)")
_PROTECT = {".": "\x00", ":": "\x01", "/": "\x02", "-": "\x03"}
_UNPROTECT = str.maketrans({v: k for k, v in _PROTECT.items()})

# Markdown syntax that must not count as words (or break snippet matches).
_MD_RULE = re.compile(r"^\s*(?:[-*_]\s*){3,}$|^\s*\|?[\s:|-]*-{3,}[\s:|-]*\|?\s*$", re.M)
_MD_LEAD = re.compile(r"^\s*(?:#{1,6}\s+|>\s*|[-*+]\s+(?=\S))", re.M)
_MD_EMPH = re.compile(r"\*\*|__|(?<!\w)[*_](?=\S)|(?<=\S)[*_](?!\w)")


def strip_markdown(text: str) -> str:
    text = _MD_RULE.sub("", text)
    text = _MD_LEAD.sub("", text)
    text = text.replace("|", f" {_CELL} ")
    return _MD_EMPH.sub("", text)


def _month(m: str) -> str:
    return _MONTHS.get(m, m)


def normalize(text: str) -> str:
    """Lower case, no accents, no punctuation (except inside numbers), one space between tokens."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).lower()
    text = _DASHES.sub("-", text)
    text = _THOUSANDS.sub("", text)
    text = _KEEP_BETWEEN_DIGITS.sub(lambda m: _PROTECT[m.group(1)], text)
    text = _PUNCT.sub(" ", text).translate(_UNPROTECT)
    text = _WS.sub(" ", text).strip()
    text = _MONTH_DAY_YEAR.sub(lambda m: f"{m.group(2)} {_month(m.group(1))} {m.group(3)}", text)
    text = _MONTH_DAY.sub(lambda m: f"{m.group(2)} {_month(m.group(1))}", text)
    text = _DAY_MONTH.sub(lambda m: f"{m.group(1)} {_month(m.group(2))}", text)
    text = _MONTH_NUM.sub(lambda m: f"{_month(m.group(1))} ", text)
    return _WS.sub(" ", text.replace(_CELL, " ")).strip() if _CELL in text else text


class NormalizedText:
    """A text normalised once, to test many answers against it cheaply. A subclass
    may normalise both sides differently (`text_form`, `answer_form`)."""

    def __init__(self, text: str) -> None:
        self.padded = f" {self.text_form(text)} "

    @staticmethod
    def text_form(text: str) -> str:
        return normalize(strip_markdown(text))

    @staticmethod
    def answer_form(answer: str) -> str:
        return normalize(answer)

    def contains(self, answer: str, *, whole_words: bool = False) -> bool:
        a = self.answer_form(answer)
        if not a:
            return False
        return f" {a} " in self.padded if whole_words else a in self.padded


def answer_in_context(
    answers: Iterable[str] | str, text: str | NormalizedText, *, whole_words: bool = False
) -> bool:
    """True when every answer (WTQ lists several with `|`) appears in `text`."""
    if isinstance(answers, str):
        answers = [a for a in answers.split("|") if a.strip()]
    answers = list(answers)
    hay = text if isinstance(text, NormalizedText) else NormalizedText(text)
    return bool(answers) and all(hay.contains(a, whole_words=whole_words) for a in answers)


# ---------------------------------------------------------------- word-level F1


class PRF(BaseModel):
    precision: float
    recall: float
    f1: float


_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    return _WORD.findall(strip_markdown(text).lower())


def word_prf(predicted: str, truth: str) -> PRF:
    """Bag-of-words precision/recall/F1 with counts (as the AEB and WCXB scorers do)."""
    p, t = Counter(words(predicted)), Counter(words(truth))
    overlap = sum((p & t).values())
    np_, nt = sum(p.values()), sum(t.values())
    if np_ == 0 and nt == 0:
        return PRF(precision=1.0, recall=1.0, f1=1.0)
    precision = overlap / np_ if np_ else 0.0
    recall = overlap / nt if nt else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return PRF(precision=precision, recall=recall, f1=f1)


# ---------------------------------------------------------------- WCXB snippets


class SnippetCheck(BaseModel):
    with_found: int
    with_total: int
    without_found: int  # boilerplate snippets wrongly present
    without_total: int

    @property
    def passed(self) -> bool:
        return self.with_found == self.with_total and self.without_found == 0


def _loose(text: str) -> str:
    return _WS.sub(" ", _PUNCT.sub(" ", strip_markdown(text).replace(_CELL, " ").lower())).strip()


def snippet_check(text: str, with_snippets: Iterable[str], without_snippets: Iterable[str]) -> SnippetCheck:
    """WCXB: every `with` snippet present, every `without` snippet absent (case/space/punctuation-insensitive)."""
    hay = f" {_loose(text)} "
    ws = [s for s in (_loose(x) for x in with_snippets) if s]
    wo = [s for s in (_loose(x) for x in without_snippets) if s]
    return SnippetCheck(
        with_found=sum(s in hay for s in ws),
        with_total=len(ws),
        without_found=sum(s in hay for s in wo),
        without_total=len(wo),
    )
