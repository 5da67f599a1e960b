"""Loaders for the evaluation data in `../shared/data` (read in place, never copied).

Every loader takes the data directory and an optional `limit`; a limit picks a
deterministic, evenly spread sample (same items on every run and machine), so a
quick run still covers the whole range of pages rather than the first few.
"""

from __future__ import annotations

import csv
import gzip
import html
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

DEFAULT_DATA_DIR = Path("../shared/data")

T = TypeVar("T")


def sample(items: Sequence[T], limit: int | None) -> list[T]:
    """`limit` items spread evenly over `items` (all of them when limit is None)."""
    if limit is None or limit >= len(items):
        return list(items)
    if limit <= 0:
        return []
    step = len(items) / limit
    return [items[int(i * step)] for i in range(limit)]


def read_html(path: Path) -> str:
    """A page's HTML, gunzipped if needed; undecodable bytes replaced, not fatal."""
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8", "replace")


@dataclass(frozen=True)
class Page:
    """One HTML page of a dataset: `path` is relative to the data dir (also its URL path)."""

    id: str
    path: str


# ---------------------------------------------------------------- WikiTableQuestions


@dataclass(frozen=True)
class WtqQuestion:
    id: str
    question: str
    page: str  # path relative to the data dir, e.g. "wtq/pages/203-page__733.html.gz"
    answers: tuple[str, ...]

    @property
    def number(self) -> int:
        """The numeric part of the id ("nu-42" → 42): used for the tune/held-out split."""
        m = re.search(r"(\d+)$", self.id)
        return int(m.group(1)) if m else 0

    @property
    def split(self) -> str:
        # Even ids were used to tune the budgeter; odd ids are held out.
        return "tune" if self.number % 2 == 0 else "held-out"


def load_wtq(data_dir: Path = DEFAULT_DATA_DIR, limit: int | None = None) -> list[WtqQuestion]:
    """WTQ questions; a limit samples pages (not questions) so each page's
    questions stay together and every sampled page is loaded only once."""
    root = Path(data_dir) / "wtq"
    with open(root / "questions.tsv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    questions = [
        WtqQuestion(
            id=r["id"],
            question=r["utterance"],
            page=f"wtq/{r['page']}",
            answers=tuple(a for a in r["targetValue"].split("|") if a.strip()),
        )
        for r in rows
    ]
    if limit is not None:
        pages = sample(sorted({q.page for q in questions}), limit)
        keep = set(pages)
        questions = [q for q in questions if q.page in keep]
    return questions


# ---------------------------------------------------------------- AEB


@dataclass(frozen=True)
class AebPage(Page):
    article: str = ""
    url: str = ""


def load_aeb(data_dir: Path = DEFAULT_DATA_DIR, limit: int | None = None) -> list[AebPage]:
    root = Path(data_dir) / "aeb"
    truth = json.loads((root / "ground-truth.json").read_text(encoding="utf-8"))
    pages = [
        AebPage(id=k, path=f"aeb/html/{k}.html.gz", article=v.get("articleBody") or "", url=v.get("url") or "")
        for k, v in sorted(truth.items())
        if (root / "html" / f"{k}.html.gz").exists()
    ]
    return sample(pages, limit)


# ---------------------------------------------------------------- WCXB


@dataclass(frozen=True)
class WcxbPage(Page):
    main_content: str = ""
    with_snippets: tuple[str, ...] = ()
    without_snippets: tuple[str, ...] = ()
    page_type: str = "unknown"
    url: str = ""
    author: str = ""  # as the ground truth names the page's authors, "" when it names none
    published: str = ""  # the day the ground truth says the page was published (ISO), "" when none


