# nmtkit — two commands on a fresh machine:  make demo   and   make test
# Each creates .venv and installs what it needs on first use.

PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
NMTKIT  = $(VENV)/bin/nmtkit
# What a target that runs the package needs first. INSTALLED= runs the checkout as it is, with PY
# and NMTKIT given (a machine without a network, the tests' own make runs), sub-makes included.
INSTALLED ?= $(VENV)/.installed

# Where a CPU build of torch 2.13.0 lies among pip's find-links (PIP_FIND_LINKS, pip's
# global.find-links or /opt/wheels), pin to it through a constraints file, so that a CPU
# machine never pulls ~3 GB of CUDA wheels. Where none does, a Linux machine without an NVIDIA
# driver takes the pinned version's CPU build from PyTorch's own index (PyPI's Linux torch is the
# CUDA one). On a GPU machine the pin is off and pip takes PyPI's default torch, as anywhere with:
#   make install TORCH_CONSTRAINT=
FIND_LINKS := $(PIP_FIND_LINKS) $(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null) /opt/wheels
CPU_TORCH := $(firstword $(foreach d,$(patsubst file://%,%,$(FIND_LINKS)),$(wildcard $(d)/torch-2.13.0+cpu-*.whl)))
WHEELS ?= $(patsubst %/,%,$(dir $(CPU_TORCH)))
CPU_INDEX ?= https://download.pytorch.org/whl/cpu
LINUX := $(filter Linux,$(shell uname -s 2>/dev/null))
# an NVIDIA driver, or WSL2's GPU (/dev/dxg), where the driver lies on the Windows side
NVIDIA := $(strip $(wildcard /dev/nvidiactl /proc/driver/nvidia/version /dev/dxg) $(shell command -v nvidia-smi 2>/dev/null))
TORCH_CONSTRAINT ?= $(if $(CPU_TORCH),-c constraints/torch-cpu.txt --find-links $(WHEELS),$(if \
    $(and $(LINUX),$(if $(NVIDIA),,cpu)),-c constraints/torch-cpu.txt --extra-index-url $(CPU_INDEX)))

# The demo's data: the embedded Bible En–Fr corpus (nmtkit fetch-bible; its split is in docs/pipeline.md).
DATA    ?= data/bible
PAIRS   ?= all
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
# The demo's vocabulary: joint BPE of BPE merges (8,000 gives about 5,600 French and 5,000 English
# units, and no <unk>); BPE=0 gives the paper's lists of VOCAB_SIZE words per language.
BPE     ?= 8000
VOCAB_SIZE ?= 30000
VOCAB_TAG = $(if $(filter 0,$(BPE)),words$(VOCAB_SIZE),bpe$(BPE))
VOCAB_FLAGS = $(if $(filter 0,$(BPE)),--size $(VOCAB_SIZE),--bpe $(BPE) --joint)
VOCAB   ?= $(DATA)/vocab-$(VOCAB_TAG)
BIN     ?= $(DATA)/data-bin-$(VOCAB_TAG)
MAX_LEN ?= 50
# Pairs whose lengths differ by more than 2x are almost all verses whose
# boundaries differ between versions.
MAX_RATIO ?= 2.0

# The demo's training run, sized for 2 CPU cores and a 20-minute budget: --schedule cpu, the small
# RNNsearch (256 units) with tied embeddings on joint BPE, Adam at 5e-3 falling by a cosine to 0 at
# the budget, label smoothing 0.1, best.pt chosen by dev NLL, the hand-written recurrences (the
# trials in docs/cpu-training.md). DEMO_MINUTES=60 trains longer; DEMO_UPDATES=1000 trains a fixed number of
# updates instead, so that two machines can compare their runs. An interrupted run resumes.
# bf16 where the CPU has native bfloat16 (AVX512-BF16/AMX).
RUNS    ?= runs
DEMO    ?= $(RUNS)/demo
DEMO_MINUTES ?= 20
DEMO_UPDATES ?=
DEMO_BF16 ?= $(shell grep -qw -e avx512_bf16 -e amx_bf16 /proc/cpuinfo 2>/dev/null && echo --bf16)
DEMO_BUDGET = $(if $(DEMO_UPDATES),--max-updates $(DEMO_UPDATES),--max-minutes $(DEMO_MINUTES))
CPU_RECIPE ?= --schedule cpu
# The studies (make paper, make compare) keep the paper's architecture: no tied embeddings. Their
# recipe until 1.0 was STUDY_RECIPE alone; make paper adds the budgeted schedule and label smoothing.
STUDY_RECIPE ?= --preset small --optimizer adam --lr 5e-3 --best-by nll
DEMO_RECIPE ?= $(CPU_RECIPE) --valid-every 200 --keep-validations
# COVERAGE=linguistic (or neural) adds Tu et al.'s coverage model to the demo and demo-guided runs
COVERAGE ?=
DEMO_TRAIN ?= $(DEMO_RECIPE) $(DEMO_BUDGET) $(DEMO_BF16)$(if $(COVERAGE), --coverage $(COVERAGE))
BEAM    ?= 5

# One recipe at a time whatever -j says: each step spreads itself over JOBS cores already, the
# studies train against a clock (two at once would each get half the updates their pages quote),
# and two recipes fetched the corpus into one directory at once. (The WMT'14 recipe's own make,
# which make reproduce starts, runs its models a GPU each, at once.)
.NOTPARALLEL:
.PHONY: gpu-check gpu-data gpu-rehearsal help install lint test test-all test-fast test-slow typecheck test-browser test-torch structure results wheel-check docs demo demo-guided demo-aligners demo-self-training demo-curve paper paper-coverage paper-unk readme-figures data bench bench-data bench-blas bench-marian bench-sweep bench-gpu aer reproduce compare clean-data
comma := ,
space := $(subst ,, )
# the settings among $1 given on make's command line or in the environment, as a command retypes
# them (after a space), for the command a result records
given_vars = $(strip $(foreach v,$1,$(if $(filter command environment%,$(origin $v)),$v)))
given = $(if $(call given_vars,$1), $(foreach v,$(call given_vars,$1),$v='$($v)'))
DEMO_FIGURE_VARS = DEMO_MINUTES DEMO_UPDATES DEMO_BF16 DEMO_RECIPE DEMO_TRAIN CPU_RECIPE COVERAGE BEAM BPE \
    VOCAB_SIZE DATA PAIRS MAX_LEN MAX_RATIO JOBS
help:
	@echo "make demo     fetch the Bible corpus, preprocess, build the vocabulary, train RNNsearch (20 min on CPU),"
	@echo "              translate the test set, score it; plot training curves, BLEU by length, alignments"
	@echo "make demo-guided  the demo's recipe with guided alignment (eflomal's links; docs/alignment.md): AER and BLEU"
	@echo "make demo-aligners  demo-guided's model and its French→English twin, their links combined: AER beside eflomal's"
	@echo "make demo-self-training  demo-aligners' heads trained alone, on eflomal's links then on their own, round by round: AER"
	@echo "make demo-curve  the CPU trials behind the demo's recipe (hours): a table and picture in runs/trials (RESULTS_DIR=results: docs/)"
	@echo "make test     run the test suite: ruff, unit tests, slow end-to-end tests, mypy, the docs (lint, test-all, typecheck, docs)"
	@echo "make test-torch TORCH=2.11.0  the unit and slow tests under another torch, in a venv of its own (PyPI's CUDA build)"
	@echo "make docs     build the documentation site with mkdocs --strict into build/site (installs the docs extra on first use)"
	@echo "make bench    command-line start-up (--help, completion), training and translation speed beside Joey NMT and fairseq; preprocessing and selection speed;"
	@echo "              then Marian where its venv is (hours, on an idle machine; installs the peers from PyPI on first use: docs/benchmarks.md)"
	@echo "make bench-data  preprocessing and selection speed alone;  make bench-marian  nmtkit beside Marian on the demo's data"
	@echo "make gpu-check  on a GPU machine without network: one report proving the GPU path in 10 minutes (tiny mode on a CPU)"
	@echo "make bench-sweep each toolkit's own recipe swept over learning rates, its best run 20 minutes: updates, BLEU"
	@echo "make bench-blas GFLOPS of the demo's matrix products: torch's BLAS (MKL) beside numpy's, oneDNN and MKL in row blocks"
	@echo "make bench-gpu  training speed on a GPU at the paper's sizes: every model, batch, precision, eager/compiled"
	@echo "make aer      alignment error rate of the demo model's attention beside eflomal on the gold verses"
	@echo "make reproduce  the paper's WMT'14 En-Fr recipe on GPUs (examples/wmt14_en_fr; MIRROR=DIR offline)"
	@echo "make paper    RNNencdec-30/50 and RNNsearch-30/50 at one budget: Table 1, Figures 2 and 3 (runs/paper)"
	@echo "make paper PAPER_SCALE=gpu  the same at the paper's sizes on one GPU, 1.2 minutes a system (runs/paper-gpu)"
	@echo "make paper-coverage  RNNsearch-50 beside the same with Tu et al.'s coverages: passages by length, output lengths"
	@echo "make paper-unk  --replace-unk on 30,000-word lists, without and with guided alignment: copies the reference confirms"
	@echo "make gpu-data  what a GPU machine without a network needs beside the checkout (the list it prints)"
	@echo "make gpu-rehearsal  the GPU job's setup on this CPU: HEAD without git, uninstalled, the image's packages; the whole suite"
	@echo "make compare  RNNencdec, RNNsearch and Luong et al.'s attention variants at one budget; a dev table in runs/compare/table.md"
	@echo "make data     the demo's data alone: the corpus, its cleaning, the vocabulary, the data-bin (BPE=0: 30,000-word lists)"
	@echo "make readme-figures  the demo, then its pictures copied into docs/img;  make clean-data  removes DATA (and DATA-kl)"

$(VENV)/.installed: pyproject.toml constraints/torch-cpu.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check $(TORCH_CONSTRAINT) -e '.[dev,serve,tensorboard]'
	touch $@

install: $(VENV)/.installed
	@echo "nmtkit is installed in $(VENV): '. $(VENV)/bin/activate' puts 'nmtkit' on PATH in this shell,"
	@echo "or run $(VENV)/bin/nmtkit as it is"

# The pyramid: unit tests (pytest's default), the slow end-to-end runs (marked slow: make paper on a
# tiny slice, DDP, the SIGKILL test, the mirror recipe), mypy --strict on the package, and the
# documentation site built with --strict. make test runs all four after ruff (the two kinds of test
# in one run, test-all), and is what CI runs.
test: lint test-all typecheck docs

# The style is ruff's (pyproject.toml [tool.ruff]): the formatter decides every line break, the
# linter holds functions to its complexity, branch, statement and argument limits.
lint: $(INSTALLED)
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .

# On every core (pytest-xdist): a test waits on its subprocesses and imports more than it computes.
# A test at a time to the worker that is free (--maxschedchunk 1): xdist's chunks would give one
# worker all the slow tests, which conftest.py puts first.
# TEST_JOBS=0 (or 1) runs the tests in pytest's own process, one after another (pdb, -x, -s as
# usual), as does a Python without xdist (INSTALLED= and an environment of one's own). Expanded as
# the recipe runs: after the install.
TEST_JOBS ?= $(JOBS)
TEST_FLAGS = $(if $(filter 0 1,$(TEST_JOBS)),,$(shell $(PY) -c 'import xdist' 2>/dev/null && printf '%s' '-n $(TEST_JOBS) --maxschedchunk 1'))

# The unit and the slow tests in one run: on every core, the short ones fill the gaps the long ones leave.
test-all: $(INSTALLED)
	$(PY) -m pytest -q $(TEST_FLAGS) -m "slow or not slow"

test-fast: $(INSTALLED)
	$(PY) -m pytest -q $(TEST_FLAGS)

test-slow: $(INSTALLED)
	$(PY) -m pytest -q $(TEST_FLAGS) -m slow

typecheck: $(INSTALLED)
	$(PY) -m mypy

# The documentation site (mkdocs.yml, docs/): the CLI reference is generated from the click commands and
# the API page from the docstrings, so --strict fails on a broken link or a page that no longer renders.
$(VENV)/.docs-installed: pyproject.toml $(INSTALLED)
	$(PY) -m pip install -q --disable-pip-version-check $(TORCH_CONSTRAINT) -e '.[docs]'
	touch $@

docs: $(VENV)/.docs-installed
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir build/site

# The page of nmtkit serve in a real headless browser: installs Debian's chromium and its driver
# (root, apt) and selenium, then runs tests/test_browser.py (skipped elsewhere, saying why).
test-browser: $(INSTALLED)
	command -v chromedriver >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium chromium-driver)
	$(PY) -m pip install -q --disable-pip-version-check selenium
	$(PY) -m pytest -q tests/test_browser.py

# The unit and slow tests under another torch, on this machine's CPU, in a venv of its own made as
# .venv is: make test-torch TORCH=2.4.1 (pyproject's floor) or TORCH=2.11.0 (the GPU machines').
# It takes PyPI's torch of that version, for Linux a CUDA build with its CUDA packages.
TORCH ?= 2.4.1
test-torch:
	$(MAKE) test-all VENV=.venv-torch$(TORCH) TORCH_CONSTRAINT=torch==$(TORCH)

# The package as a user gets it: the wheel, installed into a fresh environment, runs the pipeline
# end to end outside the checkout (bin/wheel-check), serve's page and /health included.
wheel-check: $(INSTALLED)
	rm -rf build/wheel build/wheel-venv build/lib build/bdist.*   # setuptools' build/lib kept deleted modules
	$(PY) -m pip wheel -q --disable-pip-version-check --no-deps -w build/wheel .
	bin/wheel-check build/wheel/nmtkit-*.whl build/wheel-venv $(TORCH_CONSTRAINT)

# The results tables of README.md and docs/ rewritten from results/*.json (bench/results.py; a test
# checks that every table is its files'). make demo and make paper record a run's figures there only
# when RESULTS_DIR is given (make demo RESULTS_DIR=results, then make results): a user's run records
# them beside itself, and the checkout's tables, and make test, stay as they were.
RESULTS_DIR ?= results
results_into = $(if $(filter command environment%,$(origin RESULTS_DIR)),$(RESULTS_DIR),$1)
results: $(INSTALLED)
	$(PY) -m bench.results render README.md docs/*.md

# The package's import graph, docs/structure.md and its picture (a test checks they match the code).
structure: $(INSTALLED)
	$(PY) -m bench.structure --doc docs/structure.md --plot docs/img/structure.png

# ---- the demo: data, then training, translation, scores and pictures -----------
$(DATA)/raw/bible.json: | $(INSTALLED)
	$(NMTKIT) fetch-bible $(DATA)/raw --pairs $(PAIRS)

$(DATA)/clean/preprocess.json: $(DATA)/raw/bible.json
	$(NMTKIT) preprocess -s en -t fr --train $(DATA)/raw/train --valid $(DATA)/raw/valid \
	    --test $(DATA)/raw/test -d $(DATA)/clean -j $(JOBS) --max-len $(MAX_LEN) --max-ratio $(MAX_RATIO) \
	    --clean bible

$(VOCAB)/vocab.json: $(DATA)/clean/preprocess.json
	$(NMTKIT) build-vocab -s en -t fr --train $(DATA)/clean/train -d $(VOCAB) $(VOCAB_FLAGS)

$(BIN)/manifest.json: $(VOCAB)/vocab.json
	$(NMTKIT) preprocess -s en -t fr --train $(DATA)/clean/train --valid $(DATA)/clean/valid \
	    --test $(DATA)/clean/test --vocab $(VOCAB) -d $(BIN) -j $(JOBS) --quiet

data: $(BIN)/manifest.json

# A run's target is its done stamp, not best.pt: the first validation writes best.pt, so an
# interrupted run would count as trained. train resumes an unfinished run and does nothing on a
# finished one, and the stamp is touched only when it exits 0. The stamp also depends on the run's
# options, kept in SAVE_DIR/train-options and rewritten only when they differ from this make's
# (run_options, compared as make reads the Makefile: a dry run changes nothing): a changed budget
# (DEMO_UPDATES=2000 after a run of 1000) trains again, where the stamp alone kept the old model;
# train goes on from a finished run given more and says what changed. The file begins with the
# data-bin: a run given another (make demo BPE=0 after make demo) trains again too, where the stamp
# of the first kept its model for the other vocabulary, and train refuses to resume on it (a run
# directory is one model: another DEMO, PAPER, … trains beside it).
# The options go by their variable's name ($2), never as text in a call, which a comma would part;
# two texts are the same where each holds the other, between marks; a quote is quoted for the shell.
same_text = $(and $(findstring <$(strip $1)>,<$(strip $2)>),$(findstring <$(strip $2)>,<$(strip $1)>))
shell_quoted = '$(subst ','\'',$(strip $1))'
define run_options  # the rule of run directory $1's options file, for data-bin $3 and the options of variable $2
$1/train-options: $$(if $$(call same_text,$$(file <$1/train-options),$3 $$($2)),,FORCE)
	@mkdir -p $$(@D) && printf '%s\n' $$(call shell_quoted,$3 $$($2)) > $$@
endef
.PHONY: FORCE
$(eval $(call run_options,$(DEMO),DEMO_TRAIN,$(BIN)))
$(DEMO)/done: $(BIN)/manifest.json $(DEMO)/train-options
	$(NMTKIT) train $(BIN) --save-dir $(DEMO) --threads $(JOBS) $(DEMO_TRAIN)
	touch $@

# Guided alignment (docs/alignment.md): eflomal's links of the training pairs (the align extra, built
# with the C compiler on first use), the demo's corpus binarized with them, and the demo's recipe
# trained with an alignment head learning them (GUIDED_HEAD= : the attention pulled towards them
# instead); then its AER on the gold verses and its test BLEU.
GUIDED  ?= $(RUNS)/demo-guided
GUIDED_WEIGHT ?= 0.5
GUIDED_HEAD ?= --alignment-head
$(VENV)/.align: $(INSTALLED)
	$(PY) -m pip install -q --disable-pip-version-check $(TORCH_CONSTRAINT) -e '.[align]'
	touch $@

$(DATA)/clean/train.links: $(DATA)/clean/preprocess.json | $(VENV)/.align
	$(NMTKIT) word-align -s en -t fr --train $(DATA)/clean/train

# the corpus binarized with its links (clean/train.$2, or .links) on the vocabulary $1
links_bin = $(NMTKIT) preprocess -s en -t fr --train $(or $3,$(DATA)/clean/train) --valid $(DATA)/clean/valid \
	    --test $(DATA)/clean/test --vocab $1 -d $(@D) -j $(JOBS) --align-suffix $(or $2,links) --quiet
$(BIN)-links/manifest.json: $(VOCAB)/vocab.json $(DATA)/clean/train.links
	$(call links_bin,$(VOCAB))

GUIDED_TRAIN_FLAGS = --guided-alignment-weight $(GUIDED_WEIGHT) $(GUIDED_HEAD)
GUIDED_TRAIN = $(DEMO_TRAIN) $(GUIDED_TRAIN_FLAGS)
$(eval $(call run_options,$(GUIDED),GUIDED_TRAIN,$(BIN)-links))
$(GUIDED)/done: $(BIN)-links/manifest.json $(GUIDED)/train-options
	$(NMTKIT) train $(BIN)-links --save-dir $(GUIDED) --threads $(JOBS) $(DEMO_TRAIN) \
	    --guided-alignment-weight $(GUIDED_WEIGHT) $(GUIDED_HEAD)
	touch $@

demo-guided: $(GUIDED)/done
	$(PY) bin/bench-aer --model $(GUIDED)/best.pt --data $(DATA) --threads $(JOBS) --no-eflomal
	$(NMTKIT) translate -m $(GUIDED)/best.pt $(DATA)/raw/test.en -o $(GUIDED)/test.hyp.fr --beam $(BEAM) --threads $(JOBS)
	$(NMTKIT) score $(GUIDED)/test.hyp.fr -r $(DATA)/raw/test.fr --clean verse-markers $(SCORE_METRICS)

# The French→English model of demo-guided's data (the sides swapped, the links transposed),
# trained with the same recipe; then the AER of each direction and of both combined (align -m
# FORWARD -m BACKWARD: grow-diag-final-and, and soft links at each of LINK_THRESHOLDS) beside
# eflomal's, and the new model's test BLEU.
GUIDED_BACK ?= $(RUNS)/demo-guided-fr-en
LINK_THRESHOLDS ?= 0.2,0.25,0.3
NULL_THRESHOLDS ?= 0.2
PAIR_AER = --link-thresholds $(LINK_THRESHOLDS) --null-thresholds $(NULL_THRESHOLDS) --data $(DATA) --threads $(JOBS)
$(BIN)-links-fr-en/manifest.json: $(BIN)-links/manifest.json
	rm -rf $(@D) && $(NMTKIT) reverse $(BIN)-links $(@D)

$(eval $(call run_options,$(GUIDED_BACK),GUIDED_TRAIN,$(BIN)-links-fr-en))
$(GUIDED_BACK)/done: $(BIN)-links-fr-en/manifest.json $(GUIDED_BACK)/train-options
	$(NMTKIT) train $(BIN)-links-fr-en --save-dir $(GUIDED_BACK) --threads $(JOBS) $(DEMO_TRAIN) \
	    --guided-alignment-weight $(GUIDED_WEIGHT) $(GUIDED_HEAD)
	touch $@

demo-aligners: $(GUIDED)/done $(GUIDED_BACK)/done
	$(PY) bin/bench-aer --model $(GUIDED)/best.pt --pair $(GUIDED)/best.pt $(GUIDED_BACK)/best.pt $(PAIR_AER)
	$(NMTKIT) translate -m $(GUIDED_BACK)/best.pt $(DATA)/raw/test.fr -o $(GUIDED_BACK)/test.hyp.en \
	    --beam $(BEAM) --threads $(JOBS)
	$(NMTKIT) score $(GUIDED_BACK)/test.hyp.en -r $(DATA)/raw/test.en --clean verse-markers $(SCORE_METRICS)

# Self-training (Chen et al. 2020), a round at a time, each the same step: both heads trained alone
# (--head-only: HEAD_UPDATES updates, the translation models left as they were) from the round
# before's pair, on links. Round 0 starts from demo-aligners' pair and reads eflomal's links; round
# r reads round r-1's pair's own links of every ROUND_EVERY-th training pair (1,400 updates of 80
# pairs read 112,000: every other pair is what a round reads, aligned in half the time), combined
# as ROUNDr_LINKS says (else ROUND_LINKS): as the held-out verses chose for the pair before (docs/alignment.md).
# make demo-self-training: the rounds of SELF_ROUNDS, then the AER of each round's heads and pair.
ALIGNERS ?= $(RUNS)/aligners
ROUND_LINKS ?= --combine soft --link-threshold 0.3
ROUND2_LINKS ?= --combine grow-diag-final-and
ROUND_EVERY ?= 2
HEAD_UPDATES ?= 1400
SELF_ROUNDS ?= 0 1 2
HEAD_TRAIN = --schedule cpu --max-updates $(HEAD_UPDATES) --valid-every $(HEAD_UPDATES) --no-valid-bleu \
	--guided-alignment-weight $(GUIDED_WEIGHT) --alignment-head --head-only
pair_of = $(ALIGNERS)/round$1-en-fr/done $(ALIGNERS)/round$1-fr-en/done
models_of = $(ALIGNERS)/round$1-en-fr/best.pt $(ALIGNERS)/round$1-fr-en/best.pt
SAMPLE = $(ALIGNERS)/pairs-every$(ROUND_EVERY)

$(SAMPLE)/train.en $(SAMPLE)/train.fr &: $(DATA)/clean/preprocess.json
	mkdir -p $(SAMPLE)
	for l in en fr; do sed -n '1~$(ROUND_EVERY)p' $(DATA)/clean/train.$$l > $(SAMPLE)/train.$$l.tmp \
	    && mv $(SAMPLE)/train.$$l.tmp $(SAMPLE)/train.$$l; done

define head_round  # round $1: the heads of pair $2 trained on data-bins $3 (English→French) and $3-fr-en
$(call run_options,$(ALIGNERS)/round$1-en-fr,HEAD_TRAIN,$3)
$(call run_options,$(ALIGNERS)/round$1-fr-en,HEAD_TRAIN,$3-fr-en)
$(ALIGNERS)/round$1-en-fr/done: $3/manifest.json $(word 1,$2) $(ALIGNERS)/round$1-en-fr/train-options
	$(NMTKIT) train $3 --save-dir $$(@D) --init-from $$(dir $$(word 2,$$^))best.pt $(HEAD_TRAIN) --threads $(JOBS)
	touch $$@
$(ALIGNERS)/round$1-fr-en/done: $3-fr-en/manifest.json $(word 2,$2) $(ALIGNERS)/round$1-fr-en/train-options
	$(NMTKIT) train $3-fr-en --save-dir $$(@D) --init-from $$(dir $$(word 2,$$^))best.pt $(HEAD_TRAIN) --threads $(JOBS)
	touch $$@
endef

define self_training  # round $1 on round $2's links
$(ALIGNERS)/round$1-links/train.links: $(call pair_of,$2) $(SAMPLE)/train.en
	mkdir -p $$(@D) && for l in en fr; do ln -sf ../$(notdir $(SAMPLE))/train.$$$$l $$(@D)/train.$$$$l; done
	ln -sf $(abspath $(DATA)/clean/preprocess.json) $$(@D)/preprocess.json  # what cleaned the text
	$(NMTKIT) align $$(foreach m,$(call models_of,$2),-m $$m) --source $(SAMPLE)/train.en \
	    --target $(SAMPLE)/train.fr --tokenized $(or $(ROUND$1_LINKS),$(ROUND_LINKS)) -j $(JOBS) -o $$@
$(BIN)-round$1/manifest.json: $(VOCAB)/vocab.json $(ALIGNERS)/round$1-links/train.links
	$$(call links_bin,$(VOCAB),links,$(ALIGNERS)/round$1-links/train)
$(BIN)-round$1-fr-en/manifest.json: $(BIN)-round$1/manifest.json
	rm -rf $$(@D) && $(NMTKIT) reverse $(BIN)-round$1 $$(@D)
$(call head_round,$1,$(call pair_of,$2),$(BIN)-round$1)
endef
$(eval $(call head_round,0,$(GUIDED)/done $(GUIDED_BACK)/done,$(BIN)-links))
$(eval $(call self_training,1,0))
$(eval $(call self_training,2,1))
$(eval $(call self_training,3,2))

demo-self-training: $(foreach r,$(SELF_ROUNDS),$(call pair_of,$r))
	$(PY) bin/bench-aer --no-eflomal $(foreach r,$(SELF_ROUNDS),--model $(word 1,$(call models_of,$r)) \
	    --model $(word 2,$(call models_of,$r)) --pair $(call models_of,$r)) $(PAIR_AER)

# One pass of beam search gives the hypotheses and their attention (for the alignment plots).
$(DEMO)/test.hyp.fr $(DEMO)/test.align &: $(DEMO)/done
	$(NMTKIT) translate -m $(DEMO)/best.pt $(DATA)/raw/test.en -o $(DEMO)/test.hyp.fr --alignments $(DEMO)/test.align \
	    --beam $(BEAM) --threads $(JOBS)

# Test BLEU: King James → Segond, detokenized sacreBLEU; then against all three French versions;
# then BLEU by sentence length (the paper's Figure 2) and three alignments (its Figure 3).
ALIGN_LINES ?= 86,88,116
# the demo reports the paper's tokenized BLEU beside sacreBLEU's and chrF (score's default has no bleu-tok)
SCORE_METRICS ?= --metrics bleu,bleu-tok,chrf
demo: $(DEMO)/test.hyp.fr $(DEMO)/test.align
	@$(NMTKIT) info $(BIN)
	@$(NMTKIT) info $(DEMO)
	@echo "five test verses, drawn with a fixed seed:"
	@$(PY) -m bench.demo samples $(DATA)/raw/test.en $< $(DATA)/raw/test.fr
	@echo "test set, beam $(BEAM), reference Segond:"
	@$(NMTKIT) score $< -r $(DATA)/raw/test.fr --clean verse-markers $(SCORE_METRICS)
	@echo "test set, beam $(BEAM), references Segond + Ostervald + Darby:"
	@$(NMTKIT) score $< -r $(DATA)/raw/test.fr -r $(DATA)/raw/test.ref-ostervald.fr \
	    -r $(DATA)/raw/test.ref-darby.fr --clean verse-markers $(SCORE_METRICS)
	@$(NMTKIT) score $< -r $(DATA)/raw/test.fr --clean verse-markers --output-format json > $(DEMO)/test-score.json
	@$(NMTKIT) info $(DEMO) --output-format json > $(DEMO)/run.json
	@$(PY) -m bench.results record demo-$(if $(DEMO_BF16),bf16,fp32) --into $(call results_into,$(DEMO)) --machine-of $(DEMO) \
	    --title "The demo$(if $(DEMO_BF16),'s training in bfloat16,$(comma) float32): sacreBLEU$(comma) test verses against Segond" \
	    --command "make demo$(call given,$(DEMO_FIGURE_VARS))" \
	    --json-figure "updates=$(DEMO)/run.json:updates" --json-figure "target tokens/s=$(DEMO)/run.json:tgt_tokens_per_s" \
	    --json-figure "test BLEU=$(DEMO)/test-score.json:systems.0.bleu"
	@echo "test set by source length (Segond), with the No-UNK subset of the model's vocabulary:"
	@$(NMTKIT) score $< -r $(DATA)/raw/test.fr --clean verse-markers --source $(DATA)/raw/test.en \
	    --by-length --plot $(DEMO)/bleu-by-length.png --no-unk-vocab $(DEMO)/best.pt
	@$(NMTKIT) align-plot $(DEMO)/test.align -n $(ALIGN_LINES) -o $(DEMO)/align.png
	@echo "pictures: $(DEMO)/curves.png $(DEMO)/bleu-by-length.png $(DEMO)/align-*.png"

# The trials behind the demo's recipe (docs/cpu-training.md): 20 minutes of training each, one at a
# time, then test BLEU of every validated model; a table and a picture of test BLEU against minutes,
# with the demo's own run last. Hours on 2 cores; an interrupted run goes on where it stopped.
# TRIAL_SET=levers: the levers for more learning per update (schedule, label smoothing, tied
# embeddings, layer norm), each alone and together, to the demo's count of updates, into their own table.
# The table and picture go into TRIALS_DIR; with RESULTS_DIR=results, into docs/cpu-training.md and docs/img.
TRIALS_DIR ?= $(RUNS)/trials
TRIAL_SET ?= recipe
trials_into = --doc $(if $(filter results,$(call results_into,)),docs/cpu-training.md --plot docs/img,$(TRIALS_DIR)/$(TRIAL_SET).md --plot $(TRIALS_DIR))/$1
ifeq ($(TRIAL_SET),levers)
demo-curve: data
	$(PY) -m bench.cpu_trials --set levers --runs $(TRIALS_DIR) --data all=$(DATA) \
	    $(call trials_into,levers-curve.png) --threads $(JOBS)
else
demo-curve: $(DEMO)/done
	$(MAKE) data BPE=0
	$(MAKE) data DATA=$(DATA)-kl PAIRS=k-l
	$(PY) -m bench.cpu_trials --runs $(TRIALS_DIR) --data all=$(DATA) --data k-l=$(DATA)-kl \
	    --demo-run $(DEMO) $(call trials_into,demo-curve.png) \
	    --minutes $(DEMO_MINUTES) --threads $(JOBS)
endif

# The pictures of docs/demo.md are the demo's own: copy them after a demo run.
readme-figures: demo
	mkdir -p docs/img
	cp $(DEMO)/curves.png $(DEMO)/bleu-by-length.png docs/img/
	cp $(DEMO)/align-$(firstword $(subst $(comma), ,$(ALIGN_LINES))).png docs/img/align.png

# Preprocessing speed (bench-data), then command-line start-up, and training speed and memory beside
# Joey NMT and fairseq (bin/bench-train installs them on first use by bench/peers' scripts, from
# PyPI), translation speed; then nmtkit beside Marian on the
# demo's data (bin/bench-marian: 20 minutes of training each, Marian 40 more, then decoding), where
# Marian's venv is there (bench/peers/install.sh marian). Run it on an idle machine.
bench: bench-data
	$(PY) bin/bench-cli
	$(PY) bin/bench-train --threads 2 --demo-bin $(BIN)
	$(PY) bin/bench-translate --threads 2
	$(PY) bin/bench-marian --threads 2 --data $(DATA) --marian-total $(MARIAN_MINUTES) --fairseq-total $(FAIRSEQ_MINUTES) \
	    --fairseq-updates $(FAIRSEQ_UPDATES) $(MARIAN_CONSTANT)

# Marian's minutes of training in all: 20 are the budget's row; the rest trains it on to a BLEU
# comparable with nmtkit's for the decoding rows (60: 14.72 on the Intel Xeon of docs/benchmarks.md).
# fairseq's the same where its venv is (bench/peers/install.sh fairseq); it learns more slowly, and
# is decoded beside nmtkit's checkpoint of its own BLEU when it falls short of Marian's.
MARIAN_MINUTES ?= 60
FAIRSEQ_MINUTES ?= 60
FAIRSEQ_UPDATES ?= 3000
# Marian's 20 minutes again at a constant rate (the schedule fairseq needed); empty: left out
MARIAN_CONSTANT ?= --marian-constant
bench-marian: data
	$(PY) bin/bench-marian --threads 2 --data $(DATA) --marian-total $(MARIAN_MINUTES) --fairseq-total $(FAIRSEQ_MINUTES) \
	    --fairseq-updates $(FAIRSEQ_UPDATES) $(MARIAN_CONSTANT)

# Each toolkit at its best (bin/bench-sweep): its own recipe swept over learning rates, SWEEP_UPDATES
# updates a point, then the best point trained for SWEEP_MINUTES alone on the cores and its test BLEU.
# The peers run where bench/peers/install.sh made their venvs. Run it on an idle machine.
# SWEEP_UPDATES=20 SWEEP_MINUTES=1 walks every stage in about an hour (docs/benchmarks.md).
SWEEP_UPDATES ?= 200
SWEEP_MINUTES ?= 20
SWEEP_TOOLKITS ?= nmtkit,fairseq,joeynmt,marian,opennmt
bench-sweep: data
	$(PY) bin/bench-sweep --threads 2 --data $(DATA) --updates $(SWEEP_UPDATES) --minutes $(SWEEP_MINUTES) --toolkits $(SWEEP_TOOLKITS)

bench-data: data
	$(PY) bin/bench-data $(DATA) $(VOCAB)

# GFLOPS of the demo's float32 matrix products through torch's BLAS (MKL) and the alternatives
# (numpy's BLAS, oneDNN, MKL in row blocks), beside the CPU's model: a minute, on an idle machine.
bench-blas: $(INSTALLED)
	$(PY) bin/bench-blas --threads 2

# Alignment error rate of the demo model's attention beside eflomal's (installed from PyPI into
# the benchmarks' cache on first use), on the gold verses of examples/bible_aer.
aer: $(DEMO)/done
	$(PY) bin/bench-aer --model $(DEMO)/best.pt --data $(DATA) --threads $(JOBS)

# Training speed on a GPU at the paper's sizes (bin/bench-gpu): every architecture, token and
# sentence batches, fp32/TF32 and bf16, eager, compiled and CUDA graphs; on the Bible with 30,000-word lists.
NO_GPU_BENCH = no CUDA GPU here (bin/bench-gpu DATA_BIN --device cpu --preset tiny checks the script on a CPU)
bench-gpu: $(INSTALLED)
	@$(PY) -c 'import sys, torch; torch.cuda.is_available() or sys.exit("make: bench-gpu: $(NO_GPU_BENCH)")'
	$(MAKE) data BPE=0
	$(PY) bin/bench-gpu $(WORDS_BIN)

# One unattended command on a machine with one CUDA GPU and no network (bin/gpu-check): the machine,
# bin/bench-gpu's matrix, kernels per update and the GPU's busy share, a 3-minute paper-size run killed
# and resumed then translated and scored, the hours of a WMT'14 RNNsearch-50 run, the test suite; in
# GPU_MINUTES (10) minutes, into $(GPU_CHECK)/report.md and report.json. It runs from the checkout
# (PYTHONPATH=., the machine's torch) with the data-bins carried beside it: make data, make data BPE=0.
# Without a GPU it runs its CPU-runnable parts in a tiny mode, and builds the demo's data first.
# PARTS=bench,train runs some parts alone.
GPU_CHECK ?= $(RUNS)/gpu-check
GPU_MINUTES ?= 10
# A GPU machine (ON_GPU= makes this one behave as a CPU machine) runs the checkout with its own torch.
ON_GPU ?= $(wildcard /dev/nvidia0)
GPU_PY ?= $(if $(ON_GPU),PYTHONPATH=. python3,$(PY))
gpu-check: $(if $(ON_GPU),,data)
	$(GPU_PY) bin/gpu-check --words $(WORDS_BIN) --bpe $(BIN) --test-src $(DATA)/raw/test.en \
	    --test-ref $(DATA)/raw/test.fr --out $(GPU_CHECK) --minutes $(GPU_MINUTES) $(if $(PARTS),--parts $(PARTS))

# The paper's WMT'14 En→Fr experiment on GPUs (examples/wmt14_en_fr/; its variables pass through:
# make reproduce MIRROR=/data/statmt CHECKSUMS=/data/statmt/checksums.txt WORK=/scratch/wmt14).
# a command as the example's directory runs it: a path relative to here made absolute, an absolute
# path or a command on PATH (python3 -m nmtkit) as it is
from_root = $(if $(filter /%,$(firstword $1)),$1,$(if $(findstring /,$(firstword $1)),$(CURDIR)/$(strip $1),$1))
# a work, download or runs directory, mirror or checksums file named from here, as the user stands: made
# absolute (not a URL)
here = $(if $(or $(filter /%,$1),$(findstring ://,$1)),$1,$(call _spaced_abspath,$(CURDIR)/$1))
# abspath of a path that may hold spaces, which make's functions take for word breaks
_spaced_abspath = $(subst ^nmtkit-space^,$(subst ,, ),$(abspath $(subst $(subst ,, ),^nmtkit-space^,$1)))
reproduce: $(INSTALLED)
	$(MAKE) -C examples/wmt14_en_fr reproduce ROOT=$(CURDIR) PY="$(call from_root,$(PY))" NMTKIT="$(call from_root,$(NMTKIT))" \
	    $(foreach v,WORK DL RUNS,$(if $(filter command line environment%,$(origin $v)),$v='$(call here,$($v))')) \
	    $(if $(MIRROR),MIRROR='$(call here,$(MIRROR))') $(if $(CHECKSUMS),CHECKSUMS='$(call here,$(CHECKSUMS))') \
	    $(if $(or $(findstring /,$(IN_DOMAIN)),$(wildcard $(IN_DOMAIN).en)),IN_DOMAIN='$(call here,$(IN_DOMAIN))',$(if $(IN_DOMAIN),IN_DOMAIN='$(IN_DOMAIN)'))

# ---- RNNencdec, RNNsearch and Luong et al.'s variants at one budget (updates), on the Bible dev set ----
# A Luong run's name is luong_WINDOW_SCORE_FEED; every other setting is the same for all.
CMP     ?= $(RUNS)/compare
COMPARE_UPDATES ?= 500
COMPARE_TRAIN ?= $(STUDY_RECIPE) --max-updates $(COMPARE_UPDATES) --valid-every $(COMPARE_UPDATES) \
    --no-valid-bleu $(DEMO_BF16)
COMPARE_MODELS ?= rnnencdec rnnsearch $(foreach f,feed nofeed,$(foreach a,global_dot global_general \
    global_concat global_location local-m_general local-p_general,luong_$(a)_$(f)))
_luong = --arch luong --attention $(word 2,$1) --score $(word 3,$1) --$(if $(filter nofeed,$(word 4,$1)),no-)input-feed
arch_flags = $(if $(findstring _,$1),$(call _luong,$(subst _, ,$1)),--arch $1)

.PRECIOUS: $(CMP)/%/done $(CMP)/%/dev.hyp.fr

$(foreach m,$(COMPARE_MODELS),$(eval CMP_OPTIONS_$m = $$(call arch_flags,$m) $$(COMPARE_TRAIN))\
    $(eval $(call run_options,$(CMP)/$m,CMP_OPTIONS_$m,$(BIN))))
# a variant outside COMPARE_MODELS (make runs/compare/NAME/done): its options written once, not compared
$(CMP)/%/train-options:
	@mkdir -p $(@D) && printf '%s\n' $(call shell_quoted,$(BIN) $(call arch_flags,$*) $(COMPARE_TRAIN)) > $@
$(CMP)/%/done: $(BIN)/manifest.json $(CMP)/%/train-options
	$(NMTKIT) train $(BIN) --save-dir $(CMP)/$* $(call arch_flags,$*) $(COMPARE_TRAIN) --threads $(JOBS)
	touch $@

$(CMP)/%/dev.hyp.fr: $(CMP)/%/done
	$(NMTKIT) translate -m $(CMP)/$*/best.pt $(DATA)/raw/valid.en -o $@ --beam $(BEAM) --threads $(JOBS)

$(CMP)/%/dev-bleu.json: $(CMP)/%/dev.hyp.fr
	$(NMTKIT) score $< -r $(DATA)/raw/valid.fr --clean verse-markers $(SCORE_METRICS) --output-format json > $@.tmp && mv $@.tmp $@

$(CMP)/%/dev-nll.json: $(CMP)/%/done
	$(NMTKIT) score -m $(CMP)/$*/best.pt --data $(BIN) --split valid --output-format json > $@.tmp && mv $@.tmp $@

compare: $(foreach m,$(COMPARE_MODELS),$(CMP)/$(m)/dev-bleu.json $(CMP)/$(m)/dev-nll.json)
	$(PY) -m bench.compare $(CMP) $(COMPARE_MODELS) $(if $(filter results,$(call results_into,)),--doc docs/luong.md)

# ---- make paper: RNNencdec-30/-50 and RNNsearch-30/-50, one recipe, one budget in updates ----
# The -30 systems train on pairs of up to 30 words (a second binarized corpus, same vocabulary);
# the cut is in words, at preprocessing, so training keeps every pair (--max-len 0 counts subwords).
# Two test sets: the test verses, and passages of consecutive verses for long sentences. The No-UNK
# subset is the paper's: no word outside the 30,000 most frequent of either side.
#
# PAPER_SCALE=gpu: the same study at the paper's sizes on one GPU (into runs/paper-gpu): 1000 hidden
# units, 620-dimension embeddings, maxout 500, on the 30,000-word lists (the -30 systems keep the
# data-bin's pairs of up to 30 words: a cut in words, as the lists count one token a word); each
# system trained PAPER_MINUTES (1.2) minutes with the fastest path this GPU measured (make gpu-check's
# bench; the whole update as CUDA graphs in TF32 when it has none), translated at beam 12: sized for
# one job of 9 minutes (its timing on a GPU: docs/gpu.md). Every step resumes, so a job stopped part-way goes
# on where it stopped:
#   timeout -s TERM 9m make paper PAPER_SCALE=gpu        (again, until it writes the report)
# Without a GPU it runs at tiny sizes, a minute a system: a check of the recipe, not a study.
# It needs only what make gpu-data builds here and a GPU machine is given (not the corpus).
PAPER_SCALE ?= cpu
ifeq ($(filter cpu gpu,$(PAPER_SCALE)),)
$(error PAPER_SCALE is cpu or gpu, not '$(PAPER_SCALE)')
endif
PAPER_MODELS ?= rnnencdec-30 rnnencdec-50 rnnsearch-30 rnnsearch-50
PAPER_SAMPLES ?= 1000
WORDS_BIN ?= $(DATA)/data-bin-words$(VOCAB_SIZE)
WORDS_VOCAB ?= $(DATA)/vocab-words$(VOCAB_SIZE)
ifeq ($(PAPER_SCALE),gpu)
PAPER   ?= $(RUNS)/paper-gpu
PAPER_SIZE ?= $(if $(ON_GPU),paper,tiny)
PAPER_MINUTES ?= $(if $(ON_GPU),1.2,1)
# Adam at 1e-3: the CPU study's 5e-3 for 256 units scaled by the 4x wider layers (not tuned on a GPU)
PAPER_RECIPE ?= --preset $(PAPER_SIZE) --optimizer adam --lr 1e-3 --best-by nll --lr-decay cosine --warmup 100 \
    --label-smoothing 0.1
# a paper-size validation writes best.pt and last.pt: every 200 updates, the saves would take about
# as long as a GPU's training between them (docs/paper.md)
PAPER_TRAIN ?= $(PAPER_RECIPE) --max-minutes $(PAPER_MINUTES) --valid-every $(if $(ON_GPU),1000,200) --no-valid-bleu
PAPER_BEAM ?= 12
# the speeds that choose each system's path: a gpu-check report, or bin/bench-gpu's JSON of this GPU
PAPER_BENCH ?= $(GPU_CHECK)/report.json
PAPER_PY = $(GPU_PY)
# order-only: inputs copied again to this machine (newer files, the same data) redo nothing
PAPER_INPUTS = | $(WORDS_BIN)/manifest.json
PAPER_LONG = | $(DATA)/raw/test-long.en
paper_bin = $(WORDS_BIN)
# the fastest path first, so that a failure to read the bench stops the job rather than hides
paper_path = flags=$$($(PAPER_PY) -m bench.paper path $(firstword $(subst -, ,$1)) \
    --bench $(PAPER_BENCH)) && 
paper_flags = --max-len $(if $(filter %-30,$1),30,$(MAX_LEN)) $$flags
# the No-UNK subset by the models' own lists: the 30,000 words of the data-bin
PAPER_NO_UNK = $(PAPER)/$(lastword $(PAPER_MODELS))/best.pt
else
PAPER   ?= $(RUNS)/paper
PAPER_UPDATES ?= 1500
PAPER_RECIPE ?= $(STUDY_RECIPE) --lr-decay cosine --warmup 50 --label-smoothing 0.1 --fused-steps
PAPER_TRAIN ?= $(PAPER_RECIPE) --max-len 0 --max-updates $(PAPER_UPDATES) --valid-every 500 --no-valid-bleu $(DEMO_BF16)
PAPER_BEAM ?= $(BEAM)
PAPER_PY = $(PY)
PAPER_INPUTS = $(BIN)/manifest.json $(BIN)-30/manifest.json
PAPER_LONG = $(DATA)/raw/test-long.en
paper_bin = $(if $(filter %-30,$1),$(BIN)-30,$(BIN))
paper_path =
paper_flags =
PAPER_NO_UNK = $(WORDS_VOCAB)
endif
PAPER_NMTKIT = $(PAPER_PY) -m nmtkit

# Sizes and budgets are numbers, checked before any work: BPE=8k failed in build-vocab after the
# corpus was fetched and cleaned, DEMO_UPDATES=1k after the data-bin was built.
_no_digits = $(subst 0,,$(subst 1,,$(subst 2,,$(subst 3,,$(subst 4,,$(subst 5,,$(subst 6,,$(subst 7,,$(subst \
    8,,$(subst 9,,$1))))))))))
whole = $(if $(strip $1),$(if $(call _no_digits,$(strip $1)),,yes))
decimal = $(and $(call whole,$(subst .,,$1)),$(filter 1 2,$(words $(subst ., ,_$(strip $1)_))))
WHOLE_SETTINGS = BPE VOCAB_SIZE JOBS BEAM MAX_LEN COMPARE_UPDATES HEAD_UPDATES ROUND_EVERY PAPER_BEAM \
    PAPER_SAMPLES FAIRSEQ_UPDATES SWEEP_UPDATES $(if $(filter auto,$(TEST_JOBS)),,TEST_JOBS) $(if $(PAPER_UPDATES),PAPER_UPDATES) \
    $(if $(DEMO_UPDATES),DEMO_UPDATES)
$(foreach v,$(WHOLE_SETTINGS),$(if $(call whole,$($v)),,$(error $v is a whole number, not '$($v)')))
$(foreach n,$(subst -, ,$(subst $(comma), ,$(ALIGN_LINES))),$(if $(call whole,$n),,\
    $(error ALIGN_LINES is test lines' numbers and ranges (86,88,110-112), not '$(ALIGN_LINES)')))
$(foreach v,DEMO_MINUTES MAX_RATIO GPU_MINUTES SWEEP_MINUTES MARIAN_MINUTES FAIRSEQ_MINUTES \
    $(if $(PAPER_MINUTES),PAPER_MINUTES),$(if $(call decimal,$($v)),,\
    $(error $v is a number, not '$($v)')))

.PRECIOUS: $(PAPER)/%/done $(PAPER)/%/test.hyp.fr $(PAPER)/%/test-long.hyp.fr

$(DATA)/clean-30/preprocess.json: $(DATA)/raw/bible.json
	$(NMTKIT) preprocess -s en -t fr --train $(DATA)/raw/train --valid $(DATA)/raw/valid \
	    --test $(DATA)/raw/test -d $(DATA)/clean-30 -j $(JOBS) --max-len 30 --max-ratio $(MAX_RATIO) \
	    --clean bible

$(BIN)-30/manifest.json: $(VOCAB)/vocab.json $(DATA)/clean-30/preprocess.json
	$(NMTKIT) preprocess -s en -t fr --train $(DATA)/clean-30/train --valid $(DATA)/clean/valid \
	    --test $(DATA)/clean/test --vocab $(VOCAB) -d $(BIN)-30 -j $(JOBS) --quiet

ifneq ($(WORDS_VOCAB),$(VOCAB))
$(WORDS_VOCAB)/vocab.json: $(DATA)/clean/preprocess.json
	$(NMTKIT) build-vocab -s en -t fr --train $(DATA)/clean/train -d $(WORDS_VOCAB) --size $(VOCAB_SIZE)
endif

# A GPU machine given what make gpu-data built, not the corpus, has its inputs. One it lacks is built
# as on a CPU machine, the corpus fetched, or the job says what to carry (no network, no corpus).
NOT_BUILT_HERE = is missing and could not be built here: make gpu-data builds it where the Bible corpus is; carry it here
ifneq ($(and $(ON_GPU),$(if $(wildcard $(DATA)/raw/bible.json),,no corpus)),)
$(DATA)/raw/test-long.en $(filter-out $(BIN)/manifest.json,$(WORDS_BIN)/manifest.json):
	$(MAKE) $@ ON_GPU= || { echo "make: $@ $(NOT_BUILT_HERE)" >&2; exit 2; }
else
$(DATA)/raw/test-long.en: $(DATA)/raw/bible.json
	$(PY) -m bench.paper passages $(DATA)/raw

ifneq ($(WORDS_BIN),$(BIN))
$(WORDS_BIN)/manifest.json:
	$(MAKE) data BPE=0
endif
endif

# a run named …-coverage trains Tu et al.'s linguistic coverage, …-neural its neural one
coverage_of = $(if $(findstring -coverage,$1),--coverage linguistic)$(if $(findstring -neural,$1),--coverage neural)

$(PAPER)/%/done: $(PAPER)/%/train-options $(PAPER_INPUTS)
	$(call paper_path,$*)$(PAPER_NMTKIT) train $(call paper_bin,$*) --save-dir $(PAPER)/$* --arch $(firstword $(subst -, ,$*)) \
	    $(PAPER_TRAIN) $(call paper_flags,$*) $(call coverage_of,$*) --threads $(JOBS)
	touch $@

$(PAPER)/%/test.hyp.fr: $(PAPER)/%/done
	$(PAPER_NMTKIT) translate -m $(PAPER)/$*/best.pt $(DATA)/raw/test.en -o $@ --beam $(PAPER_BEAM) \
	    --threads $(JOBS) $(if $(findstring search,$*),--alignments $(PAPER)/$*/test.align)

$(PAPER)/%/test-long.hyp.fr: $(PAPER)/%/done $(PAPER_LONG)
	$(PAPER_NMTKIT) translate -m $(PAPER)/$*/best.pt $(DATA)/raw/test-long.en -o $@ --beam $(PAPER_BEAM) \
	    --threads $(JOBS) $(if $(findstring search,$*),--alignments $(PAPER)/$*/test-long.align)

$(PAPER)/report.md: $(foreach m,$(PAPER_MODELS),$(PAPER)/$(m)/test.hyp.fr $(PAPER)/$(m)/test-long.hyp.fr) \
    $(if $(filter gpu,$(PAPER_SCALE)),,$(WORDS_VOCAB)/vocab.json)
	$(PAPER_PY) -m bench.paper report --runs $(PAPER) --raw $(DATA)/raw --no-unk-vocab $(PAPER_NO_UNK) \
	    --models "$(PAPER_MODELS)" --samples $(PAPER_SAMPLES) --beam $(PAPER_BEAM) \
	    --made-by "$(paper_command)"
	printf '%s\n' "$(paper_command)" > $(PAPER)/made-by

# The variables that change the study's figures, named in the command its record gives. The report
# says which command made it (made-by): a report the command at hand did not make (an earlier run's,
# up to date) is not recorded as this command's.
PAPER_FIGURE_VARS = PAPER_UPDATES PAPER_RECIPE PAPER_TRAIN PAPER_MODELS PAPER_MINUTES PAPER_SIZE PAPER_BEAM \
    PAPER_BENCH PAPER_SAMPLES STUDY_RECIPE DEMO_BF16 BEAM BPE VOCAB_SIZE DATA PAIRS MAX_LEN MAX_RATIO JOBS
paper_command = make paper$(if $(filter gpu,$(PAPER_SCALE)), PAPER_SCALE=gpu)$(call given,$(PAPER_FIGURE_VARS))

paper: $(PAPER)/report.md
	@if [ "$$(cat $(PAPER)/made-by 2>/dev/null)" != "$(paper_command)" ]; then \
	    echo "make paper: $(PAPER)/report.md was made by another command ($$(cat $(PAPER)/made-by 2>/dev/null \
	        || echo 'not recorded')): not recorded as this one's (another PAPER=DIR runs this one)" >&2; \
	else set -x; $(PAPER_PY) -m bench.results record paper$(if $(filter gpu,$(PAPER_SCALE)),-gpu) \
	    --into $(call results_into,$(PAPER)) --machine-of $(PAPER)/$(lastword $(PAPER_MODELS)) \
	    --title "The paper's finding: RNNsearch-50 against RNNencdec-50 (test verses, tokenized BLEU)" \
	    --command "$(paper_command)" \
	    $(foreach m,$(filter rnnsearch-50 rnnencdec-50,$(PAPER_MODELS)),--json-figure \
	        "$(m)=$(PAPER)/table1.json:test.all.bleu_tok.$(m).bleu"); fi

# Under-translation (docs/paper.md): RNNsearch-50 beside the same recipe with Tu et al.'s coverage
# models, by passage length and by how long the outputs are against the references.
# Each model is searched twice: as the paper ranks (raw log-probability) and, in run/average/, by
# log-probability per word (translate --length-penalty average; COVERAGE_SEARCH= leaves it out).
COVERAGE_MODELS ?= rnnsearch-50 rnnsearch-50-coverage rnnsearch-50-neural
COVERAGE_SEARCH ?= average
COVERAGE_ROWS = $(strip $(COVERAGE_MODELS) $(if $(COVERAGE_SEARCH),$(addsuffix /$(COVERAGE_SEARCH),$(COVERAGE_MODELS))))
paper-coverage: $(foreach m,$(COVERAGE_ROWS),$(PAPER)/$(m)/test.hyp.fr $(PAPER)/$(m)/test-long.hyp.fr)
	$(PAPER_PY) -m bench.paper long --runs $(PAPER) --raw $(DATA)/raw --models "$(COVERAGE_ROWS)"

$(PAPER)/%/$(COVERAGE_SEARCH)/test.hyp.fr $(PAPER)/%/$(COVERAGE_SEARCH)/test-long.hyp.fr: $(PAPER)/%/done $(PAPER_LONG)
	mkdir -p $(@D)
	for s in test test-long; do $(PAPER_NMTKIT) translate -m $(PAPER)/$*/best.pt $(DATA)/raw/$$s.en \
	    -o $(@D)/$$s.hyp.fr --beam $(PAPER_BEAM) --threads $(JOBS) --length-penalty $(COVERAGE_SEARCH) || exit; done

# --replace-unk on the 30,000-word lists (docs/alignment.md): make paper's RNNsearch-50 recipe on the
# words with eflomal's links, without and with guided alignment (the demo-guided flags); each <unk> of
# their test translations, and their forced alignments of the references' out-of-list words, checked
# against eflomal's alignment of the test verses with their references.
UNK_RUNS ?= $(PAPER)/unk
UNK_MODELS = rnnsearch-50 rnnsearch-50-guided
.PRECIOUS: $(UNK_RUNS)/%/done
ifneq ($(WORDS_BIN),$(BIN))
$(WORDS_BIN)-links/manifest.json: $(WORDS_VOCAB)/vocab.json $(DATA)/clean/train.links
	$(call links_bin,$(WORDS_VOCAB))
endif

# the test pairs are aligned together with the training pairs, as eflomal needs data
$(DATA)/clean/test.links: $(DATA)/clean/preprocess.json | $(VENV)/.align
	mkdir -p $(DATA)/align-test
	for l in en fr; do cat $(DATA)/clean/train.$$l $(DATA)/clean/test.$$l > $(DATA)/align-test/all.$$l || exit; done
	cp $(DATA)/clean/preprocess.json $(DATA)/align-test/  # word-align reads only preprocess's text
	$(NMTKIT) word-align -s en -t fr --train $(DATA)/align-test/all
	tail -n $$(wc -l < $(DATA)/clean/test.en) $(DATA)/align-test/all.links > $@.tmp && mv $@.tmp $@

$(foreach m,$(UNK_MODELS),$(eval UNK_OPTIONS_$m = $$(PAPER_TRAIN) $(if $(findstring -guided,$m),$$(GUIDED_TRAIN_FLAGS)))\
    $(eval $(call run_options,$(UNK_RUNS)/$m,UNK_OPTIONS_$m,$(WORDS_BIN)-links)))
$(UNK_RUNS)/%/done: $(WORDS_BIN)-links/manifest.json $(UNK_RUNS)/%/train-options
	$(NMTKIT) train $(WORDS_BIN)-links --save-dir $(@D) --arch rnnsearch $(PAPER_TRAIN) --threads $(JOBS) \
	    $(if $(findstring -guided,$*),--guided-alignment-weight $(GUIDED_WEIGHT) $(GUIDED_HEAD))
	touch $@

unk_translate = $(NMTKIT) translate -m $(@D)/best.pt $(DATA)/clean/test.en --tokenized --beam $(PAPER_BEAM) --threads $(JOBS)
$(UNK_RUNS)/%/test.replaced.fr: $(UNK_RUNS)/%/done
	$(unk_translate) -o $(@D)/test.plain.fr
	$(unk_translate) -o $@ --replace-unk

# the references forced through each model: where it links each word, <unk>s included
$(UNK_RUNS)/%/test.ref.links: $(UNK_RUNS)/%/done
	$(NMTKIT) align -m $(@D)/best.pt --source $(DATA)/clean/test.en --target $(DATA)/clean/test.fr --tokenized \
	    -o $@ --threads $(JOBS)

paper-unk: $(foreach m,$(UNK_MODELS),$(UNK_RUNS)/$(m)/test.replaced.fr $(UNK_RUNS)/$(m)/test.ref.links) \
    $(DATA)/clean/test.links
	$(PY) -m bench.unk --source $(DATA)/clean/test.en --reference $(DATA)/clean/test.fr \
	    --links $(DATA)/clean/test.links --runs $(UNK_RUNS) --models "$(UNK_MODELS)" \
	    --target-vocab $(WORDS_BIN)-links/vocab.fr.txt

# What a GPU machine without a network needs beside the checkout (make gpu-check, make paper
# PAPER_SCALE=gpu, the test suite), built here: the 30,000-word data-bin, the test verses and
# passages, and the wheels of what nmtkit needs beyond a CUDA PyTorch image's packages (torch, numpy,
# click, rich, sacrebleu, matplotlib, pytest), at the versions installed here, for the image's Python
# (GPU_PYTHON), and GNU make (wheels/bin/make: make paper there). Copy GPU_CARRY there, then:
# python3 -m pip install --no-index --no-deps wheels/*.whl; PATH=$PWD/wheels/bin:$PATH
GPU_PYTHON ?= 3.12
GPU_PLATFORMS ?= manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux_2_28_x86_64 any
GPU_WHEELS ?= sacremoses subword-nmt mock tomli[-_]w fastapi starlette uvicorn pydantic pydantic[-_]core \
    annotated-types typing-inspection opentelemetry-api annotated[-_]doc anyio h11 idna joblib regex tqdm \
    pyyaml cloudpickle
# not dependencies of nmtkit: what lets make gpu-check's tests part run the suite on the GPU
# machine's cores (pytest -n) within one job
GPU_TEST_WHEELS ?= pytest-xdist==3.8.0 execnet==2.1.2
GPU_CARRY = wheels $(WORDS_BIN) $(foreach s,test test-long,$(DATA)/raw/$(s).en $(DATA)/raw/$(s).fr)
gpu-data: $(INSTALLED)
	$(MAKE) data BPE=0
	$(MAKE) $(DATA)/raw/test-long.en
	rm -rf wheels.new   # wheels/ replaced only once the new set is whole: a failed download keeps the old
	$(PY) -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: -d wheels.new \
	    --python-version $(GPU_PYTHON) --implementation cp $(foreach p,$(GPU_PLATFORMS),--platform $(p)) \
	    $$($(PY) -m pip freeze | grep -iE '^($(subst $(space),|,$(GPU_WHEELS)))==') $(GPU_TEST_WHEELS)
	mkdir -p wheels.new/bin && cp "$$(command -v make)" wheels.new/bin/make  # a CUDA image may have no make
	rm -rf wheels && mv wheels.new wheels
	@echo "carry beside the checkout ($$(du -csh $(GPU_CARRY) | tail -1 | cut -f1)): $(GPU_CARRY)"

# The GPU job's setup rehearsed on this machine's CPU, before a GPU's minutes are spent on it: the
# checkout as a copy without git (git archive), run uninstalled (PYTHONPATH=.) by a fresh venv that
# holds the CUDA image's packages nmtkit uses and the carried wheels' (at this venv's versions),
# and the whole suite as gpu-check's tests part runs it there
REHEARSAL ?= /tmp/nmtkit-gpu-rehearsal
IMAGE_PACKAGES ?= torch numpy matplotlib click rich sacrebleu sentencepiece pytest pytest-xdist execnet \
    threadpoolctl tensorboard
NOT_A_REHEARSAL = REHEARSAL='$(REHEARSAL)' holds files but no mark of a rehearsal's: give a new or empty directory (it empties it first)
REHEARSAL_PATH = REHEARSAL is a directory's path without spaces, quotes or wildcards
# a path the recipe's lines take unquoted: one word, no wildcard, quote or $$
REHEARSAL_BAD = $(or $(filter-out 1,$(words $(REHEARSAL))),$(findstring *,$(REHEARSAL)),$(findstring ?,$(REHEARSAL)),\
    $(findstring [,$(REHEARSAL)),$(findstring ',$(REHEARSAL)),$(findstring ",$(REHEARSAL)),$(findstring $$,$(REHEARSAL)))
# what marks a directory as one it made, and may empty
REHEARSAL_MARK = $(REHEARSAL)/.nmtkit-gpu-rehearsal
NOT_REHEARSED = the uncommitted changes are not rehearsed: it archives HEAD
gpu-rehearsal: $(INSTALLED)
	@$(if $(REHEARSAL_BAD),echo "make: gpu-rehearsal: $(REHEARSAL_PATH)" >&2; exit 2)
	@if [ -n "$$(ls -A $(REHEARSAL) 2>/dev/null)" ] && [ ! -e $(REHEARSAL_MARK) ]; \
	    then echo "make: gpu-rehearsal: $(NOT_A_REHEARSAL)" >&2; exit 2; fi
	@git diff --quiet HEAD || echo "make: gpu-rehearsal: $(NOT_REHEARSED) ($$(git rev-parse --short HEAD))" >&2
	rm -rf $(REHEARSAL) && mkdir -p $(REHEARSAL)/repo && touch $(REHEARSAL_MARK)
	git archive HEAD | tar -x -C $(REHEARSAL)/repo
	$(PYTHON) -m venv $(REHEARSAL)/venv
	$(REHEARSAL)/venv/bin/python -m pip install -q --disable-pip-version-check $(TORCH_CONSTRAINT) \
	    $$($(PY) -m pip freeze | grep -iE '^($(subst $(space),|,$(IMAGE_PACKAGES) $(GPU_WHEELS)))==')
	cd $(REHEARSAL)/repo && PATH=$(REHEARSAL)/venv/bin:$$PATH PYTHONPATH=. PYTEST_ADDOPTS='-n $(JOBS)' \
	    python3 bin/gpu-check --parts tests --tests-marks 'slow or not slow' --minutes 40 --out $(REHEARSAL)/report
	@echo "the rehearsal's report: $(REHEARSAL)/report/report.md"

clean-data:
	rm -rf $(DATA) $(DATA)-kl

# the paper's and paper-coverage's runs (COVERAGE_MODELS is set above, with paper-coverage)
$(foreach m,$(sort $(PAPER_MODELS) $(COVERAGE_MODELS)),$(eval PAPER_OPTIONS_$m = $$(PAPER_TRAIN) \
    $(if $(filter gpu,$(PAPER_SCALE)),--max-len $(if $(filter %-30,$m),30,$(MAX_LEN))) $(call coverage_of,$m))\
    $(eval $(call run_options,$(PAPER)/$m,PAPER_OPTIONS_$m,$(call paper_bin,$m))))
