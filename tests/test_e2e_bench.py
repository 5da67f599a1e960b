"""The end-to-end bench (`benchmarks.e2e`): how its first token is read, and the
page floor beside it. One pair of its real processes (`chatagent ask`, the
minimal script, a warm daemon) runs in `chatagent bench`'s own test
(`test_bench.py`), which checks that section's figures."""

from __future__ import annotations

import pytest

from benchmarks.e2e import has_token
from conftest import DATA

pytestmark = pytest.mark.e2e



def test_the_first_token_is_a_token_event_for_chatagent_and_any_output_for_the_script() -> None:
    chatagent, script = has_token("chatagent"), has_token("minimal")
    assert not chatagent(b'{"type":"pass_start","pass":1}\n{"type":"tok')  # a line not complete yet
    assert chatagent(b'{"type":"pass_start","pass":1}\n{"type":"token","text":"The"}\n')
    assert not script(b"") and not script(b"\n") and script(b"The")


@pytest.mark.skipif(not (DATA / "wtq" / "questions.tsv").is_file(), reason="evaluation data not present")
async def test_the_page_floor_opens_and_reads_the_e2e_bench_s_pages_in_a_running_browser() -> None:
    from benchmarks.page_floor import measure

    result = await measure([1, 3], 1, DATA)
    assert set(result) == {1, 3} and all(len(ms) == 1 and ms[0] > 0 for ms in result.values())
