"""Tab labels: what the user and the model call a conversation's tabs.

One `TabLabels` per conversation gives each tab a number, "1", "2", … in the
order it first appears, and keeps it for the whole conversation, whatever id
the backend uses (the extension's Chrome tab ids, say). Backends word their
messages with the label, so no module rewrites ids inside text; a front end
that needs the backend's id maps it back through the tab itself."""

from __future__ import annotations

from collections.abc import Sequence

from .browser.base import Tab, TabFailure


class TabLabels:
    def __init__(self) -> None:
        self._labels: dict[str, str] = {}  # backend tab id -> label

    def assign(self, tabs: Sequence[Tab | TabFailure]) -> None:
        """Label `tabs`: one seen before keeps its label, a new one gets the next number."""
        for tab in tabs:
            label = self._labels.setdefault(tab.tab_id, str(len(self._labels) + 1))
            tab.label = label
