# The two commands a fresh clone needs (Python 3.11 or later as python3):
#   make        the virtual environment, made or updated if needed, then the default build
#   make test   the same environment, then the full test suite on two workers
# Both are idempotent: the environment is (re)installed only when it is missing or when
# pyproject.toml or constraints.txt changed since it was made.
PYTHON ?= python3
VENV := .venv
INSTALLED := $(VENV)/.attnlab-installed
BIN := $(CURDIR)/$(VENV)/bin

.PHONY: build test env
build: $(INSTALLED)
	PATH="$(BIN):$$PATH" snakemake --cores all

test: $(INSTALLED)
	PATH="$(BIN):$$PATH" python -m pytest -q -n 2

env: $(INSTALLED)

$(INSTALLED): pyproject.toml constraints.txt
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -c constraints.txt -e .
	touch $@
