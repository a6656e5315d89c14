"""The README is executable truth: every ```bash and ```python block runs as written, in order, from a
copy of the repository whose `./.context-engine` holds the sample corpus (what `make demo` leaves).

The first block is the two set-up commands (`make demo`, `make test`): CI runs them itself. Blocks
fenced as ```text or ```json are output and reference, not examples.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```(bash|python)\n(.*?)^```", re.M | re.S)
SKIPPED_COPY = shutil.ignore_patterns(
    ".git", ".venv", ".context-engine", "__pycache__", "*.egg-info", ".pytest_cache", ".langgraph_api"
)

pytestmark = pytest.mark.slow


def readme_blocks() -> list[tuple[str, str]]:
    return BLOCK.findall((ROOT / "README.md").read_text(encoding="utf-8"))


def test_the_first_block_is_the_two_setup_commands():
    kind, code = readme_blocks()[0]
    assert kind == "bash" and [line.split("#")[0].strip() for line in code.strip().splitlines()] == [
        "make demo",
        "make test",
    ]


@pytest.fixture(scope="module")
def checkout(sample_dir, tmp_path_factory) -> Path:
    """A copy of the working tree, as after `make demo`: the venv, and the demo data in ./.context-engine."""
    root = tmp_path_factory.mktemp("readme") / "context-engine"
    shutil.copytree(ROOT, root, ignore=SKIPPED_COPY)
    shutil.copytree(sample_dir, root / ".context-engine")
    (root / ".venv").symlink_to(Path(sys.prefix))
    # `ingest git .` reads the repository's history: a copy gets a small history of its own.
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Readme Test",
        "GIT_AUTHOR_EMAIL": "readme@example.com",
        "GIT_COMMITTER_NAME": "Readme Test",
        "GIT_COMMITTER_EMAIL": "readme@example.com",
        "GIT_AUTHOR_DATE": "2026-11-20T10:00:00Z",
        "GIT_COMMITTER_DATE": "2026-11-20T10:00:00Z",
    }
    for command in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "the README's checkout"]):
        subprocess.run(command, cwd=root, env=env, check=True, capture_output=True)
    return root


@pytest.mark.parametrize("index", range(1, len(readme_blocks())))
def test_readme_block_runs_as_written(checkout, index):
    kind, code = readme_blocks()[index]
    env = {
        key: value
        for key, value in os.environ.items()
        if key
        not in (
            "OPENAI_BASE_URL",
            "OPENAI_API_KEY",
            "MONGODB_URI",
            "CONTEXT_ENGINE_HOME",
            "CONTEXT_ENGINE_USER",
            "CONTEXT_ENGINE_TENANT",
            "VIRTUAL_ENV",
        )
    }
    command = ["bash", "-e", "-c", code] if kind == "bash" else [sys.executable, "-c", code]
    done = subprocess.run(
        command, cwd=checkout, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, (
        f"README block {index} ({kind}) failed:\n{code}\n--- stdout\n{done.stdout[-3000:]}"
        f"\n--- stderr\n{done.stderr[-3000:]}"
    )
    assert "Traceback" not in done.stderr


def test_every_file_the_readme_names_exists():
    """The README's links and the files its recipes name (`sources/connectors.py`, `tests/retrievers/test_dense.py`)
    are where it says: relative to the repository, or to the package for a module path."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#:]+)\)", text)
    named = [path for path in re.findall(r"`([\w./-]+\.(?:py|md|json|jsonl|yaml|csv|toml))`", text) if "/" in path]
    assert links and named
    missing = [
        path for path in links + named if not (ROOT / path).exists() and not (ROOT / "context_engine" / path).exists()
    ]
    assert missing == []
