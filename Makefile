# Two self-contained entry points (see README.md):
#   make book   set up .venv and build the rendered book into _build/html/index.html
#   make test   set up .venv and run the unit tests plus nbval over every notebook
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PIP    := $(BIN)/python -m pip --disable-pip-version-check -q
NOTEBOOKS := $(wildcard book/*.ipynb)
JOBS ?= 2

.PHONY: setup book test unit nbval clean

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

clean:
	rm -rf _build
