"""`python -m context_engine`: the same command line as `context-engine`."""

from context_engine.cli import run

run()
