"""The end-to-end bench (`benchmarks.e2e`) through its real processes:
`chatagent ask` and the minimal script, each a fresh process, against the local
Gemini-compatible server. Figures are checked for being sane, never against timing goals."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.e2e import ANSWER, DAEMON, SIDES, format_report, has_token, run_e2e

pytestmark = pytest.mark.e2e

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def test_the_first_token_is_a_token_event_for_chatagent_and_any_output_for_the_script() -> None:
    chatagent, script = has_token("chatagent"), has_token("minimal")
    assert not chatagent(b'{"type":"pass_start","pass":1}\n{"type":"tok')  # a line not complete yet
    assert chatagent(b'{"type":"pass_start","pass":1}\n{"type":"token","text":"The"}\n')
    assert not script(b"") and not script(b"\n") and script(b"The")


@pytest.mark.skipif(not (DATA / "wtq" / "questions.tsv").is_file(), reason="evaluation data not present")
@pytest.mark.timeout(300)  # nine Chromium-driving processes and a daemon on a possibly busy machine
async def test_one_pair_runs_all_three_processes_end_to_end() -> None:
    result = await run_e2e(1, 300.0, (1,), data_dir=DATA)

    row = result["rows"]["1"]
    assert row["pairs"] == 1 and len(row["ratios"]) == 1 and row["ratios"][0] > 0
    assert row["ratio"]["p50"] == row["ratios"][0]
    for side in SIDES:
        assert row[side]["first_token"]["n"] == 1 and row[side]["first_token"]["p50"] > 0
        assert set(row[side]["phases_p50_ms"]) >= {"to_request", "model_ttft", "to_token"}
        assert row[side]["recall"] in (0.0, 1.0)
    assert row["chatagent"]["phases_p50_ms"]["startup"] > 0
    assert result["model_ttft"]["p50"] > 0

    runs = {r["side"]: r for r in result["runs"]}
    assert set(runs) == {*SIDES, DAEMON}  # each run checked it was (or was not) answered by the daemon
    # Both processes reached the local server and streamed its scripted answer.
    assert ANSWER in runs["minimal"]["answer"]
    assert runs["chatagent"]["answer"] == ANSWER and runs["chatagent"]["timings"]["first_token_ms"] > 0

    assert runs[DAEMON]["answer"] == ANSWER and runs[DAEMON]["recall"] == runs["chatagent"]["recall"]
    warm = row[DAEMON]
    assert warm["overhead"]["p50"] == runs[DAEMON]["phases_ms"]["overhead"] > 0
    assert warm["ratios"][0] == runs[DAEMON]["first_token_ms"] / runs["minimal"]["first_token_ms"]
    report = format_report(result)
    assert "cold process, 1 tab" in report and "warm daemon, 1 tab" in report and "model TTFT +" in report


@pytest.mark.skipif(not (DATA / "wtq" / "questions.tsv").is_file(), reason="evaluation data not present")
async def test_the_page_floor_opens_and_reads_the_e2e_bench_s_pages_in_a_running_browser() -> None:
    from benchmarks.page_floor import measure

    result = await measure([1, 3], 1, DATA)
    assert set(result) == {1, 3} and all(len(ms) == 1 and ms[0] > 0 for ms in result.values())
