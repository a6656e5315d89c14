"""What goes wrong reading a source: the whole source (`SourceError`, fatal, one line for the user)
or one file or record of it (`ReadProblems`, counted and skipped; the rest goes in)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ReadProblems", "SourceError"]

_NAMED_REFUSALS = 10  # entries named in the one refusal line; the rest are counted


class SourceError(RuntimeError):
    """A source cannot be read at all (missing file, not a dump); one line for the user."""


@dataclass
class ReadProblems:
    count: int = 0
    details: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # "name (kind)" of entries not read (input_files)

    def add(self, where: str, why: str) -> None:
        self.count += 1
        if len(self.details) < 5:
            self.details.append(f"{where}: {why}")

    def refuse(self, where: str, kind: str) -> None:
        """An entry of the input that is not a regular file inside it (a symlink, a FIFO ...)."""
        self.count += 1
        self.refused.append(f"{where} ({kind})")

    @property
    def examples(self) -> list[str]:
        """What to show the user: every refused entry in one line, then the first few problems."""
        if not self.refused:
            return list(self.details)
        named = ", ".join(self.refused[:_NAMED_REFUSALS])
        more = f" and {len(self.refused) - _NAMED_REFUSALS} more" if len(self.refused) > _NAMED_REFUSALS else ""
        entries = "entry that is not a regular file" if len(self.refused) == 1 else "entries that are not regular files"
        return [f"{len(self.refused)} {entries} inside the input: {named}{more}", *self.details]
