# `make test` and `make demo` do all the set-up on a fresh machine: a virtual environment in
# .venv with the pinned test set (requirements-ci.txt) and this package, editable.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BACKENDS ?= tensorflow jax torch
# Two pytest-xdist workers, one per core, for everything but tests/serial (the distributed
# tests, marked `serial`, start processes of their own: torch's DDP crashed once beside a second
# worker), which run after them, alone. One OpenMP thread per worker: two workers of two
# threads each on two cores took torch's stage from 3 to 11 minutes.
WORKERS ?= 2
PYTEST_ARGS ?= --durations=10
# The backends whose stage also executes the example notebooks (quick mode): torch, whose
# stage is the shortest and runs them fastest (2.9 worker-minutes, against 6 on TensorFlow).
# The others' stages are the suite alone, for CI's 90 minutes on a 2-core machine; `make
# notebooks` executes them at full size on JAX.
NOTEBOOK_BACKENDS ?= torch

# Caches go somewhere disposable, never to ~/.keras or ~/.config.
export TF_CPP_MIN_LOG_LEVEL ?= 2
export KERAS_HOME ?= $(CURDIR)/.cache/keras
export MPLCONFIGDIR ?= $(CURDIR)/.cache/matplotlib
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# JAX keeps its compiled functions on disk for the run: the tests build many identical small
# models, and a cache hit skips XLA's compile (measured: decoder and global-attention tests
# 170 s -> 135 s from an empty cache).
export JAX_COMPILATION_CACHE_DIR ?= $(CURDIR)/.cache/jax-compilation
export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS ?= 0
export JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES ?= 0
# For the tests only (not the trainings and benchmarks below, which run at XLA's default):
# XLA (JAX, and TensorFlow's jit_compile) compiles the tests' functions without LLVM's
# optimisation passes, since the tests' tiny shapes spend their time compiling, not running (the
# JAX stage measured 14.0 against 16.4-17.1 minutes, the notebooks 34 s against 60 s); and the
# notebooks run with small data and one epoch.
test: export XLA_FLAGS ?= --xla_backend_optimization_level=0
test: export KERAS_LUONG_QUICK ?= 1

.PHONY: install lint format test readme-venv docs notebooks demo results luong-vs-bahdanau g2p g2p-variants \
	translate translate-variants bucketing tfa-venv tfa-parity onmt-venv opennmt-side-by-side opennmt-budget \
	gpu-check-files clean

$(STAMP): requirements-ci.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements-ci.txt -e .
	touch $(STAMP)

install: $(STAMP)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# The documentation site in site/: strict, so a broken link, page or docstring fails.
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# The whole suite and the example notebooks once per backend; fails if any backend fails.
test: lint docs
	@failed=""; \
	for backend in $(BACKENDS); do \
		echo "=== KERAS_BACKEND=$$backend"; \
		case " $(NOTEBOOK_BACKENDS) " in *" $$backend "*) notebooks="--nbmake examples";; \
			*) notebooks="";; esac; \
		OMP_NUM_THREADS=1 KERAS_BACKEND=$$backend $(PY) -m pytest -p no:cacheprovider \
			tests $$notebooks -m "not serial" -n $(WORKERS) --basetemp=$(CURDIR)/.cache/pytest-$$backend \
			$(PYTEST_ARGS) || failed="$$failed $$backend"; \
		KERAS_BACKEND=$$backend $(PY) -m pytest -p no:cacheprovider tests/serial \
			--basetemp=$(CURDIR)/.cache/pytest-$$backend-serial || failed="$$failed $$backend"; \
	done; \
	if [ -n "$$failed" ]; then echo "FAILED on:$$failed"; exit 1; fi; \
	echo "all backends passed: $(BACKENDS)"
	$(MAKE) --no-print-directory readme-venv

