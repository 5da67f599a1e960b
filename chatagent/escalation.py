"""Deciding, from pass 1's first tokens, that the page text is not enough.

Primary signal: the reply starts with `ESCALATION_MARKER` (the prompt asks for
it). The gate holds back only as many leading characters as could still be the
marker, so normal answers stream with no added delay, and the marker itself is
never shown. Fallback: the original design's phrase heuristic, applied to the
finished answer of pass 1.
"""

from __future__ import annotations

import re

from .prompts import ESCALATION_MARKER

# Answers longer than this are real answers that merely mention such words.
HEURISTIC_MAX_CHARS = 600
_PHRASES = re.compile(
    r"can['’]?t see|cannot see|can not see|unable to see|not visible|isn['’]?t visible|"
    r"need(?:s)? to scroll|scroll down|below the fold|take a screenshot|need a screenshot|"
    r"(?:text|content) (?:is|was) (?:not|n['’]t) (?:available|loaded|provided|included)|"
    r"(?:in|from) the (?:image|picture|chart|screenshot)",
    re.IGNORECASE,
)


class EscalationGate:
    def __init__(self, marker: str = ESCALATION_MARKER) -> None:
        self.marker = marker
        self._held = ""
        self.decided = False
        self.escalated = False
        self.reason = ""

    def feed(self, text: str) -> str:
        """Take the next streamed text; return what may be shown now."""
        if self.escalated:
            self.reason += text
            return ""
        if self.decided:
            return text
        self._held += text
        head = self._held.lstrip()
        if head.startswith(self.marker):
            self.decided = self.escalated = True
            self.reason = head[len(self.marker):]
            self._held = ""
            return ""
        if self.marker.startswith(head):
            return ""  # still could be the marker: hold these few characters
        self.decided = True
        out, self._held = self._held, ""
        return out

    def finish(self) -> str:
        """The stream ended: release whatever was held back."""
        self.decided = True
        out, self._held = self._held, ""
        return out


def looks_unanswerable(answer: str) -> bool:
    """The fallback heuristic: a short answer that says it cannot see or reach the content."""
    text = answer.strip()
    return bool(text) and len(text) <= HEURISTIC_MAX_CHARS and bool(_PHRASES.search(text))
