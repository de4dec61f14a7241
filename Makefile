# rooflake developer tasks. `make` = lint + test.
VENV ?= .venv
PY := $(VENV)/bin/python
SRC_DIRS := api schema ingest store queries render views pipeline instrument cli spark
# the editable install (strict mode) maps files one by one: re-install when the file list changes
FILE_LIST := $(sort $(shell find $(SRC_DIRS) -type f \( -name '*.py' -o -name '*.sql' -o -name '*.xz' \) 2>/dev/null))
STAMP := $(VENV)/.rooflake-installed
LIST := $(VENV)/.rooflake-files

.PHONY: all install test lint format bench fuzz clean
all: lint test

$(PY):
	python3 -m venv $(VENV)

$(LIST): FORCE | $(PY)
	@echo "$(FILE_LIST)" | cmp -s - $@ || echo "$(FILE_LIST)" > $@

$(STAMP): pyproject.toml $(LIST) | $(PY)
	$(PY) -m pip install -q -e ".[dev]" --config-settings editable_mode=strict
	@touch $@

install: $(STAMP)

test: install
	$(PY) -m pytest

lint: install
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: install
	$(PY) -m pip install -q pandas  # the baseline of bench_nsys.py
	$(PY) bench/bench.py
	RL_BENCH_NSYS_BIG=0 $(PY) bench/bench_nsys.py  # its x8 comparison runs once, in bench_store.py
	$(PY) bench/bench_views.py
	$(PY) bench/bench_instrument.py
	$(PY) bench/bench_estimate.py
	$(PY) bench/bench_torch_trace.py  # the trace reader on a >= 400 MB scaled copy of a real Kineto trace
	$(PY) bench/bench_ranks.py  # rl ingest of an 8-rank job with --workers 2, then rl ranks
	$(PY) bench/bench_store.py  # last: its final table holds the issue-14 figures beside their floors

fuzz: install
	RL_FUZZ_RANDOM=1 RL_FUZZ_EXAMPLES=2000 $(PY) -m pytest tests/test_fuzz.py -p no:randomly

clean:
	rm -rf build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

FORCE:
