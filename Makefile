# Two self-contained entry points (see README.md):
#   make book   set up .venv and build the rendered book into _build/html/index.html
#   make test   set up .venv, lint (ruff), run the unit tests plus nbval over every notebook; fails if that changed book/
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
# Another CUDA build of the pinned torch/torchvision (README, "Running the notebooks on a GPU box"),
# e.g. make setup TORCH_INDEX=https://download.pytorch.org/whl/cu126: the installed torch and
# torchvision are replaced by that index's builds of the pinned versions (their CUDA libraries
# come from the same index); requirements.txt's other pins are then installed as usual.
TORCH_INDEX ?=
TORCH_PINS := $(shell grep -E '^(torch|torchvision)==' requirements.txt)
# The test targets read the committed cpu runs whatever the machine (on a CUDA box the chapters'
# default profile is gpu, whose runs are not committed): tests/test_gpu_path.py checks this line.
TEST_ENV := ATTNCONV_PROFILE=cpu ATTNCONV_DEEP_PROFILE=deep
# Matplotlib's font cache lives in the venv: it records absolute font paths, and a cache shared by
# several checkouts is rebuilt (with a warning on stderr, which nbval fails on) when the venv that
# wrote it is removed. Built once, before any notebook runs.
export MPLCONFIGDIR := $(CURDIR)/$(VENV)/matplotlib
FONT_CACHE := $(VENV)/matplotlib/.built

.PHONY: setup book test unit nbval lint check-book clean FORCE

setup: $(STAMP) $(FONT_CACHE)

$(FONT_CACHE): $(STAMP)
	$(BIN)/python -c "import matplotlib.font_manager" 2>&1 | { grep -v "building the font cache" || true; }
	touch $(FONT_CACHE)

