# Two self-contained entry points (see README.md):
#   make book   set up .venv and build the rendered book into _build/html/index.html
#   make test   set up .venv and run the unit tests plus nbval over every notebook
#   make check-book  the built book as readers see it (tests/browser/check_book.py; builds it if needed)
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PIP    := $(BIN)/python -m pip --disable-pip-version-check -q
NOTEBOOKS := $(wildcard book/*.ipynb)
JOBS ?= 2

.PHONY: setup book test unit nbval check-book clean

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install -r requirements.txt 2>&1 | { grep -v "is ignored" || true; }
	$(PIP) install --no-deps -e . 2>&1 | { grep -v "is ignored" || true; }
	$(BIN)/python -c "import torch, torchvision, attnconv, nbval, jupyter_book; print('torch', torch.__version__, '| attnconv', attnconv.__version__)"
	touch $(STAMP)

book: $(STAMP)
	$(BIN)/jupyter-book build --all -W -n --keep-going .
	@echo "Rendered book: $(CURDIR)/_build/html/index.html"

test: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile --nbval --nbval-current-env tests $(NOTEBOOKS)

unit: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile tests

nbval: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile --nbval --nbval-current-env $(NOTEBOOKS)

# The book is rebuilt for check-book only when a source is newer than the last build
# (`make book` always rebuilds).
BOOK_INDEX := _build/html/index.html
$(BOOK_INDEX): $(STAMP) _config.yml _toc.yml book/intro.md $(NOTEBOOKS)
	$(BIN)/jupyter-book build --all -W -n --keep-going .

# Structural checks always; browser checks when Chromium is installed (README: "Checking the
# rendered book"); screenshots in _build/screenshots/.
check-book: $(BOOK_INDEX)
	$(BIN)/python tests/browser/check_book.py

clean:
	rm -rf _build
