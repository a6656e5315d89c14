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
TESTS_DIR = Path(__file__).parent
REPO_ROOT = TESTS_DIR.parent
TEST_DATA_DIR = TESTS_DIR / "data"  # question sets, conversations and connector fixtures written for these tests
# The real third-party data is never in the repository: $CONTEXT_ENGINE_EVAL_DATA (`make test` sets it).
EVAL_DATA = eval_data()
GITHUB_DUMP = EVAL_DATA / "github" / "huggingface-datasets-issues.jsonl.gz"
needs_slack_exports = pytest.mark.skipif(
    not (EVAL_DATA / "slack").is_dir(), reason="no Slack exports in $CONTEXT_ENGINE_EVAL_DATA"
)
needs_clapnq = pytest.mark.skipif(not (EVAL_DATA / "clapnq").is_dir(), reason="no CLAP NQ in $CONTEXT_ENGINE_EVAL_DATA")
needs_github_dump = pytest.mark.skipif(not GITHUB_DUMP.exists(), reason="no GitHub dump in $CONTEXT_ENGINE_EVAL_DATA")
needs_real_sources = pytest.mark.skipif(
    not GITHUB_DUMP.exists() or not (EVAL_DATA / "slack").is_dir(),
    reason="no GitHub dump or Slack exports in $CONTEXT_ENGINE_EVAL_DATA",
)


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


@pytest.fixture(scope="session")
def sample_records_dir(tmp_path_factory) -> Path:
    """The sample corpus's records and catalogs without the semantic index (seconds: nothing is embedded).
    Shared by every test that only reads it."""
    from context_engine.ingest import ingest
    from context_engine.sources.sample import generate

    data_dir = tmp_path_factory.mktemp("sample-records")
    ingest(Settings(data_dir=data_dir, mongodb_uri=None), generate(), index=False)
    return data_dir


@pytest.fixture(scope="session")
def real_sources_dir(tmp_path_factory) -> Path:
    """The real third-party data as `context-engine ingest` stores it, without the semantic index: the GitHub
    dump as tenant "hf" (public) and the three Slack exports as tenant "oss", each when $CONTEXT_ENGINE_EVAL_DATA
    holds it (a test that needs one is marked `needs_github_dump` / `needs_slack_exports`). Ingested once per
    session (minutes), shared by every test that only reads it."""
    data_dir = tmp_path_factory.mktemp("real-sources")
    if GITHUB_DUMP.exists():
        out = run_cli(
            "ingest",
            "github",
            str(GITHUB_DUMP),
            "--public",
            "--no-index",
            "--data-dir",
            str(data_dir),
            "--tenant",
            "hf",
        )
        assert out.returncode == 0, out.stderr
    if (EVAL_DATA / "slack").is_dir():
        out = run_cli(
            "ingest",
            "slack",
            *map(str, sorted((EVAL_DATA / "slack").glob("*.zip"))),
            "--no-index",
            "--data-dir",
            str(data_dir),
            "--tenant",
            "oss",
        )
        assert out.returncode == 0, out.stderr
    return data_dir


def tenant_settings(data_dir: Path, tenant: str) -> Settings:
    """Offline settings of one tenant of `data_dir`, asked by no one in particular."""
    return Settings(data_dir=data_dir, mongodb_uri=None, tenant=tenant, asker=None, use_llm=False)


def run_gold(settings: Settings, item: dict, max_rows: int) -> list[dict]:
    """The rows of a question's hand-written gold pipeline (`item["gold"]`, Extended JSON), readable by everyone."""
    from context_engine.assistant.structured_query import jsonable
    from context_engine.query.execute import run_pipeline
    from context_engine.query.plan import from_extended_json
    from context_engine.resources import catalog_for, store_for

    catalog = catalog_for(settings)
    return jsonable(
        run_pipeline(
            store_for(settings),
            item["collection"],
            from_extended_json(item["gold"]),
            tenant=catalog.tenant,
            principals=["*"],
            schema=catalog.schemas[item["collection"]],
            max_rows=max_rows,
            max_time_ms=60_000,
        )
    )


def names_of(person: dict) -> set[str]:
    """Every name a person record answers to (login, name, Slack handle, aliases), lower case, spaces collapsed."""
    values = [person.get("login"), person.get("name"), person.get("slack_handle"), *person.get("aliases", [])]
    return {" ".join(v.lower().split()) for v in values if isinstance(v, str)}


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    # The timeout only catches a hang: ingesting the three real Slack exports takes ~40 s on a quiet
    # machine and passed 120 s on a loaded one, which is no failure of the code under test.
    full_env = {**os.environ, "OPENAI_BASE_URL": "", "OPENAI_API_KEY": "", **(env or {})}
    full_env.pop("MONGODB_URI", None)
    return subprocess.run(
        [sys.executable, "-m", "context_engine.cli", *args], capture_output=True, text=True, env=full_env, timeout=600
    )
