"""A one-page call beside a question whose model replies with thousands of tool
calls, in `chatagent mcp` over stdio (issue 54, input 11).

One `chatagent mcp` (the SDK's client, stdio) whose model is `openai:local`,
an OpenAI-compatible stand-in in this process: it answers the question's
first turn by asking for the browser tools, then every turn with a reply of
`--calls` tool calls (`scroll_tool`), until the question's turns or deadline
end it (a window of 64,000 tokens: room for every turn). First a one-page
`read_pages` call alone, `--runs` times; then the question over one page, and once the stand-in has sent its first flood, the
same one-page call `--runs` times, one every `--spacing` seconds. Reported
as `benchmarks.offline_beside` reports: each call's latency, the medians,
their ratio, and whether the question was still running after each call.

    .venv/bin/python -m benchmarks.toolflood_beside [--runs 5] [--spacing 1] [--calls 5000] [--deadline 60]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time

from mcp import ClientSession, StdioServerParameters, stdio_client

from benchmarks.offline_beside import ROOT, calls_beside, one_page, report
from chatagent.agent import MAX_TURNS
from chatagent.prompts import ESCALATION_MARKER
from chatagent.testing.many_parts import serving
from chatagent.testing.openai_server import ChatReply, OpenAICompatibleServer, ToolCallFlood


async def main(runs: int, spacing: float, calls: int, deadline: float) -> None:
    replies = [ChatReply(text=f"{ESCALATION_MARKER} the page does not say"),
               *(ToolCallFlood(calls=calls) for _ in range(MAX_TURNS))]
    with serving() as base, OpenAICompatibleServer(replies=replies, window=64_000) as model:
        env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT)), "CHATAGENT_MODEL": "openai:local",
               "CHATAGENT_OPENAI_BASE_URL": model.url, "CHATAGENT_DEADLINE": f"{deadline:g}",
               "CHATAGENT_CONTEXT_WINDOW": "64000"}  # room for every turn's results
        params = StdioServerParameters(command=sys.executable, args=["-m", "chatagent", "mcp"], cwd=str(ROOT), env=env)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await one_page(session, f"{base}/ledger/100")  # its start: browser, workers
            alone = [await one_page(session, f"{base}/ledger/{101 + i}") for i in range(runs)]
            t0 = time.perf_counter()
            bomb = asyncio.create_task(session.call_tool(
                "ask_pages", {"urls": [f"{base}/ledger/1"], "question": "What does the last entry say?"}))
            while len(model.chat_requests) < 2 and not bomb.done():  # the first flood is on its way
                await asyncio.sleep(0.05)
            beside, running = await calls_beside(session, base, bomb, runs, spacing)
            asked = await bomb
            bomb_s = time.perf_counter() - t0
        floods = len(model.chat_requests) - 1
    said = " ".join(getattr(c, "text", "") for c in asked.content)
    report(alone, beside, running, bomb_s, f"{floods} floods of {calls:,} calls; {said}",
           "read_pages (MCP)", beside_what=f"a question whose model replies with {calls:,} tool calls")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--spacing", type=float, default=1.0)
    p.add_argument("--calls", type=int, default=5000)
    p.add_argument("--deadline", type=float, default=60.0)
    args = p.parse_args()
    asyncio.run(main(args.runs, args.spacing, args.calls, args.deadline))
