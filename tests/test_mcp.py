"""`chatagent mcp` through the SDK's real client (`ClientSession`), over stdio
and streamable HTTP: the tools and their schemas, read_pages within budget,
ask_pages offline (a long page summed up, asked in German) and through the
Gemini client against the local server with progress, bad calls answered as
tool errors while the server keeps serving, the bearer token, concurrent
clients on one shared tab, CDP and a remote browser server."""

from __future__ import annotations

import contextlib
import html
import os
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from mcp import ClientSession, StdioServerParameters, stdio_client

from chatagent.testing.ports import free_port
from chatagent.testing.gemini_server import GeminiServer, RecordedRequest, TextReply
from chatagent.tokens import count_tokens

from conftest import PAGES, ROOT, Site
from origin import listening
from warm_start import command

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.e2e]


@contextlib.asynccontextmanager
async def server(**env: str) -> AsyncIterator[ClientSession]:
    argv = command("mcp")
    params = StdioServerParameters(
        command=argv[0], args=argv[1:], cwd=str(ROOT),
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, name: str, args: dict[str, Any], **kw: Any) -> Any:
    return await session.call_tool(name, args, **kw)


# The tests of what a call answers share one server with the default settings (its start, a
# browser and extraction workers, is ~2 s of CPU each time); those of its start, its stop, its
# settings or of whether a page was read before start their own. One worker holds them all.
SHARED = pytest.mark.xdist_group("mcp-shared")


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def shared() -> AsyncIterator[ClientSession]:
    """One `chatagent mcp` for the module's SHARED tests. The SDK's client must be left in the
    task it was entered in, so a task of its own holds it open until the module is done."""
    import asyncio

    ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
    done = asyncio.Event()

    async def hold() -> None:
        try:
            async with server() as s:
                ready.set_result(s)
                await done.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    holder = asyncio.create_task(hold())
    try:
        yield await ready
    finally:
        done.set()
        await holder


@SHARED
async def test_tools_are_listed_read_only_with_input_and_output_schemas(shared: ClientSession) -> None:
    tools = {t.name: t for t in (await shared.list_tools()).tools}
    assert set(tools) == {"read_pages", "ask_pages"}, "list_tabs only when attached to a browser (--cdp)"
    for t in tools.values():
        assert t.annotations.read_only_hint and t.annotations.open_world_hint
        assert t.output_schema and t.output_schema["type"] == "object"
        assert len(t.description or "") < 120, "every client pays for the descriptions in every request"
    assert tools["read_pages"].input_schema["required"] == ["urls"]
    assert set(tools["ask_pages"].input_schema["required"]) == {"urls", "question"}
    # The limits the server enforces are in the schemas, where a calling model reads them.
    urls = tools["read_pages"].input_schema["properties"]["urls"]
    assert urls["minItems"] == 1 and urls["maxItems"] == 20
    budget = tools["read_pages"].input_schema["properties"]["budget_per_tab"]
    assert budget["minimum"] == 64 and budget["maximum"] == 32_000
    assert tools["ask_pages"].input_schema["properties"]["question"]["maxLength"] == 8_000


async def test_read_pages_fits_the_budget_and_marks_page_text_untrusted(site: Site) -> None:
    urls = [site.url("long"), str(PAGES / "product.html")]
    async with server() as s:
        whole = await call(s, "read_pages", {"urls": urls, "budget_per_tab": 400})
        asked = await call(s, "read_pages", {"urls": urls, "question": "How much does the laptop cost?", "budget_per_tab": 400})
    assert not whole.is_error and not asked.is_error
    for result in (whole, asked):
        pages = result.structured_content["pages"]
        assert [p["url"] for p in pages] == [site.url("long"), (PAGES / "product.html").as_uri()]
        assert result.structured_content["tokens"] <= 800
        for p in pages:
            assert p["text"].startswith("<page_context-") and p["text"].rstrip().endswith(">")
            body = p["text"].split("\n", 1)[1].rsplit("\n", 1)[0]
            assert count_tokens(body) == p["tokens"]
    assert not any(p["reused"] for p in whole.structured_content["pages"])
    assert all(p["reused"] for p in asked.structured_content["pages"]), "unchanged pages are not extracted again"
    long_whole, long_asked = whole.structured_content["pages"][0], asked.structured_content["pages"][0]
    assert long_whole["cut"] and not long_whole["selected"]
    # How much of the page that is, for a caller to say so.
    assert long_whole["page_tokens"] > 2 * long_whole["tokens"] > 0 and not long_whole["title_only"]
    assert long_whole["share"] == round(long_whole["tokens"] / long_whole["page_tokens"], 3)
    assert "$1,349.00" in asked.structured_content["pages"][1]["text"]


