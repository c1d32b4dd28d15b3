"""`python -m sweeplab.cli`: the `sweeplab` command, for an environment without its script."""

import sys

from sweeplab.cli import main

sys.exit(main())
