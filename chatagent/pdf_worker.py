"""PDFium in a child process, stopped at its bounds.

A PDF is untrusted, and a small one can cost without bound: a 500 KB content
stream inflates to 150 MB and gigabytes of parsed page objects, a 600-byte page
asks for a raster 21,600 pixels square, 200,000 references to one page keep a
search going for a minute. PDFium has no way to stop inside a page, and a thread
running it cannot be cancelled, so every PDFium call runs here, in a process of
its own: its memory capped by the kernel (RLIMIT_AS, so what a stream inflates
to is bounded too), its time by the caller, who kills it at the limit, or when
the call is given up (a cancelled tool, a question's deadline). The pages read
before a limit are kept, a page that passes one is left out with a note, and
reading goes on from the next while the whole PDF's time allows.

The child (`pdf_child`) answers in JSON lines only, never pickle: it has parsed untrusted
bytes, so what it says is untrusted too, and is checked.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from . import pdf
from .limits import MAX_PDF_FIND_PAGES, MAX_PDF_PAGES_READ, PDF_FIND_S, PDF_MEMORY_MB, PDF_PAGE_S, PDF_READ_S
from .pdf import Line, PdfError, PdfText

T = TypeVar("T")
# A bound on one message from the child (a page's text, a rendered page as base64):
# a child that says more is broken, and is not read on.
MAX_MESSAGE_BYTES = 64 << 20


@dataclass(frozen=True)
class PdfLimits:
    page_s: float = PDF_PAGE_S
    read_s: float = PDF_READ_S
    max_pages: int = MAX_PDF_PAGES_READ
    max_chars: int = pdf.MAX_PDF_TEXT_CHARS
    memory_mb: int = PDF_MEMORY_MB
    find_s: float = PDF_FIND_S
    find_pages: int = MAX_PDF_FIND_PAGES


class PdfLimitError(PdfError):
    """Reading a PDF passed one of its bounds (`PdfLimits`); the message says which."""


class _Died(Exception):
    """The child ended without answering: out of memory (PDFium aborts), or crashed."""


class _Worker:
    """One child process doing one job. `stop` may be called from any thread
    (it only signals); `close` by the thread that runs the job."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._stopped = False
        self._buf = bytearray()

    def start(self, request: dict[str, Any], data: bytes, memory_mb: int) -> None:
        with self._lock:
            if self._stopped:
                raise _Died("given up before it started")
            # -P: not the working directory first on the path, whatever is in it.
            self._proc = subprocess.Popen(
                [sys.executable, "-P", "-m", "chatagent.pdf_child"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,  # PDFium's own "out of memory" is told by the note instead
                start_new_session=True,  # a Ctrl-C at the terminal is the owner's to handle, not this child's
            )
        header = json.dumps({**request, "size": len(data), "memory_mb": memory_mb}).encode() + b"\n"
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(header)
            self._proc.stdin.write(data)
            self._proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass  # the child is gone: `next` reads its end

    def next(self, timeout: float) -> dict[str, Any]:
        """The child's next message, within `timeout` seconds (else TimeoutError)."""
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while (end := self._buf.find(b"\n")) < 0:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise _Died(self._why_ended())
            if len(self._buf) + len(chunk) > MAX_MESSAGE_BYTES:
                raise _Died(f"its answer passed {MAX_MESSAGE_BYTES >> 20} MB")
            self._buf += chunk
        line = bytes(self._buf[:end])
        del self._buf[:end + 1]
        try:
            msg = json.loads(line)
        except ValueError:
            msg = None
        if not isinstance(msg, dict):
            raise _Died("it answered in a way that is not its own")
        if msg.get("error") == "memory":
            raise _Died("memory")
        if msg.get("error") == "pdf":
            raise PdfError(str(msg.get("message", "")))
        return msg

    def _why_ended(self) -> str:
        assert self._proc is not None
        try:
            code = self._proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return "it stopped answering"
        if code == -signal.SIGABRT:  # how PDFium ends when an allocation fails at the cap
            return "memory"
        return "PDFium crashed on it" if code in (-signal.SIGSEGV, -signal.SIGBUS) else f"PDFium stopped (exit status {code})"

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            if self._proc is not None and self._proc.poll() is None:
                self._proc.kill()

    def close(self) -> None:
        self.stop()
        if self._proc is not None:
            self._proc.wait()
            assert self._proc.stdout is not None
            self._proc.stdout.close()


def _too_costly(what: str, why: str, limits: PdfLimits, seconds: float, doing: str = "") -> str:
    if why == "time":
        return f"{what} took longer than {seconds:g} s{doing}"
    if why == "memory":
        return f"{what} needs more than {limits.memory_mb} MB of memory{doing} (its content is too large)"
    return f"{what} failed{doing}: {why}"


def read_text(data: bytes, limits: PdfLimits | None = None) -> PdfText:
    """Each page's lines, from the first, until the document ends or a bound is
    reached. A page that passes the time or memory bound is left out (its lines
    empty, so the pages after it keep their numbers) and reading goes on from the next."""
    limits = limits or PdfLimits()
    out = PdfText()
    deadline = time.monotonic() + limits.read_s
    chars, page, opened, stop = 0, 0, False, ""
    while not stop:
        worker = _Worker()
        try:
            worker.start({"op": "read", "start": page, "max_pages": limits.max_pages - page,
                          "max_chars": limits.max_chars - chars}, data, limits.memory_mb)
            while True:
                left = deadline - time.monotonic()
                try:
                    msg = worker.next(min(limits.page_s, max(left, 0.0)))
                except TimeoutError:
                    why = "time" if left > limits.page_s else ""  # else the whole PDF's time is up
                except _Died as exc:
                    why = str(exc)
                else:
                    if msg.get("done"):
                        break
                    if "pages" in msg and not opened:
                        out.page_count, out.title, opened = int(msg["pages"]), str(msg.get("title", "")).strip(), True
                    elif "lines" in msg and int(msg.get("page", -1)) == page:
                        lines = [Line(str(t), float(s)) for t, s in msg["lines"]]
                        out.lines.append(lines)
                        chars += sum(len(line.text) for line in lines)
                        page += 1
                    continue
                if not why:
                    stop = f"after {limits.read_s:g} s"
                elif not opened:
                    raise PdfLimitError(_too_costly("opening it", why, limits, limits.page_s) + ".")
                else:
                    out.notes.append(
                        _too_costly(f"Page {page + 1} of this PDF", why, limits, limits.page_s, " to read")
                        + ", so its text is left out; the other pages are used."
                    )
                    out.lines.append([])
                    out.left_out.add(page)
                    page += 1
                break
        except (KeyError, TypeError, ValueError) as exc:  # a message that is not what the child says
            raise PdfError(f"the PDF reader answered wrongly ({exc})") from None
        finally:
            worker.close()
        if page >= out.page_count:
            break
        if chars >= limits.max_chars:
            stop = f"at {limits.max_chars:,} characters"
        elif page >= limits.max_pages:
            stop = f"at {limits.max_pages:,} pages"
        elif time.monotonic() >= deadline:
            stop = f"after {limits.read_s:g} s"
    if not opened:  # the whole PDF's time passed before it was even open: never a silent empty tab
        raise PdfLimitError(f"This PDF did not open within {limits.read_s:g} s (the reading stops then).")
    if len(out.lines) < out.page_count:
        out.notes.append(
            f"This PDF has {out.page_count:,} pages; the text of its first {len(out.lines):,} was read "
            f"(the reading stops {stop})."
        )
    return out


def _ask(worker: _Worker, data: bytes, request: dict[str, Any], limits: PdfLimits, seconds: float, what: str) -> dict[str, Any]:
    """One request, one answer, within `seconds`."""
    try:
        worker.start(request, data, limits.memory_mb)
        return worker.next(seconds)
    except TimeoutError:
        raise PdfLimitError(_too_costly(what, "time", limits, seconds)) from None
    except _Died as exc:
        raise PdfLimitError(_too_costly(what, str(exc), limits, seconds)) from None


async def _off_loop(job: Callable[[_Worker], T]) -> T:
    """`job` on a thread, its child killed as soon as the call is given up."""
    worker = _Worker()

    def run() -> T:
        try:
            return job(worker)
        finally:
            worker.close()

    try:
        return await asyncio.to_thread(run)
    except asyncio.CancelledError:
        worker.stop()  # the thread then ends at once: its child's pipe closes
        raise


async def page_count(data: bytes, limits: PdfLimits | None = None) -> int:
    limits = limits or PdfLimits()
    msg = await _off_loop(lambda w: _ask(w, data, {"op": "count"}, limits, limits.page_s, "opening it"))
    return max(int(msg["pages"]), 0)


async def page_text(data: bytes, index: int, limits: PdfLimits | None = None) -> str:
    limits = limits or PdfLimits()
    msg = await _off_loop(lambda w: _ask(w, data, {"op": "text", "index": index}, limits, limits.page_s,
                                         "reading it"))
    return str(msg["text"])


async def render_page(data: bytes, index: int, limits: PdfLimits | None = None) -> bytes:
    """Page `index` (from 0) as a PNG, scaled to a bounded raster (`pdf.render_scale`)."""
    limits = limits or PdfLimits()
    msg = await _off_loop(lambda w: _ask(w, data, {"op": "render", "index": index}, limits, limits.page_s,
                                         "rendering it"))
    return base64.b64decode(msg["png"])


async def find_page(data: bytes, needle: str, limits: PdfLimits | None = None) -> int | None:
    """The first page (of the first `limits.find_pages`) whose text holds `needle`."""
    limits = limits or PdfLimits()
    request = {"op": "find", "needle": needle, "max_pages": limits.find_pages}
    msg = await _off_loop(lambda w: _ask(w, data, request, limits, limits.find_s, "searching it"))
    found = msg["found"]
    return None if found is None else int(found)
