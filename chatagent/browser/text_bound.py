"""`TextBound`: how much of a tab's text and HTML is taken from the browser.

A page's own script can build any amount of text with no network at all (a
300-byte page, 60 MB of text), which `max_response_mb` never sees. Moving it
out is what costs: through CDP, the Playwright driver and into Python, each
holding a copy (20 M characters: ~5 s, and gigabytes with the HTML). So the
cut is made in the page, by the script that gathers the text
(`frames.SNAPSHOT_JS`, `playwright._VIEWPORT_TEXT_JS`), before anything is
serialised: the renderer holds what the page built, nothing else does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..limits import DEFAULT_MAX_PAGE_CHARS

# A frame's document takes at most this share of the tab's bound, so the tab's frames
# (`frames.MAX_FRAMES` of them) together move no more than the page may.
FRAME_SHARE = 1 / 20


@dataclass(frozen=True)
class TextBound:
    """At most `limit` characters of a tab's rendered text, and as many of its HTML."""

    limit: int = DEFAULT_MAX_PAGE_CHARS

    @property
    def frame_limit(self) -> int:
        return max(1, int(self.limit * FRAME_SHARE))

    def cap(self, body: str, text: str, cut: dict[str, int]) -> tuple[str, str]:
        """A composed page (with its frames) within the bound; `cut` records the
        whole lengths of what was cut (as the page script does)."""
        if len(text) > self.limit:
            cut["text"] = max(cut.get("text", 0), len(text))
            text = text[: self.limit]
        if len(body) > self.limit:
            cut["html"] = max(cut.get("html", 0), len(body))
            body = body[: self.limit]
        return body, text

    def note(self, cut: Any) -> str | None:
        """What the tab says when its text or HTML was cut (`cut`: the page
        script's record of their whole lengths), else None."""
        if not isinstance(cut, dict) or not cut:
            return None
        text, frames = int(cut.get("text") or 0), int(cut.get("frames") or 0)
        if frames and not text and not cut.get("html"):
            return (f"The text of {frames} of this page's frames is longer than {self.frame_limit:,} characters: "
                    f"only the first {self.frame_limit:,} of each were read from the browser (a frame may take "
                    "a twentieth of the max_page_chars setting). To read more, raise max_page_chars.")
        if text:
            what = f"This page's text is longer than {self.limit:,} characters ({text:,}): only its first {self.limit:,} were"
        else:  # no length said: a page with shadow roots or frames stops writing its HTML at the bound
            what = f"This page's HTML is longer than {self.limit:,} characters: only its first {self.limit:,} were"
        return (f"{what} read from the browser (the max_page_chars setting)"
                + ("; the rest is left out." if text else "; its text was read whole.")
                + " To read more, raise max_page_chars.")
