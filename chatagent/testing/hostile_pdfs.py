"""Small PDFs that cost without bound, written byte by byte, as a hostile site
or file could hand them to PDFium: content that inflates without bound, pages
huge in points, page trees of 200,000 references."""

from __future__ import annotations

import zlib

FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
CATALOG = b"<< /Type /Catalog /Pages 2 0 R >>"


def document(objects: list[bytes]) -> bytes:
    """Objects 1.. in order (1 the catalog, 2 the page tree), with a cross-reference table."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def stream(data: bytes, *, flate: bool = False) -> bytes:
    if flate:
        data = zlib.compress(data, 9)
        return b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(data), data)
    return b"<< /Length %d >>\nstream\n%s\nendstream" % (len(data), data)


def text_ops(text: str) -> bytes:
    return b"BT /F1 12 Tf 72 720 Td (%s) Tj ET\n" % text.encode("latin-1")


def page(contents: int, size: tuple[int, int] = (612, 792), font: int = 3) -> bytes:
    return (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Resources << /Font << /F1 %d 0 R >> >> "
            b"/Contents %d 0 R >>" % (*size, font, contents))


def pages(contents: list[bytes], size: tuple[int, int] = (612, 792)) -> bytes:
    """One page per content stream (object 3 is the font)."""
    n = len(contents)
    page_objs = [page(4 + n + i, size) for i in range(n)]
    kids = b" ".join(b"%d 0 R" % (4 + i) for i in range(n))
    return document([CATALOG, b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, n), FONT, *page_objs, *contents])


def inflating(mb: int, *, objects: bool) -> bytes:
    """A flate stream that inflates to `mb` MB: of text objects (PDFium keeps each, ~800 bytes apiece,
    and parses them slowly) or of blank space (fast to inflate, held whole)."""
    if objects:
        unit = text_ops("Zip bomb text line here")
    else:
        unit = b" " * 1023 + b"\n"
    return stream(unit * (mb * 1_000_000 // len(unit)), flate=True)


def bomb_then_fact(mb: int, fact: str, *, objects: bool = True) -> bytes:
    """Page 1 a content stream that inflates to `mb` MB; page 2 says `fact`."""
    return pages([inflating(mb, objects=objects), stream(text_ops(fact))])


def huge_page(points: int, text: str = "A very large page") -> bytes:
    """One page `points` square (the format's own limit is 14,400)."""
    return pages([stream(text_ops(text))], size=(points, points))


def many_page_references(n: int, text: str = "Every page says the same") -> bytes:
    """One page object referenced `n` times by the page tree: ~6 bytes a page."""
    kids = b" ".join([b"3 0 R"] * n)
    return document([CATALOG, b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, n),
                     page(4, font=5), stream(text_ops(text)), FONT])
