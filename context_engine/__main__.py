"""`python -m context_engine`: the same command line as `context-engine`."""

import sys

from context_engine.cli import main

sys.exit(main())
