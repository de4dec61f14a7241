"""rooflake.cli: the ``rl`` command, a thin typer layer over the library.

Each command parses its arguments, calls one view of :mod:`rooflake.views` (or a pipeline function), renders with
:mod:`rooflake.render` and prints or saves the result. Every :class:`~rooflake.schema.RooflakeError` is turned into
one ``Error: <message>`` line on stderr and exit code 1 in one place (:func:`rooflake.cli.common.guard`); bad
arguments exit 2 (typer/click usage errors). Commands live by group: ``store_cmds`` (ingest, runs, sql),
``roofline_cmds`` (roofline, --time), ``layer_cmds`` (layers), ``compare_cmds`` (compare), ``trajectory_cmds``
(trajectory), ``report_cmds`` (report, check), ``profile_cmds`` (profile). Imports of the library stay inside the
commands: ``rl --help`` starts fast.

Importing a command module registers its commands on the app. :func:`main` imports only the module of the command
it is given (:data:`COMMANDS`; typer then builds that command's options only): ``rl runs`` does not import and
build the fifteen others (issue 14). ``rl --help``, an unknown command, and the ``app`` attribute of this package
(``from rooflake.cli import app``, what tests invoke) have every command, in :data:`MODULES` order.
"""

from __future__ import annotations

import importlib
import signal
import sys
from typing import Any

__all__ = ["COMMANDS", "MODULES", "QUERYING", "app", "load", "main"]

#: the command modules, in the order of ``rl --help``
MODULES = (
    "store_cmds",
    "profile_cmds",
    "estimate_cmds",
    "ceilings_cmds",
    "measure_cmds",  # rl ceilings measure
    "roofline_cmds",
    "layer_cmds",
    "trajectory_cmds",
    "compare_cmds",
    "whatif_cmds",
    "report_cmds",
    "doctor_cmds",
    "compact_cmds",
)

#: each command (or command group) of ``rl`` -> the modules that register it and its subcommands
COMMANDS: dict[str, tuple[str, ...]] = {
    "ingest": ("store_cmds",),
    "runs": ("store_cmds",),
    "sql": ("store_cmds",),
    "profile": ("profile_cmds",),
    "estimate": ("estimate_cmds",),
    "roofline": ("roofline_cmds",),
    "layers": ("layer_cmds",),
    "trajectory": ("trajectory_cmds",),
    "compare": ("compare_cmds",),
    "whatif": ("whatif_cmds",),
    "report": ("report_cmds",),
    "check": ("report_cmds",),
    "doctor": ("doctor_cmds",),
    "compact": ("compact_cmds",),
    "ceilings": ("ceilings_cmds", "measure_cmds"),
}

#: the commands that open the store's DuckDB database (:func:`rooflake.store.database.build`): :func:`main` starts
#: DuckDB on a second thread while typer parses their arguments (:mod:`rooflake.store.early`)
QUERYING = frozenset(
    ["runs", "sql", "roofline", "layers", "trajectory", "compare", "whatif", "report", "check", "ceilings"]
)


def load(modules: tuple[str, ...] = MODULES) -> Any:  # -> typer.Typer
    """Import command ``modules`` of this package (registering their commands); the app (every command by
    default)."""
    for name in modules:
        importlib.import_module(f"{__name__}.{name}")
    from rooflake.cli.common import app

    return app


def __getattr__(name: str) -> Any:
    if name == "app":
        return load()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _terminated(signum: int, frame: Any) -> None:
    """SIGTERM's handler: exit (status 143) from wherever the main thread is."""
    sys.exit(128 + signum)


def main() -> None:
    """Console-script entry point (``rl``): the app with the commands ``sys.argv[1]`` names (every one for
    anything else: help, ``--version``, a mistyped command); for a command of :data:`QUERYING`, DuckDB starts
    meanwhile."""
    if len(sys.argv) > 1 and sys.argv[1] in QUERYING:
        from rooflake.store import early

        early.start()
    # SIGTERM (systemd, cron and CI timeouts) ends rl as Ctrl-C does: unwinding, so that worker processes are
    # terminated and temporary folders removed, exit status 128 + 15
    signal.signal(signal.SIGTERM, _terminated)
    load(COMMANDS.get(sys.argv[1], MODULES) if len(sys.argv) > 1 else MODULES)(prog_name="rl")


if __name__ == "__main__":  # pragma: no cover
    main()
