"""The child process `pdf_worker` starts: one request in (a JSON line, then the
document's bytes), PDFium's answers out as JSON lines. It imports little (no
asyncio), so it starts quickly, and caps its own memory before PDFium reads anything.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from . import pdf

_HEADER_BYTES = 1 << 16


def _die_with_parent() -> None:
    """Linux: killed when the process that started it ends, however it ends."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _cap_memory(mb: int) -> None:
    """The address space it has now (the document read in) plus `mb`: past it,
    an allocation fails and PDFium aborts, which the parent reads as "too large"."""
    try:
        import resource

        with open("/proc/self/statm") as f:
            now = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = now + (mb << 20)
        resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    except (ImportError, OSError, ValueError):
        pass  # no such limit here: the parent's timer still bounds it


def _read(doc: Any, request: dict[str, Any], say: Callable[..., None]) -> None:
    """Pages from `start` until `max_chars` are read; one page alone is cut at
    `max_chars`, so the text held stays within twice that."""
    say(pages=len(doc), title=doc.get_metadata_value("Title") or "")
    start, cap, left = int(request["start"]), int(request["max_chars"]), int(request["max_chars"])
    for i in range(start, min(len(doc), start + int(request["max_pages"]))):
        if left <= 0:
            break
        lines, kept = [], 0
        for line in pdf.page_lines(doc, i):
            if kept >= cap:
                break
            lines.append((line.text[: cap - kept], line.size))
            kept += len(lines[-1][0])
        say(page=i, lines=lines)
        left -= kept
    say(done=True)


def main() -> None:
    _die_with_parent()
    # The answers go out on a descriptor of their own: whatever a library prints is not one of them.
    inp, out = sys.stdin.buffer, os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())

    def say(**msg: Any) -> None:
        out.write(json.dumps(msg, ensure_ascii=False).encode() + b"\n")
        out.flush()

    request = json.loads(inp.readline(_HEADER_BYTES))
    data = inp.read(int(request["size"]))
    import pypdfium2  # noqa: F401 - loaded before the cap, which is then on what the document costs
    _cap_memory(int(request["memory_mb"]))
    try:
        doc = pdf.open_doc(data)
    except pdf.PdfError as exc:
        say(error="pdf", message=str(exc))
        return
    op = request["op"]
    try:
        if op == "read":
            _read(doc, request, say)
        elif op == "count":
            say(pages=len(doc))
        elif op == "text":
            say(text=pdf.page_text(doc, int(request["index"]))[: pdf.MAX_PDF_TEXT_CHARS])
        elif op == "render":
            say(png=base64.b64encode(pdf.render_page(doc, int(request["index"]))).decode())
        elif op == "find":
            say(found=pdf.find_page(doc, str(request["needle"]), 0, int(request["max_pages"])))
    except MemoryError:
        say(error="memory")
    except Exception as exc:  # noqa: BLE001 - a page PDFium cannot read (an index past the end, say)
        say(error="pdf", message=f"{type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main()