# Python >= 3.11 (torch 2.15 has no wheel for older ones), checked before anything is installed.
PYTHON_OK := import sys; sys.exit(sys.version_info < (3, 11))
$(STAMP): requirements.txt pyproject.toml $(if $(TORCH_INDEX),FORCE)
	@py=$$(test -x $(BIN)/python && echo $(BIN)/python || echo $(PYTHON)); \
	  $$py -c '$(PYTHON_OK)' 2>/dev/null || { echo "error: attnconv needs Python >= 3.11; $$py is" \
	  "$$($$py -V 2>&1 || echo missing) (make setup PYTHON=python3.11, after rm -rf $(VENV) if it exists)" >&2; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(if $(TORCH_INDEX),$(PIP) uninstall -y torch torchvision 2>/dev/null || true)
	$(if $(TORCH_INDEX),$(PIP) install --index-url $(TORCH_INDEX) $(TORCH_PINS))
	$(PIP) install -r requirements.txt 2>&1 | { grep -v "is ignored" || true; }
	$(PIP) install --no-deps -e . 2>&1 | { grep -v "is ignored" || true; }
	$(BIN)/python -c "import torch, torchvision, attnconv, nbval, jupyter_book; print('torch', torch.__version__, '| attnconv', attnconv.__version__)"
	touch $(STAMP)

book: $(STAMP)
	$(BIN)/jupyter-book build --all -W -n --keep-going .
	@echo "Rendered book: $(CURDIR)/_build/html/index.html"

# Chapters only read: the book's files (tests/book_state.py) must be the same after the notebooks ran.
BOOK_STATE := $(BIN)/python tests/book_state.py
define book_unchanged
	@$(BOOK_STATE) > .book-state-before
	$(1) || { rm -f .book-state-before; exit 1; }
	@$(BOOK_STATE) | diff .book-state-before - > /dev/null || { echo "executing the notebooks changed book/ (chapters must only read;" \
	  "python -m attnconv.regenerate makes runs and results):"; $(BOOK_STATE) | diff .book-state-before - ; rm -f .book-state-before; exit 1; }
	@rm -f .book-state-before; echo "book/ unchanged by the notebooks"
endef

# Code and notebook cells formatted to the book's column (ruff, line length 88) and linted; no
# dead code (vulture: paths and allow-list in pyproject.toml [tool.vulture]).
lint: $(STAMP)
	$(BIN)/ruff format --check attnconv tests book
	$(BIN)/ruff check attnconv tests book
	$(BIN)/vulture

test: $(STAMP) $(FONT_CACHE) lint
	$(call book_unchanged,$(TEST_ENV) $(BIN)/python -m pytest -n $(JOBS) --dist loadfile --nbval --nbval-current-env tests $(NOTEBOOKS))

unit: $(STAMP) $(FONT_CACHE)
	$(TEST_ENV) $(BIN)/python -m pytest -n $(JOBS) --dist loadfile tests

nbval: $(STAMP) $(FONT_CACHE)
	$(call book_unchanged,$(TEST_ENV) $(BIN)/python -m pytest -n $(JOBS) --dist loadfile --nbval --nbval-current-env $(NOTEBOOKS))

# The book is rebuilt for check-book only when a source is newer than the last build
# (`make book` always rebuilds).
BOOK_INDEX := _build/html/index.html
$(BOOK_INDEX): $(STAMP) _config.yml _toc.yml book/intro.ipynb $(NOTEBOOKS)
	$(BIN)/jupyter-book build --all -W -n --keep-going .

# Structural checks always; browser checks when Chromium is installed (README: "Checking the
# rendered book"); screenshots in _build/screenshots/.
check-book: $(BOOK_INDEX)
	$(BIN)/python tests/browser/check_book.py

clean:
	rm -rf _build

# The GPU path (README, "Running on a lent GPU"): both targets run with whatever torch is
# installed, offline, with no setup step (no $(STAMP)): PYTHONPATH=. and the python on PATH
# (GPU_PYTHON=... to name another). gpu-smoke is the fifteen-minute check (attnconv/gpu_smoke.py:
# phases, each guarded, results written after each into GPU_OUT); gpu-window is a short window
# (attnconv/gpu_window.py): the protocol's runs, the smoke test, one timed paper epoch per model and
# the gpu-sample runs, each phase under a hard limit, BUDGET seconds in all (at most 570: one
# remote command runs at most 600 s), at most 8 flat files back in GPU_OUT. DRY_RUN=1: every phase
# on the CPU with tiny models.
GPU_PYTHON ?= $(if $(wildcard $(BIN)/python),$(BIN)/python,$(PYTHON))
GPU_OUT ?= gpu-out
BUDGET ?= 480
SMOKE_BUDGET ?= 300
DRY_RUN ?=
.PHONY: gpu-smoke gpu-window
gpu-smoke:
	PYTHONPATH=. $(GPU_PYTHON) -m attnconv.gpu_smoke --out $(GPU_OUT) --budget $(SMOKE_BUDGET) $(if $(DRY_RUN),--dry-run)
gpu-window:
	PYTHONPATH=. $(GPU_PYTHON) -m attnconv.gpu_window --out $(GPU_OUT) --budget $(BUDGET) $(if $(DRY_RUN),--dry-run)

# The lowest supported torch (pyproject.toml: torch>=$(LOWER_TORCH)), tested: a second venv with its
# CPU wheels (PyTorch's CPU index; LOWER_INDEX= for PyPI's), the unit tests below and gpu_smoke
# --dry-run against this checkout (PYTHONPATH=., nothing installed from it). README: time and size.
LOWER_TORCH := 2.11.0
LOWER_TORCHVISION := 0.26.0
LOWER_VENV := .venv-lower
LOWER_INDEX ?= https://download.pytorch.org/whl/cpu
LOWER_TESTS ?= tests/core tests/test_doctor.py tests/test_gpu_audit.py tests/test_layout.py \
  tests/experiments/test_device.py tests/experiments/test_gpu_smoke.py \
  tests/test_gpu_window.py tests/experiments/test_precision_training.py \
  tests/experiments/test_train.py tests/experiments/test_models.py tests/experiments/test_flops_meta.py
.PHONY: lower-venv test-lower-torch
lower-venv: $(LOWER_VENV)/.installed
$(LOWER_VENV)/.installed:
	test -x $(LOWER_VENV)/bin/python || $(PYTHON) -m venv $(LOWER_VENV)
	$(LOWER_VENV)/bin/python -m pip --disable-pip-version-check -q install \
	  $(if $(LOWER_INDEX),--index-url $(LOWER_INDEX) --extra-index-url https://pypi.org/simple) \
	  torch==$(LOWER_TORCH) torchvision==$(LOWER_TORCHVISION)
	$(LOWER_VENV)/bin/python -m pip --disable-pip-version-check -q install numpy matplotlib tqdm \
	  ipywidgets pytest pytest-xdist timm
	$(LOWER_VENV)/bin/python -c "import torch; assert torch.__version__.startswith('$(LOWER_TORCH)'), torch.__version__"
	touch $@
test-lower-torch: $(LOWER_VENV)/.installed
	MPLCONFIGDIR=$(CURDIR)/$(LOWER_VENV)/matplotlib $(TEST_ENV) PYTHONPATH=. $(LOWER_VENV)/bin/python -m pytest -q -p no:randomly -n 0 $(LOWER_TESTS)
	PYTHONPATH=. $(LOWER_VENV)/bin/python -m attnconv.gpu_smoke --dry-run --budget 7200 --out $(LOWER_VENV)/smoke
	@du -sh $(LOWER_VENV) | sed 's/^/size of the lower-torch venv: /'

FORCE:
