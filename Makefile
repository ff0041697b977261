# streamrt: the two set-up commands are `make demo` and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv bench-venv demo test test-fast lint bench bench-check bench-test bench-medians clean kafka

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,spark,faust,registry,librdkafka]'
	touch $(STAMP)

venv: $(STAMP)

# The `bench` extra (Quix Streams, orjson, py-spy) in its own venv: Quix Streams pins
# confluent-kafka < 2.13, streamrt pins 2.16.1. So streamrt's other dependencies and the extra
# (tools/bench_requirements.py), then streamrt itself without dependencies.
BENCH_VENV ?= .venv-bench
$(BENCH_VENV)/.installed: pyproject.toml tools/bench_requirements.py
	$(PY) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python tools/bench_requirements.py > $(BENCH_VENV)/requirements.txt
	$(BENCH_VENV)/bin/pip install -q -r $(BENCH_VENV)/requirements.txt
	$(BENCH_VENV)/bin/pip install -q --no-deps -e .
	touch $@

bench-venv: $(BENCH_VENV)/.installed

# make demo KAFKA=apache: the same demo on Apache Kafka 4.3.1 from Maven Central (1 broker)
KAFKA ?= embedded
demo: $(STAMP)
	$(BIN)/streamrt demo --kafka $(KAFKA)

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy streamrt
	$(BIN)/pytest -q -n 3 --durations=25

# The inner loop: no Spark/JVM (nor the differential suite against Kafka Streams) and no long
# integration scenarios (the full suite is `make test`).
test-fast: $(STAMP)
	$(BIN)/pytest -q -m "not slow and not spark and not differential and not kafka"

# Every benchmark at a quick size (minutes, not the published runs: see docs/benchmarks.md for
# the commands and sizes behind the published numbers). Results go to $(BENCH_OUT).
BENCH_OUT ?= /tmp/streamrt-bench
bench: $(STAMP) $(BENCH_VENV)/.installed
	mkdir -p $(BENCH_OUT)
	$(BIN)/python bench/peers_throughput.py --quick --quix-python $(BENCH_VENV)/bin/python \
		--out $(BENCH_OUT)/peers_throughput
	$(BIN)/python bench/broker_throughput.py --records 20000 --json $(BENCH_OUT)/broker_throughput.json
	$(BIN)/python bench/coordinator_static.py --members 100 --seconds 1 --initial-delay-ms 0
	$(BIN)/python bench/runtime_sessions.py --users 2000 --clicks 10000
	$(BIN)/python bench/spark_source.py --records 50000 --partitions 2
	$(BIN)/python bench/rolling_deploy.py --runs static,dynamic,faust --users 2000 --rate 100 \
		--out $(BENCH_OUT)/rolling_deploy --work-dir $(BENCH_OUT)/rolling_deploy-work
	PYTHONPATH=$(CURDIR) $(BIN)/python bench/standby_failover.py --keys 2000
	PYTHONPATH=$(CURDIR) $(BIN)/python bench/eos_kill.py --kills 3 --events 5000
	PYTHONPATH=$(CURDIR) $(BIN)/python bench/broker_cpu.py --mb 20 --brokers streamrt

# The headline figures (the demo's deploy gaps, rebalances and restored bytes, the throughput
# ratio to Quix Streams, the restore ratio to a bare fetch) rerun at a few-minute size and
# compared with bench/headlines.json; exit 1 when one got worse beyond its tolerance, 2 when a
# benchmark failed (docs/benchmarks.md, "Checking the headline figures").
# make bench-check CHECK_ARGS=--record  writes today's values.
CHECK_ARGS ?=
bench-check: $(STAMP)
	$(BIN)/python bench/check_headlines.py $(CHECK_ARGS)

# Every benchmark at a tiny size, completing and verifying its output (tests/bench, marked
# slow: a few minutes). Quix Streams runs when $(BENCH_VENV) exists, faust and Kafka Streams
# when installed; otherwise their tests skip with the reason.
bench-test: $(STAMP)
	$(BIN)/pytest -q tests/bench

# The published peers figures: RUNS runs of the harness, then medians and spread per
# contender with ratios taken within each run (docs/benchmarks.md, "Throughput against the
# peers"). KAFKA=apache runs them on Apache Kafka 4.3.1.
RUNS ?= 3
PEERS_ARGS ?= --records 1000000 --wordcount-records 200000 --session-records 300000 \
	--timeout 600 --contenders bare-confluent,streamrt-1t-rdk,quix,kafka-streams-1t
bench-medians: $(STAMP) $(BENCH_VENV)/.installed
	for i in $$(seq $(RUNS)); do PYTHONPATH=$(CURDIR) $(BIN)/python bench/peers_throughput.py \
		--kafka $(KAFKA) $(PEERS_ARGS) --quix-python $(BENCH_VENV)/bin/python \
		--out $(BENCH_OUT)/peers-$(KAFKA)-$$i || exit 1; done
	$(BIN)/python bench/peers_medians.py $$(seq -f '$(BENCH_OUT)/peers-$(KAFKA)-%g' $(RUNS))

lint: $(STAMP)
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy streamrt

clean:
	rm -rf $(VENV) $(BENCH_VENV) build *.egg-info

# Apache Kafka (KRaft) from Maven Central on 127.0.0.1 until Ctrl-C: make kafka [BROKERS=3]
BROKERS ?= 1
kafka: $(STAMP)
	$(BIN)/streamrt dev kafka --brokers $(BROKERS)
