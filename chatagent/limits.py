"""Hard limits, not settings: they bound what a page or a caller can make the agent do.

A module of their own, with no imports: the daemon's protocol checks them in
an `ask` process that never loads the settings machinery."""

MIN_TAB_BUDGET = 64  # tokens: below this a tab cannot hold its title and a marker
MAX_QUESTION_CHARS = 8000
MIN_INPUT_BUDGET = 10_000  # a question's input-token budget never goes below this
