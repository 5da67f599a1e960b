"""What hostile PDFs cost now (content that inflates without bound, pages huge
in points, 200,000 page references): time, and the peak resident size of
this process and of the PDF reader's processes.

    python -m benchmarks.pdf_bounds [--mcp]

Each PDF (`chatagent.testing.hostile_pdfs`) is written to a file by a process
of its own first (Linux keeps a process's peak across fork and exec, so the
one that builds a 600 MB stream forks no reader), then read in a fresh
process, so each peak is the reading's alone. With --mcp, also the latency of a one-page MCP
`read_pages` call alone, and while another call reads a PDF bomb.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from chatagent import pdf_worker
from chatagent.testing import hostile_pdfs as h

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "fixtures" / "pages" / "report.pdf"
CASES = {
    "text objects inflating to 150 MB (read)": ("read", lambda: h.bomb_then_fact(150, "A fact.")),
    "blank space inflating to 600 MB (read)": ("read", lambda: h.bomb_then_fact(600, "A fact.", objects=False)),
    "a 14,400-point page (screenshot)": ("render", lambda: h.huge_page(14_400)),
    "a 200,000-point page (screenshot)": ("render", lambda: h.huge_page(200_000)),
    "200,000 page references (scroll to a text)": ("find", lambda: h.many_page_references(200_000)),
}


def _one(name: str, path: str) -> dict[str, object]:
    op, _ = CASES[name]
    data = Path(path).read_bytes()
    start = time.monotonic()
    if op == "read":
        doc = pdf_worker.read_text(data)
        outcome: object = doc.notes
    elif op == "render":
        from PIL import Image

        outcome = Image.open(io.BytesIO(asyncio.run(pdf_worker.render_page(data, 0)))).size
    else:
        outcome = asyncio.run(pdf_worker.find_page(data, "words on no page"))
    return {
        "case": name, "bytes": len(data), "seconds": round(time.monotonic() - start, 1),
        "this_process_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "reader_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024,
        "outcome": outcome,
    }


async def _mcp() -> dict[str, float]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    with tempfile.TemporaryDirectory() as tmp:
        bomb = Path(tmp, "bomb.pdf")
        bomb.write_bytes(h.bomb_then_fact(150, "A fact."))
        params = StdioServerParameters(command=sys.executable, args=["-m", "chatagent", "mcp"], cwd=str(ROOT))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()

            async def one_page() -> float:
                start = time.monotonic()
                await s.call_tool("read_pages", {"urls": [str(REPORT)]})
                return time.monotonic() - start

            await one_page()  # the first call starts the browser and the workers
            alone = [await one_page() for _ in range(3)]
            bomb_start = time.monotonic()
            big = asyncio.create_task(s.call_tool("read_pages", {"urls": [str(bomb)]}))
            await asyncio.sleep(1.0)  # the bomb's reader is under way
            beside = await one_page()
            await big
            return {"one page alone (median of 3), s": round(statistics.median(alone), 2),
                    "one page beside the bomb, s": round(beside, 2),
                    "the bomb's call, s": round(time.monotonic() - bomb_start, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--make", help=argparse.SUPPRESS)
    parser.add_argument("--mcp", action="store_true", help="also the MCP latency beside a PDF bomb")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(_one(*args.one)))
        return
    if args.make:
        for i, (_, make) in enumerate(CASES.values()):
            Path(args.make, f"{i}.pdf").write_bytes(make())
        return
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "benchmarks.pdf_bounds", "--make", tmp], cwd=ROOT, check=True)
        for i, name in enumerate(CASES):
            path = Path(tmp, f"{i}.pdf")
            out = subprocess.run([sys.executable, "-m", "benchmarks.pdf_bounds", "--one", name, str(path)], cwd=ROOT,
                                 capture_output=True, text=True, check=True).stdout
            print(out.strip(), flush=True)
    if args.mcp:
        print(json.dumps(asyncio.run(_mcp())))


if __name__ == "__main__":
    main()
