import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from context_engine.config import Settings

NOW = datetime(2026, 11, 30, 12, 0)
SHARED = Path(__file__).resolve().parents[2] / "shared"
GITHUB_DUMP = SHARED / "data" / "github" / "huggingface-datasets-issues.jsonl.gz"
# The real third-party data lives beside the checkout (../shared/data), never inside it.
needs_slack_exports = pytest.mark.skipif(not (SHARED / "data" / "slack").is_dir(),
                                         reason="../shared/data/slack is not beside this checkout")
needs_clapnq = pytest.mark.skipif(not (SHARED / "data" / "clapnq").is_dir(),
                                  reason="../shared/data/clapnq is not beside this checkout")


@pytest.fixture(scope="session")
def sample_dir(tmp_path_factory) -> Path:
    from context_engine.sources.ingest import ingest
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
