# Two commands do all the set-up on a fresh machine: `make run` and `make test`.
# PYTHON=python3.12 make run: another Python (3.11, 3.12, 3.13) in a virtual environment of its own.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
# pyenv's shim for an installed Python that is not the selected one fails: ask pyenv which one it means
PYTHON_BIN := $(shell $(PYTHON) -c 'import sys; print(sys.executable)' 2>/dev/null || \
    (PYENV_VERSION=$$(pyenv whence $(PYTHON) 2>/dev/null | tail -n 1) pyenv which $(PYTHON) 2>/dev/null))
# one virtual environment per Python: .venv for the default, .venv-3.12 for PYTHON=python3.12
ifeq ($(origin PYTHON),file)
VENV ?= .venv
else
VENV ?= .venv-$(shell $(PYTHON_BIN) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
endif
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The exact versions, with hashes, of every dependency and extra, for every supported Python (`make lock`).
LOCK := requirements.lock
# pytest-xdist workers for `make test`: most tests wait on subprocesses (whole nights), so one per core. Each
# worker builds the session fixtures it needs (the CLI night, the reliability states) in its own temp folder; the
# tests sharing one run on one worker, the longest first (--dist loadgroup in pyproject.toml; tests/conftest.py).
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -gt 4 ] && n=4; echo $$n)
# e.g. LOCK_ARGS=--upgrade, or LOCK_ARGS='--upgrade-package prefect': what `make lock` may move
LOCK_ARGS ?=

.PHONY: run test test-fast lint lock lock-check bench bench-accuracy serve clean mlflow-ui

# The locked versions only (pip refuses anything without its hash; --no-deps: the lock is complete, and pip's resolver
# would otherwise re-resolve a dependency named with an extra, httpx[http2], against the index's newest release), then
# gpucost itself without dependencies; pip check fails when a package needs something the lock lacks. pip's progress on a terminal only.
$(STAMP): pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PYTHON_BIN) -m venv $(VENV)
	@echo "installing the locked dependencies ($(LOCK)) and gpucost into $(VENV)"
	$(BIN)/python -m pip install $$(test -t 1 || echo --quiet) --no-deps --require-hashes -r $(LOCK)
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/python -m pip check
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/gpucost run

# the checks first (`make lint`), then the whole suite
test: lint
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS)

# The tests that start no process, server or whole night (tests/conftest.py: the `slow` marker); a test that
# starts a process anyway fails here and says to mark it.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) -m "not slow" --forbid-processes

# ruff ([tool.ruff.lint]: with RUF, SIM and C90), mypy strict on flows/, tasks/ and gpucost/ ([tool.mypy]) and
# sqlfluff on sql/ (.sqlfluff, DuckDB; in two processes, with Python's note about the semaphores its pool leaves at
# exit silenced). Each runs even when one before it fails, so one pass says everything.
lint: $(STAMP)
	status=0; \
	$(BIN)/ruff check . || status=1; \
	$(BIN)/mypy || status=1; \
	PYTHONWARNINGS=ignore::UserWarning:multiprocessing.resource_tracker \
	    $(BIN)/sqlfluff lint sql --processes 2 || status=1; \
	exit $$status

# Re-compile the lock from pyproject.toml (keeping the locked versions unless LOCK_ARGS says otherwise), with
# the index and certificate pip is configured with here (PIP_INDEX_URL / PIP_CERT or pip's config files).
lock:
	test -x $(BIN)/python || $(PYTHON_BIN) -m venv $(VENV)
	test -x $(BIN)/uv || $(BIN)/python -m pip install --quiet "$$(grep -m1 '^uv==' $(LOCK) | cut -d' ' -f1)"
	index="$${PIP_INDEX_URL:-$$($(BIN)/python -m pip config get global.index-url 2>/dev/null)}"; \
	cert="$${PIP_CERT:-$$($(BIN)/python -m pip config get global.cert 2>/dev/null)}"; \
	env $${index:+UV_DEFAULT_INDEX=$$index} $${cert:+SSL_CERT_FILE=$$cert} \
	$(BIN)/uv pip compile pyproject.toml --all-extras --universal --generate-hashes --quiet \
	    --custom-compile-command 'make lock' $(LOCK_ARGS) -o $(LOCK)
	$(BIN)/python .ci/lock.py stamp

# No network: fails when pyproject.toml's dependencies changed since the lock was compiled.
lock-check:
	$(PYTHON_BIN) .ci/lock.py check

serve: $(STAMP)
	$(BIN)/gpucost serve

bench: $(STAMP)
	$(BIN)/python -m bench

bench-accuracy: $(STAMP)
	$(BIN)/python -m bench.accuracy

clean:
	rm -rf .gpucost

# The MLflow UI over the local store (GPUCOST_HOME defaults to .gpucost).
mlflow-ui: $(STAMP)
	$(BIN)/mlflow ui --backend-store-uri sqlite:///$${GPUCOST_HOME:-$(CURDIR)/.gpucost}/mlflow/mlflow.db
