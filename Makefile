# One entry for each job a person does. `make serve` and `make test` are the quickstart.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
DATA_DIR ?= ./tracesets-data
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: setup setup-dev browser serve test lint typecheck pytest pytest-scaled fuzz load bench bench-scaled openapi clean

# Two stamps in the one .venv: the package alone (what `make serve` needs), and the test
# tools on top (pytest, mypy, playwright, torch: gigabytes), installed by the first target
# that runs a check or a test. Each is installed once, again when pyproject.toml changes,
# or setup.py and the C of the analysis pass (built in place: tracesets.analysis.compiled).
$(BIN)/.installed: pyproject.toml setup.py $(wildcard src/tracesets/analysis/native/*)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $@

$(BIN)/.installed-dev: $(BIN)/.installed
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

# The package is installed editable, so its bytecode is written here, as a wheel's install
# writes it; Python cannot cache it itself where PYTHONDONTWRITEBYTECODE is set, and each
# start of `tracesets` would compile every module it imports again (bench/README).
setup: $(BIN)/.installed
	$(BIN)/python -m compileall -q src

setup-dev: setup $(BIN)/.installed-dev

serve: setup  ## set up (the package only), then run the service on SQLite and ./tracesets-data
	$(BIN)/tracesets serve --host $(HOST) --port $(PORT) --data-dir $(DATA_DIR)

test: setup-dev lint typecheck pytest pytest-scaled  ## set up with the test tools, then every check and every test

lint: setup-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: setup-dev
	$(BIN)/mypy

browser:  ## Debian's chromium, which the page's tests drive (tests/web)
	command -v chromium >/dev/null || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium)

pytest: setup-dev browser  ## every test, on the embedded defaults (SQLite + local files)
	$(BIN)/pytest -q

pytest-scaled: setup-dev  ## the API and hardening suites again on PostgreSQL + S3 (started here, on loopback)
	BIN=$(BIN) scripts/with-scaled-services $(BIN)/pytest -q tests/api tests/hardening

fuzz: setup-dev  ## the contract fuzz at length (FUZZ_EXAMPLES=1000, FUZZ_SEED=… to vary it); README, "Hardening"
	FUZZ_EXAMPLES=$${FUZZ_EXAMPLES:-1000} $(BIN)/pytest -q tests/hardening/test_fuzz.py

load: setup-dev  ## 200 clients for 30 s on SQLite + local files, then on PostgreSQL + S3; figures, not pass/fail
	$(BIN)/python bench/load.py
	BIN=$(BIN) scripts/with-scaled-services $(BIN)/python bench/load.py

bench: setup-dev  ## figures and ratios, not pass/fail
	$(BIN)/python bench/upload_url.py
	$(BIN)/python bench/put_upload.py
	$(BIN)/python bench/cli_upload.py
	$(BIN)/python bench/inspect_traces.py
	$(BIN)/python bench/list_filter.py
	$(BIN)/python bench/workers.py

bench-scaled: setup-dev  ## the PostgreSQL and S3 figures, on services started here on loopback
	BIN=$(BIN) scripts/with-scaled-services sh -c '$(BIN)/python bench/list_filter.py --no-sqlite && $(BIN)/python bench/upload_url_backends.py && $(BIN)/python bench/multipart.py && $(BIN)/python bench/workers.py'

openapi: setup  ## rewrite openapi.json from the app
	$(BIN)/python -m tracesets.api.openapi > openapi.json

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