async def test_read_pages_says_a_page_was_given_as_an_overview_and_ask_pages_which_tabs_were(
    gemini: GeminiServer, site: Site,
) -> None:
    """Asked for the gist, the long handbook is an overview of all its parts (no cut start, no
    selection) and the short page beside it is whole; asked for a fact, the handbook is the
    parts that match it. The schema says what the fields mean; ask_pages names the tab."""
    urls = [site.url("orchard_guide"), site.url("product")]
    gemini.enqueue(TextReply(text="A handbook for growing old apple varieties [Tab 1]."))
    async with server(GOOGLE_API_KEY="test", GOOGLE_GEMINI_BASE_URL=gemini.url) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        gist = await call(s, "read_pages", {"urls": urls, "question": "Give me the gist of these pages"})
        fact = await call(s, "read_pages", {"urls": urls[:1], "question": "When should bare-root trees be planted?"})
        asked = await call(s, "ask_pages", {"urls": urls, "question": "Give me the gist of these pages",
                                            "model": "gemini-2.5-flash"})
    page = tools["read_pages"].output_schema["$defs"]["PageText"]["properties"]
    assert "overview of all its parts" in page["overview"]["description"] and "whole" in page["scope"]["description"]
    assert not gist.is_error and not fact.is_error and not asked.is_error, (gist.content, fact.content, asked.content)
    handbook, product = gist.structured_content["pages"]
    assert handbook["overview"] and handbook["scope"] == "whole"
    assert not handbook["cut"] and not handbook["selected"], "an overview is neither the page's start nor a selection"
    assert "The first orchard in the Marren Valley was planted in 1712" in handbook["text"]
    assert not product["overview"] and not product["cut"] and "$1,349.00" in product["text"]
    (searched,) = fact.structured_content["pages"]
    assert searched["scope"] == "search" and not searched["overview"] and searched["selected"]
    assert asked.structured_content["overviews"] == ["1"], asked.structured_content
    assert [c["tab"] for c in asked.structured_content["citations"]] == ["1"]


def _page_words(name: str) -> str:
    """A fixture page's text as a reader sees it: no tags, entities read, spaces collapsed."""
    text = re.sub(r"<(script|style)\b.*?</\1>|<[^>]+>", " ", Site.path(name).read_text(), flags=re.S | re.I)
    return " ".join(html.unescape(text).split())


@SHARED
async def test_asked_in_german_to_sum_up_a_long_page_the_offline_model_quotes_a_short_cited_summary(
    site: Site, shared: ClientSession,
) -> None:
    """A page of 120 years of harbour reports, far past what the offline model reads of a tab, and
    a request in German for a summary: the answer is a handful of the page's own sentences, a
    line each, each line ending in the blocks it quotes (the first of them that sentence), each
    cited block's quote found on the page, the whole short enough to read (≤ ~250 words). The
    tab was an overview, and read_pages, asked in French for a summary, says so of the page.

    And each block a line cites is that line's sentence: the line "The tanker Hekla ran aground
    near the outer roads in April; she was refloated after 7 days without loss of life." cited
    [1.22], that sentence, and [1.140], "The collier Brage ran aground ...; she was refloated
    after 7 days without loss of life.": another ship's accident, whose second clause is the same
    words. A reader who opens the second source finds a sentence the line does not say."""
    url = site.url("long")
    asked = await call(shared, "ask_pages", {"urls": [url], "model": "extractive",
                                             "question": "Kannst du mir diese Seite kurz zusammenfassen?"})
    read = await call(shared, "read_pages", {"urls": [url], "question": "Peux-tu me résumer cette page ?",
                                             "budget_per_tab": 2000})
    assert not asked.is_error and not read.is_error, (asked.content, read.content)
    out = asked.structured_content
    assert out["overviews"] == ["1"] and out["dropped_citations"] == 0 and not out["truncated"], out
    lines = [line for line in out["answer"].splitlines() if line.strip()]
    assert len(lines) >= 4, out["answer"]
    page = _page_words("long")
    quotes = {c["block"]: c["quote"] for c in out["citations"]}
    for line in lines:
        cited = re.search(r"(?:\s*\[\d+\.\d+\])+$", line)
        assert cited, f"a line that cites nothing: {line!r}"
        said = line[:cited.start()]
        assert said.strip() and "[" not in said and "**" not in said, line
        for block in re.findall(r"\[(\d+\.\d+)\]", cited.group(0)):
            quote = quotes.get(block, "")
            assert quote and quote.removesuffix("…").strip() in page, (block, quote)
        first = quotes[re.search(r"\d+\.\d+", cited.group(0)).group(0)]  # type: ignore[union-attr]
        assert first in said or said.removesuffix(" …").strip() in first, f"{line!r} first cites {first!r}"
    wrong = []  # every block a line cites, not only its first, is that line's sentence
    for line in lines:
        said = re.sub(r"(?:\s*\[\d+\.\d+\])+$", "", line).removesuffix(" …").strip()
        wrong += [(b, quotes[b]) for b in re.findall(r"\[(\d+\.\d+)\]", line)
                  if quotes[b] not in said and said not in quotes[b]]
    assert not wrong, wrong
    words = len(re.sub(r"\[\d+\.\d+\]", "", out["answer"]).split())
    assert 40 <= words <= 250, (words, out["answer"])
    tab, *passages = out["citations"]
    assert (tab["tab"], tab["url"], tab["block"]) == ("1", url, ""), tab
    assert passages and all(c["tab"] == "1" and c["url"].startswith(url + "#:~:text=") for c in passages), passages

    (whole,) = read.structured_content["pages"]
    assert whole["overview"] and whole["scope"] == "whole" and not whole["cut"] and not whole["selected"], whole
    assert whole["tokens"] <= 2000 < count_tokens(page)


