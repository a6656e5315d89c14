import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from context_engine.config import Settings
from context_engine.eval import eval_data

# Property tests draw the same examples on every run (a submission never passes or fails by chance), and
# every counterexample they ever found is an explicit @example beside them. HYPOTHESIS_PROFILE=explore
# draws new ones (a random seed each run, failures saved in .hypothesis/) to look for more; never in CI.
hypothesis_settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
hypothesis_settings.register_profile("explore", derandomize=False, print_blob=True)
hypothesis_settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE") or "ci")

NOW = datetime(2026, 11, 30, 12, 0)
# The real third-party data is never in the repository: $CONTEXT_ENGINE_EVAL_DATA (`make test` sets it).
EVAL_DATA = eval_data()
GITHUB_DUMP = EVAL_DATA / "github" / "huggingface-datasets-issues.jsonl.gz"
needs_slack_exports = pytest.mark.skipif(not (EVAL_DATA / "slack").is_dir(),
                                         reason="no Slack exports in $CONTEXT_ENGINE_EVAL_DATA")
needs_clapnq = pytest.mark.skipif(not (EVAL_DATA / "clapnq").is_dir(), reason="no CLAP NQ in $CONTEXT_ENGINE_EVAL_DATA")


@pytest.fixture(scope="session")
def sample_dir(tmp_path_factory) -> Path:
    from context_engine.ingest import ingest
    from context_engine.sources.sample import generate

    data_dir = tmp_path_factory.mktemp("sample")
    ingest(Settings(data_dir=data_dir, mongodb_uri=None), generate())
    return data_dir


@pytest.fixture
def settings(sample_dir) -> Settings:
    return Settings(data_dir=sample_dir, mongodb_uri=None, tenant="acme", asker=None, use_llm=False)


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "OPENAI_BASE_URL": "", "OPENAI_API_KEY": "", **(env or {})}
    full_env.pop("MONGODB_URI", None)
    return subprocess.run([sys.executable, "-m", "context_engine.cli", *args], capture_output=True, text=True,
                          env=full_env, timeout=120)
