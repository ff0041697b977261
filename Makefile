# streamrt: the two set-up commands are `make demo` and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv demo test lint bench clean kafka

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,spark,faust]'
	touch $(STAMP)

venv: $(STAMP)

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
	rm -rf $(VENV) build *.egg-info

# Apache Kafka (KRaft) from Maven Central on 127.0.0.1 until Ctrl-C: make kafka [BROKERS=3]
BROKERS ?= 1
kafka: $(STAMP)
	$(BIN)/streamrt dev kafka --brokers $(BROKERS)
