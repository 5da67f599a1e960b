"""Benchmarks over the public evaluation data in `../shared/data` (see its README).

- `data`: loaders for WikiTableQuestions, AEB, WCXB and HotpotQA.
- `scoring`: lenient answer matching, word-level precision/recall/F1, WCXB snippet checks.
- `context_bench`: answer recall and token cost of the page context, extraction
  quality and speed through the real headless browser
  (`python -m chatagent.bench.context_bench`).
"""
