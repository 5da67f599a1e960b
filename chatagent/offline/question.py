"""What a question asks, and the one set of words (months, number words, graded words such as
"cheaper" or "longest", units) the offline model reads questions and values by."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from ..ranking import CONTENT_WORDS

ANALYSER = CONTENT_WORDS  # questions and passages alike: only what they are about is counted

MONTH_NUMBER = {m: i for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}
MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t|tember)?|"
         r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")
# A year, or a month beside a day ("3 March", "Mar 12"): not "may" or "mark" alone.
HAS_DATE = re.compile(rf"{YEAR.pattern}|\b\d{{1,2}}(?:st|nd|rd|th)?\s+{MONTH}(?!\w)|\b{MONTH}\s+\d{{1,2}}\b", re.I)
_DAY_MONTH_YEAR = re.compile(rf"\b(?:(\d{{1,2}})(?:st|nd|rd|th)?\s+({MONTH})|({MONTH})\s+(\d{{1,2}})(?:st|nd|rd|th)?),?\s+"
                             rf"(1[5-9]\d\d|20\d\d)\b", re.I)

NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())} | {
    "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
    "hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9, "dozen": 12}
# Graded words: (comparative, superlative, what they grade, +1 when more of it wins, -1 when less does).
# "Time" is a date: the older thing is the earlier one. "Extent" is a duration or a length,
# "size" any measure of how big; None grades by the figure asked about.
GRADED = (
    ("cheaper", "cheapest", "money", -1), ("pricier", "priciest", "money", 1), ("dearer", "dearest", "money", 1),
    ("longer", "longest", "extent", 1), ("shorter", "shortest", "extent", -1),
    ("newer", "newest", "time", 1), ("later", "latest", "time", 1), ("younger", "youngest", "time", 1),
    ("older", "oldest", "time", -1), ("earlier", "earliest", "time", -1),
    ("heavier", "heaviest", "weight", 1), ("lighter", "lightest", "weight", -1),
    ("faster", "fastest", "speed", 1), ("quicker", "quickest", "speed", 1), ("slower", "slowest", "speed", -1),
    ("bigger", "biggest", "size", 1), ("larger", "largest", "size", 1), ("smaller", "smallest", "size", -1),
    ("taller", "tallest", "length", 1), ("wider", "widest", "length", 1), ("farther", "farthest", "length", 1),
    ("higher", "highest", None, 1), ("lower", "lowest", None, -1), ("greater", "greatest", None, 1),
    ("more", "most", None, 1), ("less", "least", None, -1), ("fewer", "fewest", None, -1),
    ("better", "best", None, 1), ("worse", "worst", None, -1),
)
COMPARATIVES = {c: (d, s) for c, _, d, s in GRADED}
SUPERLATIVES = {x: (d, s) for _, x, d, s in GRADED}
_PHRASED = {  # "more expensive", "less costly", "more recent": a graded phrase of two words
    "expensive": ("money", 1), "costly": ("money", 1), "affordable": ("money", -1), "recent": ("time", 1),
    "powerful": (None, 1), "popular": (None, 1)}
_GRADED_WORD = re.compile(r"\b(?:(more|most|less|least)\s+(" + "|".join(_PHRASED) + r")|("
                          + "|".join([*COMPARATIVES, *SUPERLATIVES]) + r"))\b", re.I)

# Units as pages write them: (what they measure, how many of the base unit one is); not "in",
# "s" or "t", which are words as often.
UNITS: dict[str, tuple[str, float]] = {}
for _dim, _base, _names in (
    ("duration", 1, "sec secs second seconds"), ("duration", 60, "min mins minute minutes"),
    ("duration", 3600, "h hr hrs hour hours"), ("duration", 86400, "day days"), ("duration", 604800, "week weeks"),
    ("duration", 2629800, "month months"), ("duration", 31557600, "year years yr yrs"), ("weight", 1, "g gram grams"),
    ("weight", 1000, "kg kgs kilo kilos kilogram kilograms"), ("weight", 453.592, "lb lbs pound pounds"),
    ("weight", 28.3495, "oz ounce ounces"), ("weight", 10**6, "tonne tonnes ton tons"),
    ("length", 1, "m metre metres meter meters"), ("length", 1000, "km kilometre kilometres kilometer kilometers"),
    ("length", 0.01, "cm centimetre centimetres centimeter centimeters"),
    ("length", 0.001, "mm millimetre millimetres millimeter millimeters"), ("length", 1609.34, "mi mile miles"),
    ("length", 0.3048, "ft foot feet"), ("length", 0.0254, "inch inches"), ("length", 0.9144, "yd yard yards"),
    ("data", 10**3, "kb kilobyte kilobytes"), ("data", 10**6, "mb megabyte megabytes"),
    ("data", 10**9, "gb gigabyte gigabytes"), ("data", 10**12, "tb terabyte terabytes"), ("speed", 1, "km/h kph kmh"),
    ("speed", 1.60934, "mph"),
):
    UNITS.update((n, (_dim, _base)) for n in _names.split())


def written_in(*dims: str) -> str:
    """The names of the units of `dims`, as a pattern's alternatives (the longest first)."""
    return "|".join(sorted((re.escape(u) for u, (d, _) in UNITS.items() if d in dims), key=len, reverse=True))


# What a graded word may be measured in, first choice first.
MEASURED_BY = {"extent": ("duration", "length"), "size": ("data", "length", "weight", "count"),
               "money": ("money",), "time": ("time",), "weight": ("weight",), "speed": ("speed",),
               "length": ("length",)}

