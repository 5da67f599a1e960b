"""`chatagent bench` end to end on a tiny sample of the real evaluation data:
real Chromium, the real Gemini client against the local server, the real agent,
and its end-to-end section's processes (`chatagent ask`, the minimal script, a
daemon). Figures are only checked for being sane, never against timing goals."""

from __future__ import annotations

import gzip
import json
import math
import os
import socket
import statistics
import struct
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from benchmarks.e2e import ANSWER, DAEMON, SIDES, format_report
from benchmarks.server import PageServer, fresh_url
from benchmarks.stats import median, quantile, summary
from chatagent.cli import main
from conftest import DATA

SCENARIOS = {"warm_1tab", "cold_1tab", "cold_10tab"}
CONTEXTS = {"chatagent", "full_text", "head_truncation"}


def _get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.headers["Content-Type"], r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read()


def test_page_server_serves_only_what_it_was_given(tmp_path: Path) -> None:
    page = b"<!doctype html><title>t</title><p>caf\xc3\xa9</p>"
    (tmp_path / "a.html.gz").write_bytes(gzip.compress(page))
    (tmp_path / "legacy.html").write_bytes(b'<meta charset="windows-1252"><p>caf\xe9</p>')
    (tmp_path / "secret.html").write_bytes(b"never registered")
    with PageServer() as site:
        gz = site.file_url(tmp_path / "a.html.gz")
        assert gz.endswith("/a.html") and site.file_url(tmp_path / "a.html.gz") == gz
        assert _get(gz) == (200, "text/html; charset=utf-8", page)
        assert _get(site.file_url(tmp_path / "legacy.html"))[1] == "text/html; charset=windows-1252"
        mem = site.page_url("hotpot/q1/0.html", "<p>in memory</p>")
        assert _get(mem)[2] == b"<p>in memory</p>"
        assert _get(site.base + "/secret.html")[0] == 404
        assert _get(gz.replace("/a.html", "/../secret.html"))[0] == 404
        # A fresh read of a page: the same page with its title marked, so no cache has seen it.
        assert _get(fresh_url(gz, 3))[2] == page.replace(b"<title>t</title>", b"<title>t (read 3)</title>")
        assert _get(fresh_url(mem, 4))[2] == b"<title>(read 4)</title><p>in memory</p>"
        legacy = _get(fresh_url(site.file_url(tmp_path / "legacy.html"), 5))
        assert legacy[1] == "text/html; charset=windows-1252" and legacy[2].endswith(b"<p>caf\xe9</p>")


