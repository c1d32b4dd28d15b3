# Two entry points on a fresh machine (Python 3.11): `make demo` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-ray check lint bench bench-search bench-search-ray clean chromium postgres

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# The CPU build first: a plain `torch` requirement would pull a multi-GB CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	# The rest with uv, which keeps that torch (it satisfies the range) and installs the same
	# versions as pip in about a third of its time, bytecode compiled as pip does.
	$(BIN)/pip install --quiet uv
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -e '.[dev,hf,bench]'
	touch $(STAMP)

## Runs a real sweep of experiments/quickstart.py on a local Ray and a local MLflow store.
demo: $(STAMP)
	$(BIN)/sweeplab preview experiments/quickstart.py
	$(BIN)/sweeplab sweep experiments/quickstart.py
	$(BIN)/sweeplab best quickstart

## Lint, format, types and the import-layer contract (pyproject.toml's [tool.importlinter]).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

## The quick gate while editing: lint and the fast tests (no Ray started, no browser).
check: lint
	$(BIN)/python -m pytest -m "not slow and not browser" -q

# The HTML report's test renders it in Debian's headless Chromium.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# The tracking tests start a throwaway PostgreSQL cluster (Debian's postgresql, whose initdb and
# pg_ctl live in /usr/lib/postgresql/<version>/bin) behind a real `mlflow server`.
postgres:
	@ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || { \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; }

## Lint, types and the whole test suite: the fast tests on two processes, then the end-to-end
## sweeps (one shared local Ray) on one.
test: lint chromium postgres
	$(BIN)/python -m pytest -m "not slow" -n 2
	$(BIN)/python -m pytest -m slow --durations=25

bench: $(STAMP)
	$(BIN)/python -m benchmarks

## Search efficiency of the strategies in the simulator, 20 seeds (docs/search.md).
bench-search: $(STAMP)
	$(BIN)/python -m benchmarks.search.sim

## The same strategies as real sweeps on a local Ray, ranked against the simulator's ranking.
bench-search-ray: $(STAMP)
	$(BIN)/python -m benchmarks.search.agree

## The fast tier and a slow smoke (the simulator against real sweeps, the quickstart)
## on another Ray release the pin allows, in a venv of its own: `make test-ray RAY=2.59.0`.
RAY ?= 2.59.0
RAY_VENV := .venv-ray-$(RAY)
test-ray:
	$(PYTHON) -m venv $(RAY_VENV)
	$(RAY_VENV)/bin/pip install --quiet torch==2.13.0 uv
	$(RAY_VENV)/bin/uv pip install --quiet --python $(RAY_VENV)/bin/python -e '.[dev,hf,bench]' \
		'ray[default,tune,train]==$(RAY)'
	$(RAY_VENV)/bin/python -c 'import ray; assert ray.__version__ == "$(RAY)", ray.__version__'
	$(RAY_VENV)/bin/python -m pytest -m "not slow and not browser" -q -p no:cacheprovider
	$(RAY_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/simulate/test_faithful.py \
		tests/simulate/test_faithful_loop.py tests/test_experiments.py \
		-k "faithful or decide_alike or quickstart"

clean:
	rm -rf $(VENV) .venv-ray-* sweeplab-runs mlflow.db mlruns .mypy_cache .pytest_cache .ruff_cache
