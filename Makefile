# odcf — set-up and checks. `make run` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
ODCF   := $(VENV)/bin/odcf
export PIP_DISABLE_PIP_VERSION_CHECK=1
export HF_HUB_OFFLINE=1
export HF_DATASETS_OFFLINE=1
export TRANSFORMERS_OFFLINE=1

.PHONY: run test install install-test clean

$(VENV)/.created:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q -U pip setuptools wheel
	touch $@

# core install: no torch
$(VENV)/.installed: $(VENV)/.created pyproject.toml
	$(PIP) install -q -e .
	touch $@

# test extras: pytest, hypothesis, plus the training stack (torch 2.13.0 CPU) and Ray, so every part is tested
$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(PIP) install -q -e '.[test,train,ray]'
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

run: $(VENV)/.installed
	@mkdir -p build
	$(ODCF) compress examples/msa_excerpt.md --ontology legal_contract \
		--query "liability cap, payment terms and termination notice" --role writer --budget 300 \
		--record build/run.record.json
	@echo
	@echo "---- delivery record (build/run.record.json) ----"
	@cat build/run.record.json

test: $(VENV)/.installed-test
	@bash .ci/ensure-chromium.sh || true
	$(PY) -m pytest -q

clean:
	rm -rf build .pytest_cache .hypothesis

# ---- benchmarks (issue 5): odcf vs peers on ../shared/data; peers live in their own venv ----
BENCH_VENV ?= .venv-bench
BENCH_PY   := $(BENCH_VENV)/bin/python
DATA       ?= ../shared/data

.PHONY: bench bench-quick

# torch is pinned in the same pip command: any other torch spec pulls a multi-GB CUDA build
$(BENCH_VENV)/.installed: pyproject.toml benchmarks/requirements.txt
	test -x $(BENCH_PY) || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_PY) -m pip install -q torch==2.13.0 -e . -r benchmarks/requirements.txt
	touch $@

# full run (~30 min on 2 cores): writes benchmarks/results/latest.md, results.json and the PNG plots
bench: $(BENCH_VENV)/.installed
	$(BENCH_PY) benchmarks/run.py --data $(DATA)

# small run (< 5 min): writes .cache/bench/run-quick/report/quick.md and plots (not committed)
bench-quick: $(BENCH_VENV)/.installed
	$(BENCH_PY) benchmarks/run.py --data $(DATA) --quick