# The release files, as a user gets them: the wheel and the sdist built from this checkout
# (python -m build), each installed with the jax extra in a new virtual environment holding
# only that and what it requires, where the README's code runs from the installed package
# (tests/readme_test.py checks that it comes from site-packages, at this version, and that
# TensorFlow, torch, keras-hub and matplotlib are absent). The wheel must hold the package
# and nothing else (no tests, no corpus).
FRESH_VENV := $(CURDIR)/.cache/fresh-venv
DIST := $(CURDIR)/.cache/dist
VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' keras_luong/version.py)
readme-venv: install
	rm -rf $(FRESH_VENV) $(DIST)
	$(PY) -m build --sdist --wheel --outdir $(DIST) . > $(DIST).log 2>&1 || (tail -20 $(DIST).log; exit 1)
	$(PY) -c "import sys, zipfile; names = zipfile.ZipFile(sys.argv[1]).namelist(); \
		stray = [n for n in names if not n.startswith(('keras_luong/', 'keras_luong-'))]; \
		assert not stray, stray" $(DIST)/keras_luong-$(VERSION)-py3-none-any.whl
	$(PYTHON) -m venv $(FRESH_VENV)
	$(FRESH_VENV)/bin/pip install -q "$(DIST)/keras_luong-$(VERSION)-py3-none-any.whl[jax]"
	KERAS_LUONG_VERSION=$(VERSION) KERAS_BACKEND=jax $(FRESH_VENV)/bin/python tests/readme_test.py
	$(FRESH_VENV)/bin/pip install -q --no-deps --force-reinstall $(DIST)/keras_luong-$(VERSION).tar.gz
	KERAS_LUONG_VERSION=$(VERSION) KERAS_BACKEND=jax $(FRESH_VENV)/bin/python tests/readme_test.py

# Drops what the backends log to stderr (TensorFlow's start-up lines) from saved outputs.
define STRIP_STDERR
import json, sys
path = sys.argv[1]
notebook = json.load(open(path))
for cell in notebook["cells"]:
    if cell["cell_type"] == "code":
        cell["outputs"] = [o for o in cell["outputs"] if o.get("name") != "stderr"]
json.dump(notebook, open(path, "w"), indent=1, ensure_ascii=False)
open(path, "a").write("\n")
endef
export STRIP_STDERR

