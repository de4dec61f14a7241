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
    WideOpt,
    app,
    ceilings_app,
    emit,
    emit_view,
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
    wide: WideOpt = False,
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
    if long or not on_terminal(fmt, out):
        emit(_without_empty_columns(table) if on_terminal(fmt, out) else table, fmt, out)
        return
    table = _without_empty_columns(table)
    emit_view(table, _side_by_side_columns(table.column_names), fmt, out, wide)


#: the store's unit texts (ceilings.unit) as the terminal tables write them (rooflake.cli.output.human)
_UNIT_TEXT = {"byte/s": "B/s", "FLOP/s": "FLOP/s", "op/s": "op/s"}


def _side_by_side_columns(names: list[str]) -> list[Any]:
    """The terminal columns of ``rl ceilings show``: the ceiling, each source's value (the side-by-side columns of
    the ceiling source registry) in the human unit of its row (``448 GB/s``, ``20.3 TFLOP/s``, the ``unit`` column
    then in the cells), and each source's ratio to the datasheet; clocks, the report's own ceiling names and the
    other ratios are in ``--wide`` and ``-f csv``."""
    from rooflake.cli.output import Column, human
    from rooflake.schema import ceiling_sources

    values = [s.side_by_side for s in ceiling_sources.rows() if s.side_by_side]

    def value(name: str) -> Any:
        return lambda r: human(r[name], _UNIT_TEXT.get(r.get("unit") or "", r.get("unit")))

    cols = [Column("ceiling", "ceiling")]
    cols += [Column(n, value(n), right=True, shrink=False) for n in dict.fromkeys(values) if n in names]
    ratios = [n for n in names if n.endswith("_over_datasheet") and n.split("_over_")[0] in values]
    cols += [Column(n.replace("_over_", " / "), n, "x") for n in ratios]
    return cols


def _without_empty_columns(table: Any) -> Any:
    """On a terminal, the columns some row fills (sources this machine has, ratios that exist)."""
    return table.select([n for n in table.column_names if table.column(n).null_count < table.num_rows])


def _headline(m: dict[str, Any]) -> str:
    who = f"run {m['run_id']}" if m["run_id"] else "GPU"
    sheet = f"datasheet: {m['datasheet_gpu']}" if m["datasheet_gpu"] else "no datasheet entry"
    cc = f" (CC {m['compute_capability']})" if m["compute_capability"] else ""
    # (the GPU name is the report's text: one line, control characters escaped)
    return one_line(f"{who}  {m['gpu_name'] or 'GPU unknown'}{cc}  {sheet}")
