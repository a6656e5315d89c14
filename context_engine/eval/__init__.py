"""Evaluations and benchmarks. Third-party evaluation data (BEIR SciFact, CLAP NQ, a GitHub API dump,
Slack exports) is never in the repository: it is read from $CONTEXT_ENGINE_EVAL_DATA (the Makefile
sets it; see the README) or a path given on the command line."""

from __future__ import annotations

import os
from pathlib import Path

EVAL_DATA_ENV = "CONTEXT_ENGINE_EVAL_DATA"


def eval_data(*parts: str) -> Path:
    """A path inside the evaluation data directory (which may not exist: callers say what is missing)."""
    return Path(os.environ.get(EVAL_DATA_ENV) or "eval-data", *parts)
