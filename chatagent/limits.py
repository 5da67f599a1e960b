"""What a question may cost. Hard limits, not settings: they bound what a
page or a caller can make the agent do. And the defaults of the settings that
tune the rest, owned here for the modules that use them (`context`, `agent`,
`browser.playwright`, the bridge's `requests`: heavy to import, or above
`chatagent`) and read by `Settings`.

A module of their own, with no imports: the daemon's protocol checks them in
an `ask` process that never loads the settings machinery."""

MIN_TAB_BUDGET = 64  # tokens: below this a tab cannot hold its title and a marker
MAX_QUESTION_CHARS = 8000
# A passage the person selected and asks about (the side panel): its tokens come out of its tab's budget anyway.
MAX_SELECTION_CHARS = 20_000
MIN_INPUT_BUDGET = 10_000  # a question's input-token budget never goes below this
# A `context_window` setting below this could not hold the prompt's instructions and a tab's title.
MIN_CONTEXT_WINDOW = 512

DEFAULT_MODEL = "extractive"  # the offline model: answers with no key and no server
DEFAULT_TAB_BUDGET = 2000  # tokens of page text per tab (`context.ContextBuilder`)
DEFAULT_DEADLINE_S = 180.0  # a question is given up after this (`agent.ChatAgent`)
# An answer is cut at this many tokens of text (`agent.ChatAgent`): a model that runs on
# (a small local one repeating itself) costs no more than this, and no longer than it takes.
DEFAULT_MAX_ANSWER_TOKENS = 2000
MIN_ANSWER_TOKENS = 16
# A question's input tokens, all model calls together, stay within this many
# times its pass-1 request (`agent.ChatAgent`), but never below MIN_INPUT_BUDGET.
INPUT_BUDGET_FACTOR = 8.0
DEFAULT_LOAD_TIMEOUT_S = 15.0  # seconds a tab waits for its page to load (`browser.playwright`)
DEFAULT_MAX_RESPONSE_MB = 50.0  # a page, or a file it loads, larger than this is not loaded (`browser.playwright`)
# Characters of a tab's rendered text, and of its HTML, taken from the browser (`browser.text_bound`):
# a page's own script can build any amount of text with no network; moving 20 M characters
# out of Chromium costs ~5 s and several times that in memory. Twice a 5 MB page's text.
DEFAULT_MAX_PAGE_CHARS = 10_000_000
# Renderer memory (PSS) a launched browser's pages may hold across open tabs (`browser.memory`):
# 20 tabs of ordinary pages hold ~1 GB; 20 of 3 MB pages, ~2 GB PSS (over 6 GB RSS).
DEFAULT_MAX_TABS_MB = 2000.0
DEFAULT_TOOL_TIMEOUT_S = 20.0  # seconds the side panel's tab waits for the extension to run one tool
