# chatagent developer tasks. `make test` works from a fresh clone: it creates
# .venv, installs the package with its dev extras, checks for a Chromium, then
# runs the suite. Re-running setup is quick: pip runs again only when
# pyproject.toml changes (or the venv is new).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.chatagent-installed
DEMO_QUESTION ?= When did construction of the tram line begin?

.PHONY: setup browser demo test

setup: $(STAMP) browser

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

browser: $(STAMP)
	@$(PY) scripts/ensure_browser.py

demo: setup
	$(VENV)/bin/chatagent ask fixtures/pages/article.html -q "$(DEMO_QUESTION)"

test: setup
	$(PY) -m pytest -q
