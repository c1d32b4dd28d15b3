"""The `sweeplab` command.

Exit status: 0 on success, 2 on a bad spec or bad arguments (one line, nothing started, nothing
written), 1 when the sweep itself failed.

The commands that read (`ls`, `best`, `report`, `compare`, `ui`, `status`) write nothing where
what they read is not there: a tracking store that does not exist (which MLflow would create on
opening it), a sweep that is not in it, a spec file or a Ray cluster: exit 2, one line.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from sweeplab.cli._output import EXIT_USAGE
from sweeplab.cli._parser import build_parser
from sweeplab.cli._reads import cmd_best, cmd_compare, cmd_ls, cmd_report, cmd_status, cmd_ui
from sweeplab.cli._sweep import cmd_preview, cmd_sweep
from sweeplab.errors import SweeplabError

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the CLI and returns its exit status."""
    args = build_parser().parse_args(argv)
    # The commands download small JSON artifacts (a sweep's space, its best config); MLflow's
    # progress bar for each is noise on stderr. Set the variable to "true" to see it.
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    try:
        handler = {
            "sweep": cmd_sweep,
            "preview": cmd_preview,
            "ls": cmd_ls,
            "best": cmd_best,
            "ui": cmd_ui,
            "report": cmd_report,
            "compare": cmd_compare,
            "status": cmd_status,
        }[args.command]
        return handler(args)
    except SweeplabError as exc:
        print(f"sweeplab: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("sweeplab: interrupted; continue with --resume", file=sys.stderr)
        return 130
