"""What the connector tests share: scratch git repositories with fixed identities and dates."""

import subprocess
from pathlib import Path


class Repo:
    """A scratch repository whose every commit has a chosen author and date."""

    def __init__(self, root: Path, home: Path):
        self.root = root
        self.env = {
            "HOME": str(home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": str(home / "gitconfig"),
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LC_ALL": "C",
        }
        root.mkdir()
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, who: str = "Test <test@example.com>", date: str = "2026-01-01T00:00:00+00:00") -> str:
        name, email = who[:-1].split(" <")
        env = {
            **self.env,
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email,
            "GIT_COMMITTER_DATE": date,
        }
        done = subprocess.run(["git", *args], cwd=self.root, env=env, capture_output=True, check=True)
        return done.stdout.decode()

    def write(self, name: str, content: str | bytes) -> None:
        path = self.root / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        self.git("add", name)