@SHARED
async def test_read_pages_says_who_wrote_a_page_and_when_it_was_published(shared: ClientSession) -> None:
    result = await call(shared, "read_pages", {"urls": [str(PAGES / "article.html"), str(PAGES / "table.html")]})
    article, table = result.structured_content["pages"]
    assert (article["authors"], article["published"]) == (["Maren Oyelaran"], "2025-03-03")
    assert (table["authors"], table["published"]) == ([], "")


@SHARED
async def test_ask_pages_answers_offline_with_progress(shared: ClientSession) -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    result = await call(shared, "ask_pages", {"urls": [str(PAGES / "product.html")],
                                              "question": "How much does the Aurora X14 Pro cost?"},
                        progress_callback=on_progress)
    assert not result.is_error, result.content
    out = result.structured_content
    assert "$1,349.00" in out["answer"] and out["pass"] == 1 and out["stop_reason"] == "answered"
    assert out["citations"][0]["url"] == (PAGES / "product.html").as_uri()
    assert progress and "Opened 1 page" in (progress[0][2] or "")


@SHARED
async def test_progress_rises_with_every_step_of_an_answer_that_uses_the_browser(site: Site, shared: ClientSession) -> None:
    """The protocol wants progress to increase with each notification: a pass-2
    answer reports opening, escalating and each browser tool."""
    progress: list[tuple[float, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, message))

    result = await call(shared, "ask_pages", {"urls": [site.url("article")],
                                              "question": "What is the warehouse code for returns?"},
                        progress_callback=on_progress)
    again = await call(shared, "ask_pages", {"urls": [site.url("article")],
                                             "question": "What is the warehouse code for returns?"})
    assert not result.is_error and result.structured_content["pass"] == 2, result.content
    assert len(progress) >= 3 and any((m or "").endswith(" Tab 1…") for _, m in progress), "each tool, in words"
    assert not any("_tool" in (m or "") for _, m in progress)
    steps = [done for done, _ in progress]
    assert steps == sorted(set(steps)), steps
    assert not result.structured_content["cached"] and again.structured_content["cached"]


async def test_ask_pages_through_gemini_against_the_local_server(gemini: GeminiServer, site: Site) -> None:
    gemini.enqueue(TextReply(text="It costs $1,349.00 [Tab 1]."))
    progress: list[str | None] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    async with server(GOOGLE_API_KEY="test", GOOGLE_GEMINI_BASE_URL=gemini.url) as s:
        result = await call(s, "ask_pages", {"urls": [site.url("product")], "question": "How much is it?",
                                             "model": "gemini-2.5-flash"}, progress_callback=on_progress)
    assert not result.is_error, result.content
    assert progress, "progress notifications reach the client"
    assert result.structured_content["answer"] == "It costs $1,349.00 [Tab 1]."
    assert result.structured_content["input_tokens"] > 0
    request = gemini.generate_requests[0].text()
    assert "How much is it?" in request and "$1,349.00" in request