def load_wcxb(data_dir: Path = DEFAULT_DATA_DIR, limit: int | None = None) -> list[WcxbPage]:
    root = Path(data_dir) / "wcxb-test"
    pages: list[WcxbPage] = []
    for gt_path in sorted((root / "ground-truth").glob("*.json"), key=lambda p: (len(p.stem), p.stem)):
        if not (root / "html" / f"{gt_path.stem}.html.gz").exists():
            continue
        d = json.loads(gt_path.read_text(encoding="utf-8"))
        gt = d.get("ground_truth") or {}
        ptype = ((d.get("_internal") or {}).get("page_type") or {}).get("primary") or "unknown"
        pages.append(
            WcxbPage(
                id=gt_path.stem,
                path=f"wcxb-test/html/{gt_path.stem}.html.gz",
                main_content=gt.get("main_content") or "",
                with_snippets=tuple(s for s in gt.get("with") or [] if s and s.strip()),
                without_snippets=tuple(s for s in gt.get("without") or [] if s and s.strip()),
                page_type=ptype,
                url=d.get("url") or "",
                author=(gt.get("author") or "").strip(),
                published=(gt.get("publish_date") or "").strip(),
            )
        )
    return sample(pages, limit)


# ---------------------------------------------------------------- HotpotQA


@dataclass(frozen=True)
class HotpotPage:
    title: str
    html: str


@dataclass(frozen=True)
class HotpotQuestion:
    id: str
    question: str
    answer: str
    gold_titles: tuple[str, ...]
    pages: tuple[HotpotPage, ...] = field(default_factory=tuple)

    @property
    def gold_pages(self) -> list[HotpotPage]:
        return [p for p in self.pages if p.title in self.gold_titles]

    @property
    def is_yes_no(self) -> bool:
        """A yes/no comparison: its answer is a judgement, not a string found in the pages."""
        return self.answer.strip().lower() in ("yes", "no")


def render_paragraph(title: str, sentences: Sequence[str]) -> str:
    """A context paragraph as a minimal page: title in <title> and <h1>, one <p> per sentence."""
    t = html.escape(title)
    body = "\n".join(f"<p>{html.escape(s.strip())}</p>" for s in sentences if s.strip())
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{t}</title></head>\n'
        f"<body><article><h1>{t}</h1>\n{body}\n</article></body></html>\n"
    )


def load_hotpot(data_dir: Path = DEFAULT_DATA_DIR, limit: int | None = None) -> list[HotpotQuestion]:
    out: list[HotpotQuestion] = []
    with open(Path(data_dir) / "hotpot" / "comparison.jsonl", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            d = json.loads(line)
            pages = tuple(HotpotPage(title=t, html=render_paragraph(t, s)) for t, s in d.get("context") or [])
            out.append(
                HotpotQuestion(
                    id=str(d["id"]),
                    question=d["question"],
                    answer=str(d["answer"]),
                    gold_titles=tuple(d.get("gold_titles") or ()),
                    pages=pages,
                )
            )
    return sample(out, limit)


# ---------------------------------------------------------------- realistic side-panel questions


@dataclass(frozen=True)
class RealisticQuestion:
    """A question as people type it in a side panel, over one WCXB page; any answer counts."""

    id: str
    page: str  # path relative to the data dir, e.g. "wcxb-test/html/4211.html.gz"
    page_type: str
    question: str
    answers: tuple[str, ...]
    kind: str


@dataclass(frozen=True)
class RealisticComparison:
    """A question about two tabs: one of each tab's answers must be found."""

    id: str
    pages: tuple[str, ...]
    question: str
    answers_per_page: tuple[tuple[str, ...], ...]


def _realistic_lines(data_dir: Path, name: str) -> list[dict]:
    with open(Path(data_dir) / "realistic" / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_realistic(
    data_dir: Path = DEFAULT_DATA_DIR, limit: int | None = None
) -> tuple[list[RealisticQuestion], list[RealisticComparison]]:
    """The single-page questions and the two-tab comparisons; `limit` samples each."""
    page = "wcxb-test/html/{}".format
    questions = [
        RealisticQuestion(d["id"], page(d["page"]), d["page_type"], d["question"], tuple(d["answers"]), d["kind"])
        for d in _realistic_lines(data_dir, "questions.jsonl")
    ]
    comparisons = [
        RealisticComparison(d["id"], tuple(map(page, d["pages"])), d["question"],
                            tuple(tuple(a) for a in d["answers_per_page"]))
        for d in _realistic_lines(data_dir, "comparisons.jsonl")
    ]
    return sample(questions, limit), sample(comparisons, limit)