def test_a_browser_hanging_up_leaves_no_traceback_on_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    with PageServer() as site:
        url = urlsplit(site.page_url("big.html", "<p>" + "x" * 8_000_000 + "</p>"))
        for _ in range(3):
            with socket.create_connection((url.hostname, url.port)) as conn:
                conn.sendall(f"GET {url.path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                conn.recv(1)
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # a reset, at once
        assert _get(site.base + "/p/big.html")[0] == 200, "still serving"
    assert "Traceback" not in capfd.readouterr().err


def test_one_percentile_definition_linear_between_ranks() -> None:
    for xs in ([7.0], [3.0, 1.0], [5.0, 1.0, 4.0, 2.0, 3.0], [float(x * x % 17) for x in range(12)]):
        assert median(xs) == statistics.median(xs)
        if len(xs) > 1:
            assert [quantile(xs, k / 10) for k in range(1, 10)] == pytest.approx(
                statistics.quantiles(xs, n=10, method="inclusive"))
    assert quantile([10.0, 20.0], 0.9) == pytest.approx(19.0)
    assert math.isnan(median([])) and median([], default=0.0) == 0.0
    assert summary([2.0, 1.0, 3.0]) == {
        "p50": 2.0, "p90": pytest.approx(2.8), "mean": 2.0, "min": 1.0, "max": 3.0, "n": 3,
    }


@pytest.mark.skipif(not (DATA / "wtq" / "questions.tsv").is_file(), reason="evaluation data not present")
@pytest.mark.timeout(900)  # every section of the bench, end to end: a hang guard (400 s on a suite's busy machine)
@pytest.mark.e2e  # its end-to-end section runs `chatagent ask`, the minimal script and a daemon
def test_bench_quick_runs_end_to_end_and_writes_every_output(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    rc = main(["bench", "--quick", "--limit", "1", "--reps", "1", "--data", str(DATA), "--out", str(out)])
    assert rc == 0

    result = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert {"machine", "config", "summary", "latency", "wtq", "realistic", "extraction", "hotpot", "pass1", "mcp",
            "offline", "e2e"} <= set(result)
    # A sample's latency runs over the fixture pages, ten tabs of them for the ten-tab scenario.
    assert len(result["latency"]["config"]["pages"]) == 10
    assert all("/fixtures/pages/" in p for p in result["latency"]["config"]["page_files"])
    _check_e2e_pair(result["e2e"])
    mcp = result["mcp"]
    assert mcp["questions"] > 0 and set(mcp["summary"]) == {"read_pages", "aria", "aria_cut"}
    assert mcp["summary"]["read_pages"]["tokens_p50"] <= 2000 and mcp["summary"]["aria_cut"]["tokens_p50"] <= 2000
    assert set(mcp["overhead"]) == {"warm", "cold"} and mcp["schemas"]["tools"] == 3
    assert "Playwright MCP" in (out / "report.md").read_text(encoding="utf-8")
    assert "skipped" in result["scale"], "replicas under load: not in a sample, which says so"
    s = result["summary"]
    # The real local model: minutes of reading, so not in a sample run, and the run says so.
    assert "--limit" in s["local_model"]["skipped"] and "benchmarks.local_model" in s["local_model"]["skipped"]
    assert "A real local model" in (out / "report.md").read_text(encoding="utf-8")

    assert set(s["overhead_ms_p50"]) == SCENARIOS and set(s["ttft_ms_p50"]) == SCENARIOS
    for k in SCENARIOS:
        # The local server waits its TTFT before the first chunk, so TTFT holds it plus our overhead.
        assert s["overhead_ms_p50"][k] > 0
        assert s["ttft_ms_p50"][k] >= s["server_ttft_ms"] == 300
    # The phases, timed through the run hooks, split each question's overhead exactly.
    for scenario in result["latency"]["scenarios"].values():
        for q in scenario["samples"]:
            assert set(q["phases_ms"]) == {"snapshot", "extraction", "budget", "prompt", "client_http", "other"}
            assert all(v >= 0 for v in q["phases_ms"].values())
            assert sum(q["phases_ms"].values()) == pytest.approx(q["overhead_ms"])
    assert set(s["tokens_per_question_median"]) == CONTEXTS and set(s["answer_recall"]) == CONTEXTS
    assert all(s["tokens_per_question_median"][k] > 0 for k in CONTEXTS)
    assert all(0 <= s["answer_recall"][k] <= 1 for k in CONTEXTS)
    assert set(s["extraction_f1"]) == {"aeb", "wcxb"}
    assert all(0 < s["extraction_f1"][k] <= 1 for k in ("aeb", "wcxb"))
    assert 0 <= s["pass1_rate"] <= 1

    assert result["wtq"]["pages"] == 1 and result["wtq"]["questions"] > 0
    # Pages of every kind: each question scored for chatagent's context, the whole rendered text and its head.
    r = result["realistic"]
    assert r["single"]["questions"] == r["comparisons"]["questions"] == 1
    for row in (*r["rows"], *r["comparison_rows"]):
        assert {"chatagent", "whole", "head"} <= set(row) and all(row[k][1] > 0 for k in ("chatagent", "whole", "head"))
    assert all(row["chatagent"][1] <= 2000 for row in r["rows"])
    # Whole-page requests: one long page of the set, every wording scored, the realistic question's scope read.
    w = result["whole_page"]
    assert w["pages"] == 1 and len(w["rows"]) == 1 and w["decision"]["realistic_questions"] == 1
    assert all(0 <= v["coverage"] <= 1 and 0 < v["tokens_max"] <= 2000 for v in w["wordings"].values())
    assert {"whole_page_coverage", "whole_page_starved", "whole_page_summary_verbatim"} <= set(s["goals"])
    assert s["whole_page"]["pages"] == 1
    # Many tabs: the question over its page and nine others, at each total; the goal's figure reported.
    m = result["many_tabs"]
    assert m["questions"] == 1 and m["tabs"] == 10 and set(m["many"]) == {"4000", "8000"}
    assert all(0 < v["all_tokens_median"] <= 1.1 * int(t) for t, v in m["many"].items())
    assert "many_tabs_recall" in s["goals"] and "rows" not in s["many_tabs"]
    assert result["hotpot"]["questions"] == 1 and result["hotpot"]["tabs_median"] >= 2
    p = result["pass1"]
    assert {r["needs"] for r in p["questions_detail"]} == {"text", "scroll", "screenshot", "cost"}
    assert all(r["error"] is None for r in p["questions_detail"])
    # A question no page answers stops at a bound; pass-2 input tokens are reported.
    assert all(q["stop_reason"] in ("input_budget", "max_turns", "answered") for q in p["cost_questions"])
    t = s["pass2_input_tokens"]
    assert t["n"] >= 1 and 0 < t["median"] <= t["p90"] <= t["max"]
    goals = s["goals"]
    assert {"overhead_warm_1tab", "overhead_cold_1tab", "overhead_cold_10tab", "tokens_vs_full_text",
            "recall_vs_full_text", "realistic_recall", "realistic_tokens", "realistic_kinds",
            "realistic_comparisons"} <= set(goals)
    assert all(isinstance(g["met"], bool) for g in goals.values())

    # Offline answers: every WTQ question of the page and a HotpotQA question (both gold tabs), scored.
    off = result["offline"]
    assert off["wtq"]["pages"] == 1 and len(off["rows"]["wtq"]) == off["wtq"]["questions"] > 0
    assert all(r["error"] is None and r["kind"] in {"lookup", "superlative", "count", "comparison", "other"}
               for r in off["rows"]["wtq"])
    assert off["hotpot"]["gold tabs"]["questions"] == off["hotpot"]["gold tabs"]["both_gold"] == 1
    assert len(off["laptops"]["rows"]) == 4
    assert set(off["page_itself"]) == {"author", "published"} and all(r["error"] is None for r in off["rows"]["page_itself"])
    o = s["offline"]
    assert 0 <= o["wtq_answer_has"] <= o["wtq_answer_has_lenient"] <= 1 and 0 <= o["wtq_context_has"] <= 1

    report = (out / "report.md").read_text(encoding="utf-8")
    for heading in ("## Goals", "## Latency", "## Token cost", "## Pages of every kind", "## Whole-page requests",
                    "## Many tabs", "## Extraction quality",
                    "## Multi-tab", "## Pass-1 rate",
                    "## Offline answers"):
        assert heading in report
    assert "Input tokens per pass-2 question" in report
    for png in ("ttft.png", "overhead.png", "tokens_recall.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({png})" in report


def _check_e2e_pair(result: dict) -> None:
    """The bench's end-to-end section, one pair of one tab (`benchmarks.e2e`): `chatagent
    ask`, the minimal script and a warm daemon's ask, each a fresh process against the
    local Gemini-compatible server; figures sane, never against timing goals."""
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


@pytest.mark.slow
def test_bridge_latency_times_the_side_panels_first_question_and_a_follow_up(tmp_path: Path) -> None:
    from benchmarks.bridge_latency import main as bridge_main

    out = tmp_path / "bridge.json"
    assert bridge_main(["--reps", "1", "--think-s", "0.5", "--ttft-ms", "50", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    (sample,) = result["samples"]
    # Each TTFT includes the server's own 50 ms; the overhead is what the host added on top.
    for q in ("first", "follow_up"):
        assert sample[f"{q}_ttft_ms"] > 50 and 0 < sample[f"{q}_overhead_ms"] < sample[f"{q}_ttft_ms"]
    assert result["summary"]["first_overhead_ms"]["n"] == 1


# ---------------------------------------------------------------- the offline-answers yardstick


def test_offline_question_kinds_follow_the_documented_rule() -> None:
    from benchmarks.offline import KINDS, question_kind

    cases = {
        "what city has a radio station called the wolf?": "lookup",
        "name a team that scored no points in one game.": "lookup",
        "who won in 1999?": "lookup",
        "how many silver medals did macau earn?": "count",
        "what is the total number of films in kannada?": "count",
        "how many athletes got more than 500 preliminary points?": "count",  # "than" before a number filters
        "which athlete had the least final points?": "superlative",
        "what was the first book published by harper & brothers?": "superlative",
        "which is the tallest building?": "superlative",
        "which nation won more bronze medals than china?": "comparison",
        "who had more votes, byalko or livanov?": "comparison",
        "what is the difference between the 1st place time and the 8th place time?": "comparison",
        "how many more gold medals than silver?": "comparison",
        "which forest is on the list?": "lookup",  # "-est" that is no superlative
        "what is the average attendance?": "other",
        "did brazil win before 1992?": "other",
    }
    assert {q: question_kind(q) for q in cases} == cases
    assert set(cases.values()) == set(KINDS)


def test_offline_matching_normalises_numbers_and_wants_every_listed_answer() -> None:
    from benchmarks.offline import Asked, answer_body, answer_words, contains_gold

    # Numbers formatted differently: thousands separators, trailing decimal zeros, a currency sign.
    assert contains_gold(["2000"], "Attendance: 2,000 [Tab 1]")
    assert contains_gold(["6.7"], "| Class 5 | $6.70 |")
    assert contains_gold(["$1,349.00"], "It costs 1349 dollars.")
    assert contains_gold(["December 6, 2010"], "opened on 6 December 2010")
    # Whole words by default: "3" is not in "2013"; the lenient variant is a substring test.
    assert not contains_gold(["3"], "In 2013 it won.")
    assert contains_gold(["3"], "In 2013 it won.", lenient=True)
    # A list gold ("A|B") needs every value; case and punctuation do not matter.
    assert contains_gold("KK93|The Dam", "KK93 and THE DAM, both owned by Riverfront")
    assert not contains_gold(["KK93", "The Dam"], "only KK93 is listed")
    # Citations are not answer text: "1" is not found in "[Tab 1]", nor a tab's title in its heading.
    answer = "From [Tab 1] (Hong Kong medal table):\n| 7 | Hong Kong | 2 | 13 | [Tab 1]"
    assert not contains_gold(["1"], answer_body(answer))
    assert not contains_gold(["medal table"], answer_body(answer))
    assert contains_gold(["13"], answer_body(answer)) and answer_words(answer) == 5
    # Nor are the ids of cited passages: no "4" in "[1.4]", no "2.3" in "[2.3, 2.5]".
    assert not contains_gold(["4"], answer_body("It rains [1.4].")) and answer_words("It rains [1.4][2.3, 2.5].") == 2
    assert not contains_gold(["2.3"], answer_body("It rains [2.3, 2.5]."))
    # A question that ended at a bound has no answer: its note's figures are never matched.
    stopped = Asked(answer="I stopped looking: … past its input-token budget of 14,576 tokens.", pass_=2,
                    stop_reason="input_budget")
    assert stopped.scored == "" and Asked(answer="| 7 |", pass_=1, stop_reason="answered").scored == "| 7 |"


def test_offline_page_itself_is_scored_by_its_first_author_or_its_day() -> None:
    from benchmarks.offline import Asked, score_self

    def said(answer: str) -> Asked:
        return Asked(answer=answer, stop_reason="answered")

    assert score_self("author", "Aditya Mahindru, Pradeep Patil", said("By Aditya Mahindru [Tab 1]"))
    assert not score_self("author", "Ada Quill", said("By Stef Keegan [Tab 1]"))
    assert score_self("published", "2025-03-03T10:00:00", said("Published 3 March 2025 (2025-03-03) [Tab 1]"))
    assert score_self("published", "2025-03-03", said("By Maren Oyelaran · 3 March 2025 [Tab 1]"))
    assert not score_self("published", "2025-03-03", said("Published 4 March 2025 (2025-03-04) [Tab 1]"))
    assert not score_self("published", "2025-03-03", Asked(answer="2025-03-03", stop_reason="max_turns"))


def test_offline_deciding_evidence_and_verdicts() -> None:
    from benchmarks.offline import deciding_sentences, names_first, quotes, states_answer

    q = "Which building is taller, Bertelsmann Building or 432 Park Avenue?"
    titles = ("Bertelsmann Building", "432 Park Avenue")
    bertelsmann = [
        "The former Bertelsmann Building is an office tower in Times Square.",
        "It is a 44-story, 733 foot (223 m) office building.",
    ]
    # A comparison of heights: the evidence is the sentence that states a figure.
    assert deciding_sentences(q, titles, bertelsmann) == [bertelsmann[1]]
    long = "It is a 44-story, 733 foot (223 m) office building completed in 1990 by Skidmore."
    assert quotes("From [Tab 2] (x):\n44-story, 733 foot (223 m) office building completed in 1990 [Tab 2]", long)
    assert not quotes("an office building", long)
    # A verdict is in the model's own words: a copied page sentence naming one side is a quote.
    page = "432 Park Avenue is a residential skyscraper."
    assert names_first("432 Park Avenue is taller. [Tab 2]", "432 Park Avenue", titles, page)
    assert not names_first(page + " [Tab 2]", "432 Park Avenue", titles, page)
    assert not names_first("432 Park Avenue or Bertelsmann Building", "432 Park Avenue", titles, page)
    assert names_first("432 Park Avenue.", "432 Park Avenue", titles, page)  # short: a verdict, though the page names it
    assert states_answer("Yes. Both are dog breeds [Tab 1] [Tab 2]", "yes", "Are both X and Y dogs?", ("X", "Y"), "")
    assert not states_answer("No.", "yes", "Are both X and Y dogs?", ("X", "Y"), "")
    assert states_answer("Tikkun is a magazine. [Tab 1]", "magazine", "Tikkun and Moment are both what?",
                         ("Tikkun", "Moment (magazine)"), "")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs: one for the browser server, one for the rest")
def test_the_load_benchmarks_layout_runs_the_rest_on_the_cpus_the_browser_server_leaves() -> None:
    from benchmarks.scale import LayoutError, cpu_layout

    cpus = frozenset(os.sched_getaffinity(0))
    browser = frozenset({min(cpus)})
    with cpu_layout(browser) as rest:
        assert rest == cpus - browser and os.sched_getaffinity(0) == rest
    assert os.sched_getaffinity(0) == cpus, "as it was, afterwards"
    with pytest.raises(LayoutError, match="leaves no CPU for the replicas"), cpu_layout(cpus):
        pass
    with pytest.raises(LayoutError, match="is not one this benchmark may use"), cpu_layout(frozenset({max(cpus) + 1})):
        pass
    with cpu_layout(None) as none:
        assert none is None and os.sched_getaffinity(0) == cpus


def test_cpu_per_page_tells_the_processes_of_a_page_read_apart() -> None:
    from benchmarks.cpu_per_page import _kind

    assert _kind("/usr/lib/chromium/chromium --headless --remote-debugging-pipe about:blank ") == "Chromium browser"
    assert _kind("/usr/lib/chromium/chromium --type=renderer --lang=en-US ") == "Chromium renderers"
    assert _kind("/usr/lib/chromium/chromium --type=zygote --no-zygote-sandbox ") == "Chromium renderers"
    assert _kind("/usr/lib/chromium/chromium --type=gpu-process --headless ") == "Chromium, other"
    assert _kind(".venv/lib/python3.11/site-packages/playwright/driver/node .../cli.js launch-server "
                 "--browser chromium --config /tmp/x.json ") == "Node"
    assert _kind("python -m playwright launch-server --browser chromium --config /tmp/x.json ") is None
    assert _kind("python -m chatagent mcp --http 127.0.0.1:4000 --stateless ") == "replica (Python)"
    assert _kind("python -B -c from multiprocessing.forkserver import main; main(9, 10, ['chatagent.extraction']) "
                 ) == "extraction workers"
    assert _kind("python -m pytest -q ") is None
