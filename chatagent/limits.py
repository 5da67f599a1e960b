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
# Seconds the offline model reads for one reply (`models.extractive`): a question of many
# parts over many tabs is minutes of CPU (10 parts over 10 tabs: 46 s on 2 cores). The parts
# not reached by then are named, not answered; a reply still reading at 1.5 times it is stopped.
DEFAULT_OFFLINE_TIMEOUT_S = 20.0
# Characters of a tab's rendered text, and of its HTML, taken from the browser (`browser.text_bound`):
# a page's own script can build any amount of text with no network; moving 20 M characters
# out of Chromium costs ~5 s and several times that in memory. Twice a 5 MB page's text.
DEFAULT_MAX_PAGE_CHARS = 10_000_000
# Renderer memory (PSS) a launched browser's pages may hold across open tabs (`browser.memory`):
# 20 tabs of ordinary pages hold ~1 GB; 20 of 3 MB pages, ~2 GB PSS (over 6 GB RSS).
DEFAULT_MAX_TABS_MB = 2000.0
DEFAULT_TOOL_TIMEOUT_S = 20.0  # seconds the side panel's tab waits for the extension to run one tool
# A page's extraction (`extraction_pool`): its worker is stopped past either. On 2 cores a page within
# extraction's caps takes 8 s at most (2 MB of 19,000 paragraphs); a PDF's reading stops itself at 20 s (`pdf`).
DEFAULT_EXTRACT_TIMEOUT_S = 30.0
# A worker's address space: warm, it peaks at ~250 MB; the largest page within extraction's caps
# (20 MB of visible text) at ~460 MB. 640 keeps a worker, this process and the Playwright driver
# within 1 GB together for any one page.
DEFAULT_EXTRACT_MEMORY_MB = 640.0

# What one PDF may cost (`pdf_worker`): PDFium reads it in a child process that is
# killed at these bounds, since a 500 KB file can inflate to gigabytes of page content.
PDF_PAGE_S = 10.0  # seconds one page may take to read (its content parsed, its text laid out)
PDF_READ_S = 20.0  # seconds the whole text of one PDF may take; the pages read by then are used
MAX_PDF_PAGES_READ = 2000  # pages of text read from one PDF
PDF_MEMORY_MB = 512  # memory the PDF reader may take beyond the document itself
PDF_FIND_S = 10.0  # seconds a scroll to a text may search a PDF (within the tools' 15 s)
MAX_PDF_FIND_PAGES = 5000  # pages a scroll to a text searches
# A page rendered for a screenshot: at most this many pixels and this long a side,
# whatever its size in points (a 14,400-point page at 1.5 px per point is 21,600 px square).
MAX_RENDER_PIXELS = 4_000_000
MAX_RENDER_SIDE = 4000
# One model reply, as it streams (`reply_bounds`, `models.http_bounds`): what a model
# server, broken or hostile, can make the process hold. A page's text asks for one or
# two calls a turn; a question runs at most the agent's 24.
MAX_REPLY_TOOL_CALLS = 32  # calls beyond these in one reply are ignored, and a note says so
MAX_REPLY_TOOL_ARGS_BYTES = 64_000  # all of a reply's tool-call arguments together
# Chunks that carry nothing (no text, no tool call, no usage, no finish reason): a
# reasoning model's hidden thoughts come as these, so generous; each is kept by the client.
MAX_EMPTY_CHUNKS = 20_000
MAX_MODEL_RESPONSE_BYTES = 32_000_000  # one streamed response from a model server, on the wire
# A question past its deadline is cancelled; a task that has not ended this long after
# (a library that loses the cancellation) is abandoned and its model connections closed.
CANCEL_GRACE_S = 1.0
TOKENIZE_TIMEOUT_S = 5.0  # a server's /tokenize answer, in all (not per read)
