"""The offline answerer (`extractive`): quotes from the typed page context, no generation.

`question` reads what is asked (one set of word lists), `passages` and `tables` find
the evidence, `compose` writes the answer, `model` is the LangChain chat model.
"""
