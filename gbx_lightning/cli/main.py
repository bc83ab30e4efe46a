"""``main``: the console entry point. Runs the CLI and turns how it ended into one line and an exit status."""

from __future__ import annotations

import sys
from pathlib import Path

from lightning.pytorch.utilities.rank_zero import rank_zero_only

from gbx_lightning.cli.app import GbxCLI
from gbx_lightning.cli.errors import error_line
from gbx_lightning.cli.quiet import quiet_startup
from gbx_lightning.cli.runs import FreshRun
from gbx_lightning.safety import NonFiniteError, RunStopped, resume_command

__all__ = ["main"]


def main(args: list[str] | None = None) -> int:
    """Console entry point; returns the exit status: 0 done or stopped on request (SIGTERM, Ctrl-C), 1 a run that
    went non-finite, 2 a refusal (one line, no traceback: ``cli.errors``)."""
    fresh_run = FreshRun()
    try:
        quiet_startup()
        GbxCLI(args=args, fresh_run=fresh_run)
    except RunStopped as stop:  # SIGTERM / Ctrl-C, between two updates (gbx_lightning.safety)
        if stop.opt_steps == 0:   # stopped before training anything: as if it had not started
            fresh_run.forget()
        _report_stop(stop, sys.argv[1:] if args is None else args)
        return 0
    except NonFiniteError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # noqa: BLE001 - a refusal becomes one line; anything else goes on up
        line = error_line(err)
        if line is None:
            raise
        fresh_run.forget()
        print(line, file=sys.stderr)
        return 2
    return 0


def _report_stop(stop: RunStopped, args: list[str]) -> None:
    if rank_zero_only.rank != 0:   # DDP: rank 0 says it
        return
    if stop.checkpoint is None:
        print(f"{stop}; no checkpoint to resume from: run the same command to start again", file=sys.stderr)
        return
    version = Path(stop.checkpoint).parent.parent.name.removeprefix("version_")
    longer = " with a larger --trainer.max_time" if stop.signal_name == "max_time" else ""
    print(f"{stop}; {'saved' if stop.saved else 'it is in'} {stop.checkpoint}. To resume{longer}: "
          f"{resume_command(args, version)}", file=sys.stderr, flush=True)
