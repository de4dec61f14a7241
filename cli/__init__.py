"""rooflake.cli: the ``rl`` command, a thin typer layer over the library.

Each command parses its arguments, makes one library call and prints or saves the result. Every
:class:`~rooflake.schema.RooflakeError` is turned into one ``Error: <message>`` line on stderr and exit code 1 in
one place (:func:`rooflake.cli.common._guard`); bad arguments exit 2 (typer/click usage errors). Commands live in
``store_cmds`` (ingest, runs, sql) and ``view_cmds`` (layers, check, report, trajectory, compare, roofline).
"""

from __future__ import annotations

from rooflake.cli import profile_cmds, store_cmds, view_cmds  # noqa: F401  (registers the commands on app)
from rooflake.cli.common import app

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point (``rl``)."""
    app(prog_name="rl")


if __name__ == "__main__":  # pragma: no cover
    main()