async def test_ask_pages_returns_the_cited_passages_with_their_quotes_and_links(gemini: GeminiServer, site: Site) -> None:
    def reply(request: RecordedRequest) -> TextReply:
        found = re.search(r"^\[(\d+\.\d+)\] [^\n]*Day pass", request.text(), re.M)
        return TextReply(text=f"A day pass costs €7 and covers the ferry too [{found.group(1) if found else '0.0'}][2.99].")

    gemini.responder = reply
    async with server(GOOGLE_API_KEY="test", GOOGLE_GEMINI_BASE_URL=gemini.url) as s:
        result = await call(s, "ask_pages", {"urls": [site.url("ferry_timetable"), site.url("coastal_bus")],
                                             "question": "Is there a day pass?", "model": "gemini-2.5-flash"})
    assert not result.is_error, result.content
    out = result.structured_content
    assert "[2.99]" in out["answer"] and out["dropped_citations"] == 1, "an id naming no passage is dropped, counted"
    [cited] = out["citations"]
    assert cited["tab"] == "2" and cited["block"] in out["answer"]
    assert cited["quote"] == "Day pass: €7, valid on bus 7 and on the Brenna ferry"
    assert cited["url"] == site.url("coastal_bus") + "#:~:text=Day%20pass%3A%20%E2%82%AC7%2C%20valid%20on%20bus%207%20and%20on%20the%20Brenna%20ferry"


@SHARED
async def test_bad_calls_are_tool_errors_and_the_server_keeps_serving(shared: ClientSession) -> None:
    page = str(PAGES / "product.html")
    bad = [
        ("read_pages", {"urls": []}, "at least 1 item"),
        ("read_pages", {"urls": ["ftp://example.com/x"]}, "Unsupported URL scheme"),
        ("read_pages", {"urls": [page], "budget_per_tab": 5}, "budget_per_tab"),
        ("read_pages", {"urls": ["tab-999"]}, "neither a URL nor an existing file"),
        ("ask_pages", {"urls": [page], "question": "   "}, "empty"),
        ("list_tabs", {}, "list_tabs"),
    ]
    for name, args, words in bad:
        result = await call(shared, name, args)
        assert result.is_error, (name, args)
        assert words in result.content[0].text, result.content[0].text
    ok = await call(shared, "read_pages", {"urls": [page], "question": ""})  # "": no question, as none
    assert not ok.is_error and "$1,349.00" in ok.structured_content["pages"][0]["text"]


@SHARED
async def test_bad_arguments_are_named_with_what_they_must_be(shared: ClientSession) -> None:
    """The caller (a model, often) reads which argument is wrong and what it
    must be, in the schema's names: not pydantic's report on a class of its own."""
    page = str(PAGES / "product.html")
    said = {
        words: (await call(shared, name, args)).content[0].text
        for name, args, words in [
            ("read_pages", {"urls": []}, "Bad arguments to read_pages: urls must list at least 1 item (it has 0)."),
            ("read_pages", {"urls": [page], "budget_per_tab": 5},
             "Bad arguments to read_pages: budget_per_tab must be at least 64 (it was 5)."),
            ("read_pages", {"urls": "https://example.com/"},
             "Bad arguments to read_pages: urls must be a list (it was 'https://example.com/')."),
            ("ask_pages", {"urls": [page]}, "Bad arguments to ask_pages: question is required."),
        ]
    }
    for words, text in said.items():
        assert text == words
        assert "pydantic" not in text and "validation error" not in text and "Arguments" not in text


@SHARED
async def test_a_model_it_cannot_use_is_told_as_the_model_argument(shared: ClientSession) -> None:
    result = await call(shared, "ask_pages", {"urls": [str(PAGES / "product.html")], "question": "How much is it?",
                                              "model": "gpt-nonsense"})
    text = result.content[0].text
    assert result.is_error and "Unknown model 'gpt-nonsense'." in text
    assert "Name another in the model argument, or leave it out for the server's model." in text
    assert "--model" not in text and "chatagent config" not in text


