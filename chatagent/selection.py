"""What a person selected on a page and asks about. Light (pydantic alone), so
a front end can make one before the runtime's heavy parts have loaded;
`context.ContextBuilder` leads its tab's text with it."""

from __future__ import annotations

from pydantic import BaseModel, Field

from .limits import MAX_SELECTION_CHARS


class Selection(BaseModel):
    """Text selected in one of the question's tabs: its tab's text leads with
    it, then the page around it, within the tab's budget."""

    tab_id: str  # the tab's own id (`Tab.tab_id`), not its label
    text: str = Field(min_length=1, max_length=MAX_SELECTION_CHARS)
