"""The offline answerer's reader: quotes from the typed page context, no generation:
`question` (one set of word lists), `passages`, `tables`, `compose` (the answer). The chat model
over it is `chatagent.models.extractive`."""
