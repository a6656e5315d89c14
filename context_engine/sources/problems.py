"""What goes wrong reading a source: the whole source (`SourceError`, fatal, one line for the user)
or one file or record of it (`ReadProblems`, counted and skipped; the rest goes in)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["SourceError", "ReadProblems"]


class SourceError(RuntimeError):
    """A source cannot be read at all (missing file, not a dump); one line for the user."""


@dataclass
class ReadProblems:
    count: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, where: str, why: str) -> None:
        self.count += 1
        if len(self.examples) < 5:
            self.examples.append(f"{where}: {why}")
