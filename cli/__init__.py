"""rooflake.cli: the ``rl`` command, a thin typer layer over the library.

Each command parses its arguments, calls one view of :mod:`rooflake.views` (or a pipeline function), renders with
:mod:`rooflake.render` and prints or saves the result. Every :class:`~rooflake.schema.RooflakeError` is turned into
one ``Error: <message>`` line on stderr and exit code 1 in one place (:func:`rooflake.cli.common.guard`); bad
arguments exit 2 (typer/click usage errors). Commands live by group: ``store_cmds`` (ingest, runs, sql),
``roofline_cmds`` (roofline, --time), ``layer_cmds`` (layers), ``compare_cmds`` (compare), ``trajectory_cmds``
(trajectory), ``report_cmds`` (report, check), ``profile_cmds`` (profile). Imports of the library stay inside the
commands: ``rl --help`` starts fast.
"""

from __future__ import annotations

# importing a command module registers its commands on app, in this order (that of rl --help)
# isort: off
from rooflake.cli import store_cmds as store_cmds
from rooflake.cli import profile_cmds as profile_cmds
from rooflake.cli import estimate_cmds as estimate_cmds
from rooflake.cli import ceilings_cmds as ceilings_cmds
from rooflake.cli import measure_cmds as measure_cmds  # rl ceilings measure
from rooflake.cli import roofline_cmds as roofline_cmds
from rooflake.cli import layer_cmds as layer_cmds
from rooflake.cli import trajectory_cmds as trajectory_cmds
from rooflake.cli import compare_cmds as compare_cmds
from rooflake.cli import whatif_cmds as whatif_cmds
from rooflake.cli import report_cmds as report_cmds
from rooflake.cli import doctor_cmds as doctor_cmds
from rooflake.cli import compact_cmds as compact_cmds

# isort: on
from rooflake.cli.common import app

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point (``rl``)."""
    app(prog_name="rl")


if __name__ == "__main__":  # pragma: no cover
    main()
