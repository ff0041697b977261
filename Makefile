# streamrt: the two set-up commands are `make demo` and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv bench-venv demo test lint bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,spark,faust]'
	touch $(STAMP)

venv: $(STAMP)

# The `bench` extra (Quix Streams, orjson, py-spy) in its own venv: Quix Streams pins
# confluent-kafka < 2.13, the test/spark extras pin 2.16.1.
BENCH_VENV ?= .venv-bench
$(BENCH_VENV)/.installed: pyproject.toml
	$(PY) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install -q -e '.[bench]'
	touch $@

bench-venv: $(BENCH_VENV)/.installed

# Quick run of the peers benchmark (small sizes; full sizes: see docs/benchmarks.md).
bench: $(STAMP) $(BENCH_VENV)/.installed
	$(BIN)/python bench/peers_throughput.py --quick --quix-python $(BENCH_VENV)/bin/python

demo: $(STAMP)
	$(BIN)/streamrt demo

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy streamrt
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy streamrt

clean:
	rm -rf $(VENV) $(BENCH_VENV) build *.egg-info
