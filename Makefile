# nmtkit — two commands on a fresh machine:  make demo   and   make test
# Each creates .venv and installs what it needs on first use.

PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
NMTKIT  = $(VENV)/bin/nmtkit

# Project machines keep a CPU build of torch 2.13.0 among pip's find-links; pin to it
# through a constraints file so that pip never pulls ~3 GB of CUDA wheels. Elsewhere
# (a GPU box with internet) the pin is off and pip takes PyPI's default torch:
#   make install TORCH_CONSTRAINT=
WHEELS ?= $(firstword $(PIP_FIND_LINKS) $(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null) /opt/wheels)
CPU_TORCH := $(wildcard $(WHEELS)/torch-2.13.0+cpu-*.whl)
TORCH_CONSTRAINT ?= $(if $(CPU_TORCH),-c constraints/torch-cpu.txt --find-links $(WHEELS),)

# The demo's data: the embedded Bible En–Fr corpus (../shared/design.md).
DATA    ?= data/bible
PAIRS   ?= all
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
VOCAB_SIZE ?= 30000
MAX_LEN ?= 50
# Pairs whose lengths differ by more than 2x are almost all verses whose
# boundaries differ between versions (see the issue-2 note).
MAX_RATIO ?= 2.0

.PHONY: help install test test-slow demo data bench reproduce clean-data
help:
	@echo "make demo     fetch the Bible corpus, preprocess, build the vocabulary, binarize (summary at the end)"
	@echo "make test     run the test suite"
	@echo "make bench    measure preprocessing speed and binarization memory on the Bible corpus"

$(VENV)/.installed: pyproject.toml constraints/torch-cpu.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check $(TORCH_CONSTRAINT) -e '.[dev]'
	touch $@

install: $(VENV)/.installed

test: install
	$(PY) -m pytest -q

test-slow: install
	$(PY) -m pytest -q -m slow

# ---- the demo: data half (training comes with issue 3) -------------------------
$(DATA)/raw/bible.json: | install
	$(PY) bin/fetch-bible $(DATA)/raw --pairs $(PAIRS)

$(DATA)/clean/preprocess.json: $(DATA)/raw/bible.json
	$(NMTKIT) preprocess -s en -t fr --train $(DATA)/raw/train --valid $(DATA)/raw/valid \
	    --test $(DATA)/raw/test -o $(DATA)/clean -j $(JOBS) --max-len $(MAX_LEN) --max-ratio $(MAX_RATIO)

$(DATA)/vocab/vocab.json: $(DATA)/clean/preprocess.json
	$(NMTKIT) build-vocab -s en -t fr --train $(DATA)/clean/train -o $(DATA)/vocab --size $(VOCAB_SIZE)

$(DATA)/data-bin/manifest.json: $(DATA)/vocab/vocab.json
	$(NMTKIT) preprocess -s en -t fr --train $(DATA)/clean/train --valid $(DATA)/clean/valid \
	    --test $(DATA)/clean/test --vocab $(DATA)/vocab -o $(DATA)/data-bin -j $(JOBS) --quiet

data: $(DATA)/data-bin/manifest.json

demo: data
	@$(PY) -c "from nmtkit.summary import print_summary; print_summary('$(DATA)/data-bin')"

bench: data
	$(PY) bin/bench-data $(DATA)

reproduce:
	@echo "make reproduce: the WMT'14 recipe is not built yet (issue 5)" >&2; exit 2

clean-data:
	rm -rf $(DATA)
