"""The README is a user's manual: short, free of the tracker's numbers, and its links into docs/ lead somewhere."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
ISSUE_NUMBER = re.compile(r"\bissues? #?\d+|(?<![\w&#/])#\d+\b", re.IGNORECASE)
DOCS_LINK = re.compile(r"\]\((docs/[^)#\s]+\.md)(?:#([^)\s]+))?\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's ids for a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+\s+(.+?)\s*$", page.read_text("utf-8"), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def test_the_readme_is_at_most_350_lines() -> None:
    assert len(README.read_text("utf-8").splitlines()) <= 350


def test_no_issue_numbers_in_the_readme_or_docs() -> None:
    found = {str(p.relative_to(ROOT)): ISSUE_NUMBER.findall(p.read_text("utf-8")) for p in PAGES}
    assert not {page: hits for page, hits in found.items() if hits}


def test_every_docs_link_in_the_readme_resolves() -> None:
    links = DOCS_LINK.findall(README.read_text("utf-8"))
    assert links, "the README links no page of docs/"
    for target, anchor in links:
        page = ROOT / target
        assert page.is_file(), f"README links {target}, which does not exist"
        assert not anchor or anchor in _anchors(page), f"README links {target}#{anchor}: no such heading"
