"""``rl ceilings [RUN | --gpu NAME]``: every ceiling known for a machine, side by side by source.

``ceilings`` is a command group (``rl ceilings measure`` is :mod:`rooflake.cli.measure_cmds`); a first argument that names no
subcommand goes to ``show`` (:class:`rooflake.cli.common.DefaultToShow`), so ``rl ceilings``, ``rl ceilings RUN`` and
``rl ceilings --gpu NAME`` all show. The group and the ``--ceilings`` options live in :mod:`rooflake.cli.common`.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from rooflake.cli.common import (
    Fmt,
    FmtOpt,
    OutOpt,
    RunArg,
    StoreOpt,
    app,
    ceilings_app,
    emit,
    guard,
    need_out,
    on_terminal,
    one_line,
    reading_store,
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
