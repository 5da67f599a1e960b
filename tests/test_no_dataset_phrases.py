"""No question of the evaluation data is quoted in the code or the tests: a rule fitted to
a benchmark's wording helps that benchmark and nobody else, and a test quoting one pins it.

Scans every quoted phrase (in strings and comments) of `chatagent/` and `tests/` (the benchmark modules
and their own scorer tests aside: they read the data they score) for a phrase of four or
more words that occurs in a question of `../shared/data`."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from conftest import DATA, ROOT

MIN_WORDS = 4
# Benchmarks and the tests of their scorers may quote what they score.
EXEMPT = ("chatagent/bench/", "benchmarks/", "tests/test_bench.py", "tests/test_e2e_bench.py", "tests/test_scoring.py")
_QUOTED = re.compile(r"[\"“']([^\"”'\n]{8,160})[\"”']")  # a string, or a phrase quoted in a comment


def _questions() -> str:
    """Every question of the data, lower-cased and with single spaces, one per line."""
    out: list[str] = []
    for tsv in sorted((DATA / "wtq").glob("*.tsv")):
        with open(tsv, encoding="utf-8") as f:
            out += [r.get("utterance", "") for r in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]
    for jsonl in sorted(DATA.glob("*/*.jsonl")):
        for line in jsonl.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line).get("question", ""))
            except (ValueError, AttributeError):
                continue
    return "\n".join(" ".join(q.lower().split()) for q in out)


def _phrases(text: str) -> set[str]:
    """Quoted phrases of MIN_WORDS or more words, lower-cased, with single spaces."""
    return {p for m in _QUOTED.finditer(text) if len((p := " ".join(m[1].lower().split())).split()) >= MIN_WORDS}


def offenders(root: Path, questions: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted([*root.glob("chatagent/**/*.py"), *root.glob("tests/**/*.py")]):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(EXEMPT):
            continue
        hits = {p for p in _phrases(path.read_text(encoding="utf-8", errors="replace")) if p in questions}
        if hits:
            found[rel] = hits
    return found


def test_the_offender_finder_finds_a_quoted_question_and_only_that(tmp_path: Path) -> None:
    (tmp_path / "chatagent").mkdir()
    (tmp_path / "chatagent" / "rule.py").write_text('# as in "which of the four rivers is longest"\nX = "a b c d e"\n')
    (tmp_path / "chatagent" / "bench").mkdir()
    (tmp_path / "chatagent" / "bench" / "score.py").write_text('Q = "which of the four rivers is longest"\n')
    found = offenders(tmp_path, "which of the four rivers is longest?\nhow tall is it?")
    assert found == {"chatagent/rule.py": {"which of the four rivers is longest"}}


def test_no_question_of_the_data_is_quoted_in_the_code_or_the_tests() -> None:
    if not (DATA / "wtq").is_dir():
        pytest.skip(f"the evaluation data is not at {DATA} (a checkout without ../shared/data)")
    found = offenders(ROOT, _questions())
    assert not found, "phrases of the data's questions in the code or tests:\n" + "\n".join(
        f"{path}: {'; '.join(sorted(ps)[:5])}" for path, ps in found.items())