_FIGURE = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
MONEY = re.compile(rf"([$€£¥])\s?({_FIGURE})(\s?(?:million|billion|m|bn|k)\b)?|({_FIGURE})\s?(usd|eur|gbp|dollars?|euros?)\b",
                   re.I)
_MEASURE = re.compile(rf"({_FIGURE}|" + "|".join(w for w in NUMBER_WORDS if NUMBER_WORDS[w] < 100) + r")\s?-?("
                      + written_in(*{d for d, _ in UNITS.values()}) + r")(?![\w/])", re.I)
_SCALE = {"million": 1e6, "m": 1e6, "billion": 1e9, "bn": 1e9, "k": 1e3}


@dataclass(frozen=True)
class Quantity:
    """A value a passage states, in its dimension's base unit, and as the page writes it."""

    dimension: str  # money, duration, weight, length, data, speed, time
    value: float
    text: str


def _figure(s: str) -> float:
    return float(NUMBER_WORDS.get(s.lower(), s.replace(",", "")) if not s[0].isdigit() else s.replace(",", ""))


def quantities(text: str) -> list[Quantity]:
    """The measured values in `text`; runs of one dimension add up ("11 hours 5 minutes")."""
    out: list[Quantity] = []
    for m in MONEY.finditer(text):
        value = _figure(m[2] or m[4]) * _SCALE.get((m[3] or "").strip().lower(), 1)
        out.append(Quantity("money", value, m[0].strip()))
    last_end, last_dim = -10, ""
    for m in _MEASURE.finditer(text):
        dim, base = UNITS[m[2].lower()]
        q = Quantity(dim, _figure(m[1]) * base, m[0])
        joined = out and dim == last_dim and re.fullmatch(r"\s*(?:and\s*|,\s*)?", text[last_end:m.start()])
        if joined and dim == "duration" and out[-1].dimension == dim:
            prev = out.pop()
            q = Quantity(dim, prev.value + q.value, f"{prev.text}{text[last_end:m.start()]}{m[0]}")
        out.append(q)
        last_end, last_dim = m.end(), dim
    for m in _DAY_MONTH_YEAR.finditer(text):
        day, month = (m[1], m[2]) if m[1] else (m[4], m[3])
        out.append(Quantity("time", int(m[5]) * 10_000 + MONTH_NUMBER[month[:3].lower()] * 100 + int(day), m[0]))
    if not any(q.dimension == "time" for q in out):
        out += [Quantity("time", int(m[1]) * 10_000, m[1]) for m in YEAR.finditer(text)]
    return out


# What a picture or a chart is called: questions about them are about how something looks.
PICTURES = r"images?|pictures?|photos?|photograph|screenshot|logo|icon|illustration|diagram|figure|drawing|painting|map"
CHARTS = r"charts?|graphs?|canvas"

# Parts of a question asked at once: "how much is it, and what is the warranty?"
_ASKING = (r"what|what's|whats|which|who|whom|whose|when|where|why|how|is|are|was|were|does|do|did|can|could|"
           r"will|would|should|has|have")
_PART_BREAK = re.compile(rf"\?\s+|;\s*|,?\s+and\s+(?=(?:{_ASKING})\b)|,\s+(?=(?:{_ASKING})\b)", re.I)
_STARTS_ASKING = re.compile(rf"^\s*(?:{_ASKING})\b", re.I)


def split_parts(text: str) -> list[str]:
    """The question's parts, each a question of its own; one part unless each piece asks."""
    pieces = [p.strip(" ?,.") for p in _PART_BREAK.split(text.strip())]
    pieces = [p for p in pieces if p]
    if len(pieces) > 1 and all(_STARTS_ASKING.match(p) and len(p.split()) >= 2 for p in pieces):
        return pieces
    return [text.strip()]


@dataclass
class Question:
    """A question as the offline model reads it."""

    text: str
    parts: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str) -> "Question":
        return cls(text.strip(), split_parts(text))

    @cached_property
    def graded(self) -> tuple[str, str | None, int] | None:
        """The graded word the question asks by ("cheaper"), what it grades and which way; None if none."""
        m = _GRADED_WORD.search(self.text)
        if not m:
            return None
        if m[1]:
            dim, sign = _PHRASED[m[2].lower()]
            return m[0].lower(), dim, sign * (1 if m[1].lower() in ("more", "most") else -1)
        word = m[3].lower()
        return word, *(COMPARATIVES.get(word) or SUPERLATIVES[word])

    @cached_property
    def compares(self) -> bool:
        """A graded word ("cheaper", "more expensive") or "which … first/last": across tabs, it asks for a verdict."""
        ordered = re.search(r"\b(?:first|last)\b", self.text, re.I) and re.search(r"\b(?:which|who)\b", self.text, re.I)
        return self.graded is not None or bool(ordered)

    @cached_property
    def direction(self) -> tuple[tuple[str, ...], int] | None:
        """The dimensions a verdict may compare by, and +1 when more wins; None when it asks for none."""
        if g := self.graded:
            _, dim, sign = g
            return (MEASURED_BY.get(dim, ()) if dim else ()), sign
        if self.compares:  # "which came first?": the earlier date
            return ("time",), -1 if re.search(r"\bfirst\b", self.text, re.I) else 1
        return None


def restate(part: str) -> str:
    """A part as the answer names it when the page is silent: "what is the warranty" → "what the warranty is"."""
    m = re.match(r"^(what|which|who|when|where|how \w+|how)\s+(is|are|was|were)\s+(.+)$", part.strip(" ?"), re.I)
    return f"{m[1].lower()} {m[3]} {m[2].lower()}" if m else f"“{part.strip(' ?')}?”"
