"""Benchmarks over the public evaluation data in `../shared/data` (see its README).

A package of their own beside `chatagent`: they import the runtime, the
runtime never imports them. `chatagent bench` (`cli.register`, added to the
CLI through the `chatagent.commands` entry point; `suite.run_bench`) runs them
all in one process; each part also runs on its own (`python -m benchmarks.<part>`).

- `cli`: the `bench` command's flags.
- `suite`: the plan (`--quick` or everything), the summary and goals, the outputs.
- `latency`: question → first token through a `Runtime` and the real Gemini
  client against the local server; overhead by phase, timed through the run
  hooks (`python -m benchmarks.latency`).
- `context_bench`: WTQ answer recall and token cost, AEB/WCXB extraction F1,
  HotpotQA multi-tab cost (`python -m benchmarks.context_bench`).
- `pass1`: the pass-1 rate and pass-2 cost on the fixture questions.
- `data`: loaders for WikiTableQuestions, AEB, WCXB and HotpotQA.
- `scoring`: lenient answer matching, word-level precision/recall/F1, WCXB snippet checks.
- `server`: the pages served on 127.0.0.1, the headless browser the parts share
  and the settings their runtimes run with.
- `stats`: the one percentile definition every part reports with.
- `report`, `plots`: the Markdown report, the terminal summary, the PNG plots.
"""
