"""``rl ceilings [RUN | --gpu NAME]``: every ceiling known for a machine, side by side by source.

``ceilings`` is a command group (``rl ceilings measure`` is :mod:`rooflake.cli.measure_cmds`); a first argument that names no
subcommand goes to ``show``, so ``rl ceilings``, ``rl ceilings RUN`` and ``rl ceilings --gpu NAME`` all show.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from rooflake.cli.common import (
    Fmt,
    FmtOpt,
    OutOpt,
    RunArg,
    StoreOpt,
    app,
    emit,
    guard,
    need_out,
    on_terminal,
    one_line,
    reading_store,
)
from rooflake.schema import ceiling_sources

if TYPE_CHECKING:  # what a type checker sees; the members are the registry's choices, and `all`

    class CeilingSource(str, Enum):
        all = "all"

else:
    CeilingSource = Enum(
        "CeilingSource", [(c, c) for c in (*ceiling_sources.choices(), "all")], type=str, module=__name__
    )
    CeilingSource.__doc__ = (
        "``--ceilings`` of the roofline views (:data:`rooflake.views.ceilings.CHOICES` less ``default``): the "
        "choices of the ceiling sources registry (rooflake.schema.ceiling_sources), and ``all``."
    )


#: The ``--ceilings`` option of ``rl roofline`` (None: the default source).
CeilingsOpt = Annotated[
    CeilingSource | None,
    typer.Option(
        "--ceilings",
        help="Roofs from the report's peaks (profiled clock), the datasheet (boost clock), ERT, measured "
        "ceilings, or all (the others dashed). Default: the report's, else measured, else datasheet.",
    ),
]


#: ``--ceilings`` of the commands that judge points against one source (rl trajectory, rl whatif): the option and
#: values of rl roofline's; ``all`` (other sources drawn dashed beside one run's roofs) has no meaning there: exit 2.
OneSourceCeilingsOpt = Annotated[
    CeilingSource | None,
    typer.Option(
        "--ceilings",
        help="Roofs from the report's peaks (profiled clock), the datasheet (boost clock), ERT or measured "
        "ceilings, as rl roofline takes them ('all' draws one run's other roofs dashed: not here). Default: the "
        "report's, else measured, else datasheet.",
    ),
]


def ceiling_choice(value: CeilingSource | None) -> str:
    """The library's name of a ``--ceilings`` value (None: ``default``)."""
    return "default" if value is None else value.value


def roofs_text(rows: Any) -> str:
    """``, roofs: <source> (<machine>)[; dashed: <sources>]`` for a view's ceilings rows
    (:func:`rooflake.views.ceilings.run_roofs`: an Arrow table, or DuckDB rows where ``roofline(..., as_rows=True)``
    gave them), or ``, no roofs`` when there are none."""
    from rooflake.views.runs import row_dicts

    dicts = row_dicts(rows)
    own = {r["source"]: r["machine_key"] for r in dicts if not r.get("overlay")}
    more = list(dict.fromkeys(r["source"] for r in dicts if r.get("overlay")))
    if not own and not more:
        return ", no roofs"
    named = ", ".join(f"{s} ({m})" if s != "ncu-report" else s for s, m in own.items())
    return f", roofs: {named}" + (f"; dashed: {', '.join(more)}" if more else "")


def roofs_note(rows: Any, asked: Any) -> str:
    """:func:`roofs_text` where the roofs were asked for (``asked``: a ``--ceilings`` value) or are not the run's
    own report peaks (a run without them falls back to the datasheet's or measured roofs: say so); else ``""``."""
    own = {r["source"] for r in rows.to_pylist() if not r.get("overlay")} if rows is not None else set()
    return roofs_text(rows) if asked or own - {"ncu-report"} else ""


class DefaultToShow(TyperGroup):
    """A group whose arguments go to its ``show`` subcommand unless the first one names a subcommand or asks for
    help (``rl ceilings abc1`` = ``rl ceilings show abc1``)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # ctx: the (typer-vendored) click Context
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h")):
            args = ["show", *args]
        return super().parse_args(ctx, args)


ceilings_app = typer.Typer(
    cls=DefaultToShow,
    help="Every ceiling known for a machine: report peaks, datasheet, ERT and measured, side by side. `rl ceilings "
    "RUN` and `rl ceilings --gpu NAME` are `rl ceilings show …` (see `rl ceilings show --help`).",
    no_args_is_help=False,
)
app.add_typer(ceilings_app, name="ceilings")


@ceilings_app.command("show")
@guard
def show(
    run_id: RunArg = None,
    gpu: Annotated[
        str | None,
        typer.Option(
            "--gpu", help="A GPU instead of a run: device name, catalog model (`H100 PCIe`) or label."
        ),
    ] = None,
    store: StoreOpt = None,
    fmt: FmtOpt = Fmt.table,
    out: OutOpt = None,
    long: Annotated[
        bool, typer.Option("--long", help="One row per source x ceiling, with formulas and runs.")
    ] = False,
) -> None:
    """Show a machine's ceilings by source: the run's report peaks (at the clock ncu profiled at), the datasheet's
    dense peaks (at the boost clock), ERT results and measured ceilings of runs labelled for the machine
    (--label machine=NAME), with the ratios between them and what the clocks predict."""
    from rooflake.store import Store
    from rooflake.views.ceilings import machine_ceilings

    need_out(fmt, out)
    # (a run's ceilings need its store; a GPU's datasheet ones do not: the store only adds its runs' peaks)
    result = machine_ceilings(Store(store) if gpu is not None else reading_store(store), run_id, gpu)
    if on_terminal(fmt, out):
        typer.echo(_headline(result.machine))
    table = result.rows if long else result.side_by_side
    emit(_without_empty_columns(table) if on_terminal(fmt, out) else table, fmt, out)


def _without_empty_columns(table: Any) -> Any:
    """On a terminal, the columns some row fills (sources this machine has, ratios that exist)."""
    return table.select([n for n in table.column_names if table.column(n).null_count < table.num_rows])


def _headline(m: dict[str, Any]) -> str:
    who = f"run {m['run_id']}" if m["run_id"] else "GPU"
    sheet = f"datasheet: {m['datasheet_gpu']}" if m["datasheet_gpu"] else "no datasheet entry"
    cc = f" (CC {m['compute_capability']})" if m["compute_capability"] else ""
    # (the GPU name is the report's text: one line, control characters escaped)
    return one_line(f"{who}  {m['gpu_name'] or 'GPU unknown'}{cc}  {sheet}")
