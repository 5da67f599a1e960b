"""`chatagent context` run as a user would: a subprocess against the served fixtures."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from chatagent.browser.discovery import find_browser
from chatagent.cli import build_parser, main

from conftest import ROOT, Site
from warm_start import command

pytestmark = pytest.mark.e2e


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100", **(env or {})}
    return subprocess.run(
        command(*args),
        cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=timeout,
    )


def _no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout


def test_json_output_two_tabs_one_bad(site: Site, closed_port_url: str) -> None:
    proc = run_cli("context", site.url("product"), closed_port_url, "-q", "How much does it cost?",
                   "--budget", "1500", "--json")
    assert proc.returncode == 0, proc.stderr
    _no_traceback(proc)
    data = json.loads(proc.stdout)  # stdout is only the JSON: progress went to stderr
    assert data["question"] == "How much does it cost?" and data["budget_per_tab"] == 1500
    good, bad = data["tabs"]
    assert good["url"] == site.url("product") and good["error"] is None
    assert "$1,349.00" in good["text"] and good["tokens"] <= 3000
    assert good["title"].startswith("Aurora X14 Pro")
    assert bad["error"] and "connection refused" in bad["error"] and bad["text"] == ""
    assert "connection refused" in proc.stderr  # the failure is also reported to the user


def test_human_output_shows_each_tab(site: Site) -> None:
    proc = run_cli("context", site.url("long"), str(Site.path("table")), "--budget", "500",
                   "-q", "Where is the emergency generator for the east pier kept?")
    assert proc.returncode == 0, proc.stderr
    _no_traceback(proc)
    out = proc.stdout
    assert "tab 1: Bergholm Harbour Board" in out and "tab 2: 2024 Lakeside Marathon" in out
    assert site.url("long") in out and Site.path("table").as_uri() in out
    assert "selected" in out
    assert re.search(r"\d+ of [\d,]+ tokens \(\d+% of its text\)", out), out  # the cut tab's share
    assert "shed 41-C" in out
    # The tab the question is not about keeps a few of its lines, and says how much that is of it.
    table = out[out.index("tab 2:"):]
    assert re.search(r"size +\d+ of [\d,]+ tokens \(\d+% of its text\)", table) and "[2.1]" in table, table
    assert "2 tabs" in proc.stderr
    # What the page's markup says of itself is shown, as the model is given it.
    article = run_cli("context", site.url("article")).stdout
    assert re.search(r"author +Maren Oyelaran", article) and re.search(r"published +2025-03-03", article)


def test_local_path_and_timeout_note(site: Site) -> None:
    proc = run_cli("context", site.url("/slow"), "fixtures/pages/two_b.html", "--timeout", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    slow, local = json.loads(proc.stdout)["tabs"]
    assert any("did not finish loading" in n for n in slow["notes"])
    assert local["url"] == Site.path("two_b").as_uri() and "founded in 1791" in local["text"]


def test_huge_page_note_is_shown(site: Site) -> None:
    # Too big for main-text extraction: the user is told the visible text was used.
    proc = run_cli("context", site.url("huge_dom"), "-q", "Which platform does IC 2417 leave from?", "--json")
    assert proc.returncode == 0, proc.stderr
    _no_traceback(proc)
    (tab,) = json.loads(proc.stdout)["tabs"]
    assert tab["method"] == "rendered" and "7B" in tab["text"]
    assert any(n.startswith("This page is very large") and "visible text" in n for n in tab["notes"])


def test_no_readable_tab_is_an_error_with_a_clear_message(closed_port_url: str) -> None:
    proc = run_cli("context", closed_port_url, "ftp://files.example.org/x", "--json")
    assert proc.returncode == 1
    _no_traceback(proc)
    assert "No page could be read" in proc.stderr
    assert all(t["error"] for t in json.loads(proc.stdout)["tabs"])


def test_missing_browser_is_reported_not_raised(site: Site, tmp_path: Path) -> None:
    proc = run_cli("context", site.url("article"), env={"CHATAGENT_BROWSER": str(tmp_path / "nope")})
    assert proc.returncode == 1
    _no_traceback(proc)
    assert "CHATAGENT_BROWSER" in proc.stderr and proc.stdout == ""


def test_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["context", "--budget", "10", "x"])
    assert exc.value.code == 2 and "at least 64 tokens" in capsys.readouterr().err
    assert main(["context"]) == 2  # no URL and no --cdp
    assert "at least one URL" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2


def test_parser_has_subcommands_for_later_commands() -> None:
    parser = build_parser()
    args = parser.parse_args(["context", "a.html", "b.html", "-q", "why?", "--timeout", "3"])
    assert args.command == "context" and args.targets == ["a.html", "b.html"] and args.timeout == 3.0
    assert callable(args.handler)


def test_keyboard_interrupt_exits_130(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import chatagent.cli as cli

    async def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_context", interrupted)
    assert main(["context", "x.html"]) == 130
    assert "Interrupted" in capsys.readouterr().err


# --- attaching to a running Chrome over CDP ---------------------------------------------


@pytest.fixture
def running_chrome(site: Site, tmp_path: Path) -> Iterator[str]:
    """A separate headless Chromium with a debugging port and one tab already open."""
    args = [find_browser(), "--headless=new", "--remote-debugging-port=0", f"--user-data-dir={tmp_path / 'profile'}",
            "--no-first-run", "--no-default-browser-check", "--disable-gpu", site.url("two_b")]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.insert(1, "--no-sandbox")
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port_file = tmp_path / "profile" / "DevToolsActivePort"
    try:
        for _ in range(300):  # Chromium writes the chosen port once it listens
            if port_file.exists() and port_file.read_text().strip():
                break
            if proc.poll() is not None:
                pytest.fail("Chromium exited before opening its debugging port")
            time.sleep(0.1)
        else:
            pytest.fail("Chromium did not open its debugging port")
        yield f"http://127.0.0.1:{port_file.read_text().split()[0]}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _open_page_urls(endpoint: str) -> list[str]:
    with urllib.request.urlopen(endpoint + "/json/list", timeout=10) as resp:
        return [t["url"] for t in json.load(resp) if t.get("type") == "page"]


def test_cdp_reads_the_open_tabs_and_leaves_them_open(site: Site, running_chrome: str) -> None:
    for _ in range(100):  # the tab given on Chromium's command line may still be loading
        if site.url("two_b") in _open_page_urls(running_chrome):
            break
        time.sleep(0.1)
    proc = run_cli("context", "--cdp", running_chrome, "--json")
    assert proc.returncode == 0, proc.stderr
    tabs = json.loads(proc.stdout)["tabs"]
    (tab,) = [t for t in tabs if t["url"] == site.url("two_b")]
    assert "founded in 1791" in tab["text"]
    assert site.url("two_b") in _open_page_urls(running_chrome)  # the user's tab is still there


def test_cdp_with_urls_opens_and_then_closes_only_its_own_tabs(site: Site, running_chrome: str) -> None:
    proc = run_cli("context", "--cdp", running_chrome, site.url("two_a"), "--json")
    assert proc.returncode == 0, proc.stderr
    (tab,) = json.loads(proc.stdout)["tabs"]
    assert tab["url"] == site.url("two_a") and "founded in 1648" in tab["text"]
    urls = _open_page_urls(running_chrome)
    assert site.url("two_a") not in urls and site.url("two_b") in urls


def test_the_offline_model_reads_the_whole_table_a_language_model_is_sent_a_cut_of(tmp_path: Path) -> None:
    # 300 stations; the busiest is row 260. A language model is sent 2,000 tokens of the
    # page (the `budget`), which end long before it; the offline model's reading costs
    # nothing, so it reads the whole table (before, it named the busiest of the rows kept).
    rows = [(f"Station {i:03d}", f"{1000 + i * 37 % 900:,}") for i in range(1, 301)]
    rows[259] = ("Harbour Gate", "98,765")
    body = "".join(f"<tr><td>{name}</td><td>Line {i % 7 + 1}</td><td>{riders}</td></tr>" for i, (name, riders) in enumerate(rows))
    page = tmp_path / "stations.html"
    page.write_text(
        "<html><head><title>Stations of the city railway</title></head><body><h1>Stations of the city railway</h1>"
        f"<table><tr><th>Station</th><th>Line</th><th>Daily riders</th></tr>{body}</table></body></html>"
    )
    question = "Which station has the most daily riders?"
    context = run_cli("context", str(page), "-q", question, "--json")
    assert context.returncode == 0, context.stderr
    sent = json.loads(context.stdout)["tabs"][0]
    assert sent["tokens"] <= 2000 and "Harbour Gate" not in sent["text"]
    asked = run_cli("ask", str(page), "-q", question, "--model", "extractive", "--json")
    assert asked.returncode == 0, asked.stderr
    done = json.loads(asked.stdout.strip().splitlines()[-1])
    assert "Station: Harbour Gate; Line: Line 1; Daily riders: 98,765" in done["answer"], done


def test_the_offline_model_says_what_a_page_is_about_in_pass_1(site: Site) -> None:
    # Before, "What is this page about?" had no word to match: it went to the browser,
    # scrolled the 57k-token page and stopped at its input-token budget.
    asked = run_cli("ask", site.url("long"), "-q", "What is this page about?", "--model", "extractive", "--json")
    assert asked.returncode == 0, asked.stderr
    done = json.loads(asked.stdout.strip().splitlines()[-1])
    assert done["pass"] == 1 and done["tool_calls"] == 0, done
    # A summary quoted from the page (offline/summary.py), from its opening on, each line cited.
    assert done["answer"].startswith(
        "This page collects the summaries of the board's annual reports, year by year"
    ), done["answer"]
    assert any(c["block"] for c in done["citations"]), done["citations"]
    assert [o["tab_id"] for o in done["overviews"]] == ["1"], "it was given an overview of the page, and says so"


def test_the_offline_model_quotes_the_reviews_under_the_heading_it_found(site: Site) -> None:
    # The reviews' heading is only in the text read from the screen; it used to be the whole answer.
    asked = run_cli("ask", site.url("product"), "-q", "What do customers say about it?", "--model", "extractive", "--json")
    assert asked.returncode == 0, asked.stderr
    done = json.loads(asked.stdout.strip().splitlines()[-1])
    # Under the heading, or under its heading path where the passage was picked from further down.
    assert re.match(r"(?:[^\n]* › )?Customer reviews \[Tab 1\]\n", done["answer"]), done["answer"]
    assert "- I used it for a whole conference day" in done["answer"], done["answer"]


def _panel_lines(out: str) -> list[str]:
    return [line.strip("│ ") for line in out.splitlines()]


def test_the_text_shows_the_passage_ids_the_model_cites(site: Site) -> None:
    proc = run_cli("context", site.url("kayak_care"))
    assert proc.returncode == 0, proc.stderr
    lines = _panel_lines(proc.stdout)
    assert any(line.startswith("[1.1] Rinse the hull") for line in lines), proc.stdout
    # What the page collapses is read but has no id: it cannot be cited.
    assert "Store the kayak upside down on padded racks in a frost-free shed from November to March." in lines
    bare = _panel_lines(run_cli("context", site.url("kayak_care"), "--no-ids").stdout)
    assert any(line.startswith("Rinse the hull") for line in bare) and not any(line.startswith("[1.") for line in bare)


def test_a_request_about_the_whole_page_is_given_an_overview_and_each_tab_says_so(site: Site) -> None:
    """The handbook (~7,600 tokens in fourteen sections) is far over its budget: asked for a
    recap, it is given as an overview of the whole page, and its summary line says so, as
    many of its parts as were shown; the short page beside it is whole. A question that names
    something on it gets the parts that match, as before."""
    guide, product = site.url("orchard_guide"), site.url("product")
    request = "Quick recap of this page, please"
    proc = run_cli("context", guide, product, "-q", request, "--json")
    assert proc.returncode == 0, proc.stderr
    long_tab, short_tab = json.loads(proc.stdout)["tabs"]
    assert long_tab["overview"] and long_tab["scope"] == "whole", long_tab["scope"]
    assert 1 <= long_tab["parts_shown"] <= long_tab["parts"] and long_tab["parts"] > 1
    assert long_tab["tokens"] < long_tab["original_tokens"]
    assert not short_tab["overview"] and short_tab["tokens"] == short_tab["original_tokens"]
    shown = (f"all {long_tab['parts']} parts" if long_tab["parts_shown"] == long_tab["parts"]
             else f"{long_tab['parts_shown']} of {long_tab['parts']} parts")

    human = run_cli("context", guide, product, "-q", request, env={"COLUMNS": "160"})
    assert human.returncode == 0, human.stderr
    _no_traceback(human)
    sizes = [line for line in _panel_lines(human.stdout) if line.startswith("size")]
    assert len(sizes) == 2, human.stdout
    pct = round(100 * long_tab["tokens"] / long_tab["original_tokens"])
    assert (f"{long_tab['tokens']:,} of {long_tab['original_tokens']:,} tokens ({pct}% of its text)  "
            f"overview of the whole page: {shown}") in sizes[0], sizes[0]
    assert "truncated" not in sizes[0] and "selected" not in sizes[0], "an overview is no cut start, no selection"
    assert "overview" not in sizes[1], sizes[1]

    search = run_cli("context", guide, "-q", "When should bare-root trees be planted?", "--json")
    (tab,) = json.loads(search.stdout)["tabs"]
    assert tab["scope"] == "search" and not tab["overview"] and tab["selected"]
    assert "Plant bare-root trees between November and March" in tab["text"]