async def test_ctrl_c_stops_the_stdio_server_with_its_browser_while_its_client_keeps_stdin_open(site: Site) -> None:
    """The SDK reads stdin in a thread a cancel cannot stop: Ctrl-C must still end the
    server (a person running `chatagent mcp` in a terminal), and its browser with it."""
    import asyncio
    import json
    import signal

    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "chatagent", "mcp", cwd=str(ROOT), env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    async def send(message: dict[str, Any]) -> None:
        proc.stdin.write((json.dumps(message) + "\n").encode())  # type: ignore[union-attr]
        await proc.stdin.drain()  # type: ignore[union-attr]

    try:
        await send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        assert b'"id":1' in (await asyncio.wait_for(proc.stdout.readline(), 60)).replace(b" ", b"")
        await send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "read_pages", "arguments": {"urls": [site.url("product")]}}})
        assert b"1,349.00" in await asyncio.wait_for(proc.stdout.readline(), 60), "its browser is running"
        browsers = await asyncio.create_subprocess_exec("pgrep", "-P", str(proc.pid), stdout=asyncio.subprocess.PIPE)
        children = (await browsers.communicate())[0].split()
        proc.send_signal(signal.SIGINT)
        status = await asyncio.wait_for(proc.wait(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert status == 130 and b"Interrupted." in await proc.stderr.read()

    def left() -> list[bytes]:
        return [c for c in children if Path(f"/proc/{c.decode()}").exists()
                and b"zombie" not in Path(f"/proc/{c.decode()}/status").read_bytes().lower()]

    for _ in range(100):  # helpers (the pool's resource tracker) see their parent go and follow
        if not left():
            break
        await asyncio.sleep(0.1)
    assert children and not left(), "the server's own processes (the browser's driver) end with it"


async def test_a_browser_that_cannot_start_is_told_to_the_caller_in_one_line(tmp_path: Path) -> None:
    async with server(CHATAGENT_BROWSER=str(tmp_path / "no-such-chrome")) as s:
        result = await call(s, "read_pages", {"urls": [str(PAGES / "product.html")]})
    assert result.is_error
    text = result.content[0].text
    assert "no-such-chrome" in text and "browser" in text and "Traceback" not in text


@SHARED
async def test_pages_that_cannot_be_read_say_why(site: Site, shared: ClientSession) -> None:
    """Each page's reason reaches the caller: in read_pages by page, under the
    URL it gave; in ask_pages, with no page left to answer from, in the error."""
    read = await call(shared, "read_pages", {"urls": [site.url("/404"), site.url("product")]})
    asked = await call(shared, "ask_pages", {"urls": [site.url("/404")], "question": "How much is it?"})
    missing, product = read.structured_content["pages"]
    assert missing["url"] == site.url("/404") and "HTTP 404" in (missing["error"] or "")
    assert "$1,349.00" in product["text"]
    assert asked.is_error and "HTTP 404" in asked.content[0].text


@SHARED
async def test_a_page_that_cannot_be_read_is_named_by_its_url_not_by_a_counter_the_caller_never_saw(
    site: Site, shared: ClientSession,
) -> None:
    await call(shared, "read_pages", {"urls": [site.url("product")]})  # the server's tabs are counted from here on
    read = await call(shared, "read_pages", {"urls": [site.url("product"), site.url("/404")]})
    missing = read.structured_content["pages"][1]
    assert missing["error"] == (f"The page at {site.url('/404')} is an error page: the server answered "
                                "HTTP 404 Not Found. Check the address.")
    assert not any("Tab " in note for note in missing["notes"])


# --- streamable HTTP ---------------------------------------------------------------------


@contextlib.asynccontextmanager
async def http_server(token: str) -> AsyncIterator[str]:
    import asyncio

    import httpx2

    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        *command("mcp", "--http", f"127.0.0.1:{port}"), cwd=str(ROOT),
        env={**os.environ, "PYTHONPATH": str(ROOT), "CHATAGENT_MCP_TOKEN": token},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        async with httpx2.AsyncClient() as client:
            for _ in range(300):
                try:
                    await client.get(url)
                    break
                except httpx2.TransportError:
                    await asyncio.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        await proc.wait()


@contextlib.asynccontextmanager
async def http_client(url: str, token: str | None) -> AsyncIterator[ClientSession]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=120) as client, \
            streamable_http_client(url, http_client=client) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def test_over_http_a_token_is_required_and_two_clients_get_twenty_answers(site: Site) -> None:
    import asyncio

    import httpx2

    token = "s3cret-token-for-the-test"
    async with http_server(token) as url:
        async with httpx2.AsyncClient() as raw:
            refused = await raw.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert refused.status_code == 401
            wrong = await raw.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                   headers={"Authorization": f"Bearer {token}x"})
            assert wrong.status_code == 401
            # The scheme's name in any case, as HTTP allows: past the token check (406: this
            # raw request does not accept what the protocol answers with).
            lower = await raw.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                   headers={"Authorization": f"bearer {token}"})
            assert lower.status_code != 401
        async with http_client(url, token) as a, http_client(url, token) as b:
            assert {t.name for t in (await a.list_tools()).tools} == {"read_pages", "ask_pages"}
            calls = [
                call(a if i % 2 else b, "ask_pages" if i % 4 == 0 else "read_pages",
                     {"urls": [site.url("product")], "question": "How much does the Aurora X14 Pro cost?"})
                for i in range(20)
            ]
            results = await asyncio.gather(*calls)
    assert all(not r.is_error for r in results), [r.content for r in results if r.is_error]
    answers = [r.structured_content for r in results]
    assert all("$1,349.00" in (x.get("answer") or x["pages"][0]["text"]) for x in answers)


