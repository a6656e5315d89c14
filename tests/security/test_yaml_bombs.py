"""YAML is weighed before it is built, as JSON is: a docs page's front matter and a people.yaml of
overrides. Found by the red team: a 502-byte Markdown page whose front matter nests aliases
(`l1: &l1 [*l0, *l0, ...]`, nine deep: a billion strings) made `ingest docs` take 3 GB and die with a
MemoryError traceback (`str(title)` expanded it); without a memory limit it takes the host's memory.
A front matter nested 50,000 deep was a RecursionError traceback."""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest
import yaml


def _laughs(depth: int = 9, key: str = "title") -> str:
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, depth)]
    return "\n".join(lines + [f"{key}: *l{depth - 1}"]) + "\n"


def _limited_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 31, 1 << 31))  # 2 GB: the bomb needs far more


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "context_engine.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limited_memory,
    )


@pytest.mark.parametrize(
    "front_matter",
    [
        _laughs(),
        _laughs(key="doc_id"),
        _laughs(key="tags"),
        "title: " + "[" * 50_000 + "]" * 50_000 + "\n",
        "title: &a [*a]\n",
    ],
)
def test_a_front_matter_bomb_is_one_skipped_page(tmp_path, front_matter):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "bomb.md").write_text(f"---\n{front_matter}---\n# Bomb\n")
    (docs / "fine.md").write_text("---\ntitle: Fine\nowner: &o ana\nreviewer: *o\n---\n# Fine\nbody\n")
    out = _cli("ingest", "docs", str(docs), "--data-dir", str(tmp_path / "data"), "--no-index")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "documents 1+0~0" in out.stdout and "1 skipped" in out.stdout, out.stdout
    assert "skipped bomb.md: bad YAML front matter" in out.stdout + out.stderr


def test_a_people_yaml_bomb_is_one_line(tmp_path):
    people = tmp_path / "people.yaml"
    bomb = "\n".join("  " + line for line in _laughs(key="aliases").splitlines())
    people.write_text("- name: Ana\n" + bomb + "\n")
    out = _cli("ingest", "people", str(people), "--data-dir", str(tmp_path / "data"), "--no-index")
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode == 2 and len(lines) == 1 and "expands to more than" in lines[0], out.stderr[-2000:]


def test_ordinary_aliases_and_merge_keys_still_load():
    from context_engine.sources.input_caps import parse_yaml

    assert parse_yaml("a: &x {b: 1}\nc: *x\n<<: {team: core}\n") == {"a": {"b": 1}, "c": {"b": 1}, "team": "core"}
    with pytest.raises(yaml.YAMLError, match="expands to more than"):
        parse_yaml(_laughs(depth=6))
