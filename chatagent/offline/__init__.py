"""The offline answerer (`extractive`): quotes from the typed page context, no generation:
`question` (one set of word lists), `passages`, `tables`, `compose` (the answer), `model`."""
