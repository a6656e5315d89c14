"""The test suite's own layout: tests mirror the package, and every folder of them is a package, so pytest
imports each test module by its dotted path (tests.query.test_engine) and two test files of the same name
in different folders never collide."""

from tests.conftest import REPO_ROOT, TESTS_DIR


def _folders_with_python(root):
    return sorted({path.parent for path in root.rglob("*.py") if "__pycache__" not in path.parts})


def test_every_folder_of_tests_is_a_package():
    missing = [
        str(folder.relative_to(REPO_ROOT))
        for folder in _folders_with_python(TESTS_DIR)
        if not (folder / "__init__.py").is_file()
    ]
    assert missing == []


def test_every_test_folder_mirrors_a_package_folder():
    package = REPO_ROOT / "context_engine"
    # security/ holds the attack tests, which cross every layer (SECURITY.md)
    strays = [
        str(folder.relative_to(TESTS_DIR))
        for folder in _folders_with_python(TESTS_DIR)
        if folder != TESTS_DIR
        and folder.relative_to(TESTS_DIR).parts[0] != "security"
        and not (package / folder.relative_to(TESTS_DIR) / "__init__.py").is_file()
    ]
    assert strays == []