async def test_a_port_in_use_is_told_in_one_line_before_the_browser_starts() -> None:
    import asyncio
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = await asyncio.create_subprocess_exec(
            *command("mcp", "--http", f"127.0.0.1:{port}"), cwd=str(ROOT),
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 1 and out == b"", err
    assert f"Cannot listen on 127.0.0.1:{port}".encode() in err and b"--http" in err and b"Errno" not in err


async def test_listening_beyond_loopback_needs_a_token() -> None:
    import asyncio

    proc = await asyncio.create_subprocess_exec(
        *command("mcp", "--http", f"0.0.0.0:{free_port()}"), cwd=str(ROOT),
        env={**os.environ, "PYTHONPATH": str(ROOT), "CHATAGENT_MCP_TOKEN": ""},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 1 and b"mcp_token" in err and out == b""


async def test_list_tabs_over_cdp_and_read_a_listed_tab(site: Site) -> None:
    from benchmarks.server import debuggable_chromium

    async with debuggable_chromium(url=site.url("product")) as endpoint:
        async with server(CHATAGENT_CDP=endpoint) as s:
            listed = await call(s, "list_tabs", {})
            assert not listed.is_error, listed.content
            tabs = listed.structured_content["tabs"]
            [mine] = [t for t in tabs if t["url"] == site.url("product")]
            read = await call(s, "read_pages", {"urls": [mine["id"]], "question": "price?"})
            missing = await call(s, "read_pages", {"urls": ["tab-does-not-exist"]})
            again = await call(s, "list_tabs", {})
    assert not read.is_error and "$1,349.00" in read.structured_content["pages"][0]["text"]
    assert mine in again.structured_content["tabs"], "reading the user's own tab leaves it open"
    assert mine["title"].startswith("Aurora X14 Pro")
    assert missing.is_error and "list_tabs" in missing.content[0].text


def _open_tab(endpoint: str, url: str) -> None:
    """A new tab in the debuggable Chromium, as the user opens one (the DevTools HTTP endpoint)."""
    import urllib.parse
    import urllib.request

    request = urllib.request.Request(f"{endpoint}/json/new?{urllib.parse.quote(url, safe=':/')}", method="PUT")
    with urllib.request.urlopen(request, timeout=10):  # noqa: S310 - loopback
        pass


async def test_list_tabs_says_a_tab_showing_an_unnamed_local_file_is_there_without_its_address(
    site: Site, tmp_path: Path,
) -> None:
    """A page of the user's that shows a local file they did not name (here:
    in a frame) is never read. list_tabs still says the tab is open and why it
    cannot be read, typed, but nothing of it: not its content, nor the
    file's address or title (a client over --http need not learn the user's
    file names). The other tabs are listed as before."""
    import asyncio

    from benchmarks.server import debuggable_chromium

    secret = tmp_path / "secret-plans.txt"
    secret.write_text("TOP-SECRET-42\n")
    page = tmp_path / "my-notes.html"
    page.write_text('<title>My private notes</title><p>Notes.</p><iframe src="secret-plans.txt"></iframe>')
    async with debuggable_chromium(url=page.as_uri()) as endpoint:
        _open_tab(endpoint, site.url("product"))
        async with server(CHATAGENT_CDP=endpoint) as s:
            for _ in range(50):  # the second tab loading
                listed = await call(s, "list_tabs", {})
                assert not listed.is_error, listed.content
                if any(t["url"] == site.url("product") for t in listed.structured_content["tabs"]):
                    break
                await asyncio.sleep(0.1)
            schema = {t.name: t for t in (await s.list_tools()).tools}["list_tabs"].output_schema
    out = listed.structured_content
    assert [t["url"] for t in out["tabs"]] == [site.url("product")], "the readable tab, listed with its id"
    assert "unavailable" in schema["properties"], "the output schema says what a refused tab looks like"
    [refused] = out["unavailable"]
    assert refused["url"] is None and "local file" in refused["reason"] and "not named" in refused["reason"]
    assert "id" not in refused, "no id: read_pages would refuse it"
    said = str(out) + "".join(c.text for c in listed.content if c.type == "text")
    for private in ("TOP-SECRET", "secret-plans", "my-notes", "My private notes", str(tmp_path)):
        assert private not in said, private


async def test_a_remote_playwright_browser_server_does_the_browsing(site: Site) -> None:
    """The browser server started as the README says (launch-server, its config
    naming the system Chromium): the server reads pages through it."""
    from benchmarks.server import playwright_browser_server

    async with playwright_browser_server() as browsers:
        ws = browsers.ws
        assert ws.startswith("ws://127.0.0.1:")
        async with server(CHATAGENT_BROWSER_WS=ws) as s:
            read = await call(s, "read_pages", {"urls": [site.url("product")]})
    assert not read.is_error, read.content
    assert "$1,349.00" in read.structured_content["pages"][0]["text"]


async def test_a_browser_server_that_cannot_start_its_browser_is_told_so(tmp_path: Any) -> None:
    """`playwright run-server` on a machine without Playwright's own browser
    build: reached, but it cannot launch one. The message says so and how to
    start a server that can, not to check the browser_ws setting."""
    import asyncio
    import signal

    from chatagent.browser.playwright import PlaywrightBrowser
    from chatagent.errors import BrowserError

    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "playwright", "run-server", "--host", "127.0.0.1", "--port", str(port),
        env={**os.environ, "PLAYWRIGHT_BROWSERS_PATH": str(tmp_path)},  # no browser there
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, start_new_session=True,
    )
    try:
        assert proc.stdout
        line = await asyncio.wait_for(proc.stdout.readline(), 30)  # "Listening on ws://127.0.0.1:PORT/"
        with pytest.raises(BrowserError) as raised:
            await PlaywrightBrowser.connect_ws(line.decode().split()[-1])
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
    message = raised.value.message
    assert "cannot start its browser" in message
    assert "launch-server" in message and "executablePath" in message
    assert "browser_ws setting" not in message


async def test_over_http_two_clients_share_a_listed_tab_and_its_tools_take_turns(
    site: Site, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server attached to the user's Chrome, two clients, 20 questions at once
    on the one tab both listed: all answered, and the browser tools (pass 2
    scrolls) never run on that tab at the same time, since they share its
    scroll position. The server runs in this process so the tab can be watched."""
    import asyncio

    from benchmarks.server import debuggable_chromium
    from chatagent.browser.playwright import PlaywrightTab
    from chatagent.mcp_server import serve_http
    from chatagent.settings import Settings

    active: dict[int, int] = {}
    most = scrolls = 0
    scroll = PlaywrightTab.scroll

    async def watched(self: PlaywrightTab, *args: Any, **kw: Any) -> Any:
        nonlocal most, scrolls
        key = id(self.page)
        active[key] = active.get(key, 0) + 1
        most, scrolls = max(most, active[key]), scrolls + 1
        try:
            return await scroll(self, *args, **kw)
        finally:
            active[key] -= 1

    monkeypatch.setattr(PlaywrightTab, "scroll", watched)
    async with debuggable_chromium(url=site.url("article")) as endpoint:
        port = free_port()
        token = "a-token-for-this-test-only-0123456789"
        settings = Settings(cdp=endpoint, model="extractive", mcp_token=token)
        serving = asyncio.create_task(serve_http(settings, "127.0.0.1", port))
        url = f"http://127.0.0.1:{port}/mcp"
        try:
            await listening(port, 30)
            async with http_client(url, token) as a, http_client(url, token) as b:
                ids = []
                for client in (a, b):  # each lists the tabs: the second listing must not orphan the first's ids
                    listed = await call(client, "list_tabs", {})
                    [mine] = [t["id"] for t in listed.structured_content["tabs"] if t["url"] == site.url("article")]
                    ids.append(mine)
                results = await asyncio.gather(*(
                    call(client, "ask_pages", {"urls": [tab], "question": "What is the warehouse code for returns?"})
                    for _ in range(10) for client, tab in zip((a, b), ids)
                ))
        finally:
            serving.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await serving
    assert ids[0] == ids[1], "one tab, one id"
    assert all(not r.is_error for r in results), [r.content for r in results if r.is_error]
    assert all(r.structured_content["pass"] == 2 for r in results)
    assert scrolls >= 20, "every question used the browser"
    assert most == 1, "two scrolls ran on one tab at the same time"


async def test_the_server_runs_no_garbage_collection_until_it_is_warm(site: Site, tmp_path: Path) -> None:
    """Its start-up's long-lived objects are not scanned again and again
    (chatagent/startup.py): an agent's first call comes back sooner."""
    params = StdioServerParameters(  # the start itself: a fresh interpreter, not a warm one's fork
        command=sys.executable, args=["-m", "chatagent", "-vv", "mcp"], cwd=str(ROOT),
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    log = tmp_path / "stderr.txt"
    with log.open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            result = await call(s, "read_pages", {"urls": [site.url("product")], "question": "How much is it?"})
    assert not result.is_error and "$1,349.00" in result.structured_content["pages"][0]["text"]
    over = re.findall(r"start-up over after (\d+) garbage collections: (\d+) objects frozen", log.read_text())
    assert len(over) == 1, log.read_text()[-3000:]
    collections, frozen = map(int, over[0])
    assert collections < 60  # ~20 as the interpreter starts; unpaused, the runtime's imports alone run ~170
    assert frozen > 100_000  # what warming loaded, not only the command line's modules


# What another user of this machine runs: the SDK's client, with no token.
OTHER_USERS_CLIENT = """
import asyncio, sys
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

async def main(url, path):
    async with httpx2.AsyncClient(timeout=60) as http, streamable_http_client(url, http_client=http) as (r, w), \\
            ClientSession(r, w) as session:
        await session.initialize()
        result = await session.call_tool("read_pages", {"urls": [path]})
        print("READ", result.structured_content)

try:
    asyncio.run(asyncio.wait_for(main(*sys.argv[1:]), 60))
except BaseException as exc:
    print("REFUSED", type(exc).__name__, exc)
"""


async def test_over_http_on_loopback_another_user_is_refused_and_the_owner_is_given_a_token(
    tmp_path: Path, private_settings: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No token set: the loopback server makes one, saves it where only its
    owner can read it, and prints the client configuration with it; another
    user's process (uid 65534) cannot read the owner's private file through
    it, while the owner's client with the printed token can."""
    import asyncio
    import json
    import shutil
    import stat

    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to run a process as another user")
    monkeypatch.delenv("CHATAGENT_MCP_TOKEN", raising=False)
    diary = tmp_path / "diary.txt"
    diary.write_text("The spare key is under the blue flowerpot.\n")
    diary.chmod(0o600)
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        *command("mcp", "--http", f"127.0.0.1:{port}"), cwd=str(ROOT),
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        told = b""
        while b"\n}" not in told:  # the configuration, printed before the browser starts
            line = await asyncio.wait_for(proc.stderr.readline(), 60)
            assert line, told
            told += line
        config = json.loads(told[told.index(b"{"):])
        entry = config["mcpServers"]["chatagent"]
        assert entry["url"] == url
        token = entry["headers"]["Authorization"].removeprefix("Bearer ")
        assert len(token) >= 32 and f'mcp_token = "{token}"' in private_settings.read_text()
        assert stat.S_IMODE(private_settings.stat().st_mode) == 0o600

        other = await asyncio.create_subprocess_exec(
            "setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
            sys.executable, "-c", OTHER_USERS_CLIENT, url, str(diary), cwd="/",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(other.communicate(), 120)
        assert out.startswith(b"REFUSED"), out + err
        assert b"flowerpot" not in out

        async with http_client(url, token) as mine:
            read = await call(mine, "read_pages", {"urls": [str(diary)]})
        assert "flowerpot" in read.structured_content["pages"][0]["text"]
    finally:
        proc.terminate()
        await proc.wait()
