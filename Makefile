# Two commands do all the set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# pytest-xdist workers for `make test`: most tests wait on subprocesses (whole nights), so one per core. Each
# worker builds the session fixtures it needs (the CLI night, the reliability states) in its own temp folder.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -gt 4 ] && n=4; echo $$n)

.PHONY: run test lint bench bench-accuracy serve clean mlflow-ui

# pip's own progress on a terminal; quiet in CI and logs (stdout not a terminal)
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "installing gpucost and its dependencies into $(VENV)"
	$(BIN)/python -m pip install $$(test -t 1 || echo --quiet) -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/gpucost run

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS)

lint: $(STAMP)
	$(BIN)/ruff check .

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
