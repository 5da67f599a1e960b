"""What a question may cost. Hard limits, not settings: they bound what a
page or a caller can make the agent do. And the defaults of the settings that
tune the rest, owned here for the modules that use them (`context`, `agent`:
heavy to import) and read by `Settings`.

A module of their own, with no imports: the daemon's protocol checks them in
an `ask` process that never loads the settings machinery."""

MIN_TAB_BUDGET = 64  # tokens: below this a tab cannot hold its title and a marker
MAX_QUESTION_CHARS = 8000
MIN_INPUT_BUDGET = 10_000  # a question's input-token budget never goes below this

DEFAULT_TAB_BUDGET = 2000  # tokens of page text per tab (`context.ContextBuilder`)
DEFAULT_DEADLINE_S = 180.0  # a question is given up after this (`agent.ChatAgent`)
# A question's input tokens, all model calls together, stay within this many
# times its pass-1 request (`agent.ChatAgent`), but never below MIN_INPUT_BUDGET.
INPUT_BUDGET_FACTOR = 8.0