# The notebooks executed at full size (not the CI's quick mode), their outputs saved in place
# for GitHub and the docs site (about an hour on 2 CPU cores; not part of CI). NOTEBOOKS: the
# ones to run (default: all).
NOTEBOOKS ?= examples/*.ipynb
notebooks: install
	set -e; for notebook in $(NOTEBOOKS); do \
		echo "=== $$notebook"; \
		KERAS_LUONG_QUICK=0 KERAS_BACKEND=$${KERAS_BACKEND:-jax} $(VENV)/bin/jupyter nbconvert \
			--to notebook --execute --inplace --ExecutePreprocessor.timeout=-1 $$notebook; \
		$(PY) -c "$$STRIP_STDERR" $$notebook; \
	done

# The demo (keras_luong.demo): a model learns to read dates written in 15 locales, then
# decodes, plots and exports. Backend: $KERAS_BACKEND if set, else jax.
demo: install
	KERAS_BACKEND=$${KERAS_BACKEND:-jax} $(PY) -m keras_luong.demo

# Our version of the paper's Tables 4 and 6, docs/results.md's table and figures (its results
# file; about 15 minutes; not part of CI).
results: install
	KERAS_BACKEND=$${KERAS_BACKEND:-jax} $(PY) -m benchmarks.variants \
		--json docs/results/dates_variants.json

# docs/luong_vs_bahdanau.md's tables and figures (its results file) and its picture: seven
# models at one budget, three seeds each (about 30 minutes; not part of CI).
luong-vs-bahdanau: install
	KERAS_BACKEND=$${KERAS_BACKEND:-jax} $(PY) -m benchmarks.luong_vs_bahdanau --seeds 0,1,2 \
		--json docs/results/luong_vs_bahdanau.json --figure docs/luong_vs_bahdanau_attention.png

# Grapheme-to-phoneme on CMUdict: docs/g2p.md's run, 55 minutes of training, written to its
# results file (not part of CI). Other options in G2P_ARGS replace these, e.g. make g2p
# G2P_ARGS="--minutes 10 --alignment local-p".
G2P_ARGS ?= --minutes 55 --json docs/results/g2p.json
g2p: install
	KERAS_BACKEND=$${KERAS_BACKEND:-jax} $(PY) -m benchmarks.g2p $(G2P_ARGS)

# docs/g2p.md's variant table: six variants at one equal budget of epochs (about an hour and a
# half on a 2-core CPU; not part of CI), then their results file, docs/results/g2p_variants.json.
G2P_VARIANT_ARGS ?= --epochs 3 --length-penalties 0.5
G2P_VARIANTS := global-general=--score-mode=general \
	global-dot=--score-mode=dot \
	local-m-general=--alignment=local-m \
	local-p-general=--alignment=local-p \
	global-general-no-feeding=--no-input-feeding \
	bahdanau-2015=--attention-timing=bahdanau+--score-mode=additive
g2p-variants: install
	set -e; for variant in $(G2P_VARIANTS); do \
		name=$${variant%%=*}; \
		KERAS_BACKEND=$${KERAS_BACKEND:-jax} $(PY) -m benchmarks.g2p $(G2P_VARIANT_ARGS) \
			$$(echo "$${variant#*=}" | tr + ' ') --output-dir g2p_output/variants/$$name; \
	done
	KERAS_BACKEND=$${KERAS_BACKEND:-jax} $(PY) -m benchmarks.g2p_table g2p_output/variants \
		--json docs/results/g2p_variants.json

# Multi30k English->German: one model, at most an hour of training, then validation and test2016
# BLEU for greedy and beam search (not part of CI). DATA: a folder of the official files
# (else they are downloaded into $KERAS_HOME). Options after TRANSLATE_ARGS.
DATA ?=
TRANSLATE_ARGS ?=
translate: install
	KERAS_BACKEND=$${KERAS_BACKEND:-jax} $(PY) -m benchmarks.translate \
		$(if $(DATA),--data $(DATA)) $(TRANSLATE_ARGS)

# Six variants of the translation recipe at one equal budget of minutes each
# (TRANSLATE_VARIANT_ARGS), then the table of their results (not part of CI).
TRANSLATE_VARIANT_ARGS ?= --minutes 15 --length-penalties 1.0
TRANSLATE_VARIANTS := global-general=--score-mode=general \
	global-dot=--score-mode=dot \
	local-m-general=--alignment=local-m \
	local-p-general=--alignment=local-p \
	global-general-no-feeding=--no-input-feeding \
	keras-native=--model=keras-native
translate-variants: install
	set -e; for variant in $(TRANSLATE_VARIANTS); do \
		name=$${variant%%=*}; \
		KERAS_BACKEND=$${KERAS_BACKEND:-jax} $(PY) -m benchmarks.translate \
			$(if $(DATA),--data $(DATA)) $(TRANSLATE_VARIANT_ARGS) $${variant#*=} \
			--output-dir translate_output/variants/$$name; \
	done
	$(PY) -m benchmarks.translate_table translate_output/variants

# Training tokens/s on Multi30k with and without length-bucketed batches (a few minutes).
bucketing: install
	KERAS_BACKEND=$${KERAS_BACKEND:-jax} $(PY) -m benchmarks.speed bucketing $(if $(DATA),--data $(DATA))

# OpenNMT-py 3.5.1 for the side-by-side benchmark, in its own .venv-onmt over the project's
# torch 2.13.0 (OpenNMT-py asks for torch < 2.3, hence --no-deps and its other requirements
# by hand).
ONMT_VENV := .venv-onmt
# keras-luong against tensorflow-addons 0.23 itself (tests/tfa_parity_test.py, on every backend):
# its own environment in .venv-tfa (TensorFlow 2.15 and Keras 2, 1.3 GB; a few minutes).
TFA_VENV ?= .venv-tfa
tfa-venv:
	test -x $(TFA_VENV)/bin/python || $(PYTHON) -m venv $(TFA_VENV)
	$(TFA_VENV)/bin/pip install -q tensorflow-cpu==2.15.1 tensorflow-addons==0.23.0 "numpy<2"

tfa-parity: install tfa-venv
	@for backend in $(BACKENDS); do \
		echo "=== KERAS_BACKEND=$$backend"; \
		KERAS_BACKEND=$$backend $(PY) -m pytest -p no:cacheprovider tests/tfa_parity_test.py \
			--tfa-python $(TFA_VENV)/bin/python --basetemp=$(CURDIR)/.cache/pytest-tfa -q || exit 1; \
	done

onmt-venv: install
	test -x $(ONMT_VENV)/bin/python || $(PYTHON) -m venv $(ONMT_VENV)
	$(PY) -c "import site; print(site.getsitepackages()[0])" \
		> $$($(ONMT_VENV)/bin/python -c "import site; print(site.getsitepackages()[0])")/project.pth
	$(ONMT_VENV)/bin/pip install -q --no-deps opennmt-py==3.5.1
	$(ONMT_VENV)/bin/pip install -q configargparse pyonmttok rapidfuzz pyahocorasick spacy \
		fasttext-wheel

# keras-luong's default model and recipe beside OpenNMT-py's on the seed study's long-sentence
# corpus, the translation page's two commands: validation accuracy per epoch and target
# tokens/s at 2 threads, the whole corpus on JAX, then every backend on 3,000 pairs in two
# rounds, the engines' order reversed in the second (about 40 minutes; not part of CI).
# Options after SIDE_BY_SIDE_ARGS override these (SIDE_BY_SIDE_ARGS="--threads 1,2").
SIDE_BY_SIDE_ARGS ?=
opennmt-side-by-side: onmt-venv
	$(PY) -m benchmarks.opennmt epochs $(if $(DATA),--data $(DATA)) --corpus long \
		--engines jax,opennmt --threads 2 --epochs 3 $(SIDE_BY_SIDE_ARGS)
	$(PY) -m benchmarks.opennmt epochs $(if $(DATA),--data $(DATA)) --corpus long \
		--train-pairs 3000 --epochs 4 --engines jax,tensorflow,torch,opennmt --threads 2 \
		--rounds 2 $(SIDE_BY_SIDE_ARGS)

# The same two at one budget of BUDGET_MINUTES each on the long corpus: keras-luong by the
# translation page's recipe with every callback, OpenNMT-py stopped at the budget; validation
# BLEU per epoch, the epoch's time split, test BLEU with beam 5 (twice the budget and a few
# minutes; not part of CI).
BUDGET_MINUTES ?= 60
opennmt-budget: onmt-venv
	$(PY) -m benchmarks.opennmt budget $(if $(DATA),--data $(DATA)) --corpus long \
		--minutes $(BUDGET_MINUTES) $(SIDE_BY_SIDE_ARGS)

# The GPU check's files, written on a machine with network for one without (a lent GPU
# machine with Python 3.12, torch and JAX): in .whl/ the wheels `benchmarks/gpu.sh` installs
# there (keras 3.15.1 and its pure-Python needs, OpenNMT-py 3.5.1 and what it imports,
# 24 MiB), in .cache/gpu/ Multi30k's pairs as the recipe's pieces (2 MiB). Then, on the GPU
# machine, with .whl and .cache/gpu beside the tree: `bash benchmarks/gpu.sh --output
# gpu.json` (about 6 minutes on one H200; not part of CI, whose tests dry-run it).
GPU_WHEELS := keras==3.15.1 namex==0.1.0 optree==0.20.0 opennmt-py==3.5.1 configargparse==1.9.0 \
	pyonmttok==1.38.1 rapidfuzz==3.14.6 pyahocorasick==2.3.1
gpu-check-files: install
	$(PY) -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
		--implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
		--platform manylinux2014_x86_64 -d .whl $(GPU_WHEELS)
	$(PY) -m benchmarks.gpu --prepare $(if $(DATA),--data $(DATA))

clean:
	rm -rf .cache .pytest_cache .ruff_cache
