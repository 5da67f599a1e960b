"""What a request is about: the page as a whole, a whole part of it, or something on it.

"Summarize this", "tl;dr", "de quoi parle cet article", "was sind die wichtigsten Punkte": a
request about the whole page names nothing on the page. So the decision is made against the
page, not against a list of requests:

1. The request's words, less the function words of its language (the stop words of any of
   the languages in `stop_words`, and the question words the ranking already drops), less the
   words that speak of the page itself or of condensing it (`ROLES`: a few roots per role,
   in English, French, German and Spanish), are its *content words*.
2. A content word found among the page's terms *anchors* the request to something on it.
3. No anchor: the page is shown as an overview. The request is about the whole page when it
   asks to condense or for the main points, or has no content words at all and does not ask
   for a fact ("what's this?", not "how much is it?");
   else it is a question about something the page does not name (in any language whose words
   the page does not use, listed or not: "riassumi", on an English page, is just a word the
   page does not have), which an overview serves better than the page's start too.
4. Anchors and a word that asks to condense ("summarize the reviews", "an overview of the
   installation"; "main points" asks only with no other content word, as "the fewest points"
   in a table of scores does not): when every anchor names a part of the page
   (is in one of its headings), the request is about that whole part; otherwise it is a
   search, as is every request with an anchor and no such word ("what does it say about
   battery life?").

A fact question whose words are none of them on the page ("how heavy is it?" over a page
that says "Weight") gets an overview rather than the page's start: nothing in it says where
on the page to look, and an overview shows every part of it. `docs/whole-page.md` has the
measured errors in both directions.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Literal

from .base import QUESTION_WORDS, STOPWORDS_EN, english_stemmer, fold

Kind = Literal["search", "whole", "part", "unmatched"]

# The languages whose function words are dropped from a request; stop_words' English list is
# not used (it holds content words: "computer", "information", "length").
STOP_LANGUAGES = ("french", "german", "spanish", "italian", "portuguese", "dutch")
# English particles and pronouns the ranking's lists keep (they can name a table's column there).
ENGLISH_FUNCTION_WORDS = frozenset(
    "up down out off over under again further once same other own too yet still even ever now then thing things "
    "stuff something anything everything us lot bit really actually basically whats im like away".split())
# Roots (folded, lower case; a word matches a root it starts with) of the words that speak of
# the request itself, not of anything on the page.
ROLES: dict[str, tuple[str, ...]] = {
    # Condense or explain it.
    "condense": (
        "summar", "sum", "recap", "overview", "gist", "tldr", "tl", "dr", "outline", "digest",
        "brief", "nutshell", "synops", "synth", "short", "explain", "eli5", "takeaway", "highlight", "rundown",
        "resum", "resumen", "expliqu", "explic", "zusammen", "fass", "uberblick", "ubersicht", "kurz", "fazit",
        "erklar", "kernaussag", "essentiel", "essencial", "esencial", "wesentlich", "breve", "bref",
        "riassum", "sommari", "sintes", "spieg", "samenvat", "samen", "overzicht", "uitleg", "resumo",
        "break", "vat",
    ),
    # The main points of it.
    "salient": (
        "main", "key", "point", "important", "essential", "major", "princip", "idea", "idee", "punkt", "punto",
        "wichtig", "haupt", "cle", "cles", "clave", "claves", "punti", "topic", "theme", "thema", "tema", "sujet", "takeaway",
    ),
    # The page itself, and asking what it is about.
    "document": (
        "page", "article", "post", "text", "site", "website", "webpage", "document", "thread", "story", "piece", "blog",
        "content", "tab", "link", "pagina", "articulo", "articol", "texto", "sitio", "documento", "entrada", "seite", "artikel",
        "beitrag", "dokument", "inhalt", "texte", "contenu", "billet", "about", "parle", "parla", "agit", "trata",
        "worum", "geht", "gaat", "waar", "quoi", "quali", "quale", "take", "cover", "say", "tell", "describ", "read", "help", "pls", "plz", "please", "stp", "svp", "bitte", "merci", "gracias", "porfa",
        "dice", "dit", "sagt", "quick", "quickly", "fast", "simple", "simply", "word", "sentence", "line", "bullet",
        "list", "few", "couple", "schnell", "rapide", "rapido",
    ),
    # Asking for a fact: how much, who, when, where, which, why, how.
    "fact": (
        "how", "who", "whom", "whose", "when", "where", "which", "why", "combien", "qui", "quand", "ou", "pourquoi",
        "comment", "wie", "wer", "wem", "wen", "wessen", "wann", "wo", "welche", "welcher", "welches", "welchen",
        "welchem", "warum", "wieso", "weshalb", "cuanto", "cuanta", "cuantos", "cuantas", "quien", "quienes",
        "cuando", "donde", "por", "como", "wanneer", "hoeveel", "quanto", "quando", "dove", "perche",
    ),
}

_WORD = re.compile(r"(?u)\w+")
# A root this long matches any word it starts ("summarise", "zusammenfassen"); a shorter one only
# itself with an ending ("pages", "Texte", "fasse"): "main" is not "maintain", "text" not "textile".
MIN_ROOT_CHARS = 6
ENDINGS = ("", "s", "es", "e", "en", "n", "x", "t", "st", "er", "ly")


@dataclass(frozen=True)
class RequestScope:
    """`kind`: "whole" (about the page as a whole), "part" (about the whole of the parts
    under `headings`), "search" (the parts that match it), "unmatched" (a question that
    names nothing on the page: shown an overview too, but not asking for one); `anchors`:
    its content words found on the page (stemmed), which made it a search or named the part."""

    kind: Kind = "search"
    headings: tuple[str, ...] = ()
    anchors: tuple[str, ...] = field(default=())

    @property
    def overview(self) -> bool:
        """Whether the page is best shown as an overview for it."""
        return self.kind != "search"

    @property
    def whole(self) -> bool:
        """Whether it asks about the page (or parts of it) as a whole: a summary answers it."""
        return self.kind in ("whole", "part")


@cache
def _stopwords() -> frozenset[str]:
    from stop_words import get_stop_words

    words: set[str] = set(STOPWORDS_EN | QUESTION_WORDS | ENGLISH_FUNCTION_WORDS)
    for lang in STOP_LANGUAGES:
        words.update(fold(w).lower() for w in get_stop_words(lang))
    return frozenset(words)


def role(word: str) -> str | None:
    """The role a (folded, lower-case) word plays in a request, if it speaks of the request itself."""
    for name, roots in ROLES.items():
        for root in roots:
            if word.startswith(root) and (len(root) >= MIN_ROOT_CHARS or word[len(root):] in ENDINGS):
                return name
    return None


@dataclass(frozen=True)
class Request:
    """A request's words by role: `content` (stemmed) names things; `asks`: it asks to condense
    (or for the main points, with no other content word: "the main points" of a table of
    points scored is a question about it); `lists`: for the main points."""

    content: tuple[str, ...]
    asks: bool
    lists: bool = False
    fact: bool = False  # it asks how much, who, when...

    @classmethod
    def parse(cls, text: str) -> "Request":
        stop = _stopwords()
        words = [w for w in _WORD.findall(fold(text).lower()) if not w.isdigit()]
        roles = [role(w) for w in words]
        content = [w for w, r in zip(words, roles) if r is None and w not in stop and len(w) > 1]
        asks = "condense" in roles or ("salient" in roles and not content)
        return cls(tuple(english_stemmer().stemWords(content)), asks, "salient" in roles, "fact" in roles)


def scope(text: str, vocabulary: Collection[str], headings: Iterable[tuple[str, Collection[str]]] = ()) -> RequestScope:
    """The scope of request `text` over a page whose terms are `vocabulary` (stemmed as
    `ranking.ENGLISH` stems them), and whose headings are given as (heading, its terms)."""
    request = Request.parse(text)
    anchors = tuple(dict.fromkeys(t for t in request.content if t in vocabulary))
    if not anchors:
        asks = request.asks or not (request.content or request.fact)
        return RequestScope("whole" if asks else "unmatched")
    if request.asks:
        named = [h for h, terms in headings if any(a in terms for a in anchors)]
        if named and all(any(a in terms for _, terms in headings) for a in anchors):
            return RequestScope("part", tuple(named), anchors)
    return RequestScope("search", anchors=anchors)
