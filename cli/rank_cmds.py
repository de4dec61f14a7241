"""``rl ranks``: the ranks of one distributed job side by side, per profiler step, with each step's straggler."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from rooflake.cli.common import (
    Fmt,
    FmtOpt,
    OutOpt,
    StoreOpt,
    WideOpt,
    app,
    emit_view,
    guard,
    need_out,
    on_terminal,
    reading_store,
)


def step_name(row: dict[str, Any]) -> str:
    """A row's step as ``#N`` (of ProfilerStep#N), ``outside`` for GPU work launched outside every step."""
    return "outside" if row["step"] is None else f"#{row['step_number']}"


def rank_mark(row: dict[str, Any]) -> str:
    """A row's rank, ``◀`` after it where the rank is the step's straggler (``-`` where no rank is said)."""
    rank = "-" if row["rank"] is None else str(row["rank"])
    return f"{rank} ◀" if row["straggler"] else rank


def glance(table: Any) -> list[Any]:
    """The terminal columns of a job's ranks: step, rank, span, compute, communication and idle time, idle share,
    the compute time's gap to the median rank; the straggler's rank marked ``◀`` (overlap and the rest: ``--wide``)."""
    from rooflake.cli.output import Column

    return [
        Column("step", step_name),
        Column("rank", rank_mark, right=True),
        Column("span", "span_ns", "ns"),
        Column("compute", "compute_time_ns", "ns"),
        Column("comm", "comm_time_ns", "ns"),
        Column("idle", "idle_time_ns", "ns"),
        Column("idle %", "idle_share", "%"),
        Column("vs median", "gap_to_median_ns", "ns"),
    ]


@app.command()
@guard
def ranks(
    job: Annotated[
        str, typer.Argument(help="The job: the folder its rank traces were in, or --label job=NAME.")
    ],
    fmt: FmtOpt = Fmt.table,
    out: OutOpt = None,
    wide: WideOpt = False,
    store: StoreOpt = None,
) -> None:
    """Per rank of a distributed job and per profiler step: compute, communication and idle GPU time, the straggler
    of each step and its gap to the median rank."""
    from rooflake.views.ranks import ranks as ranks_view

    need_out(fmt, out)
    v = ranks_view(reading_store(store), job)
    if on_terminal(fmt, out):
        typer.echo(
            f"job {v.job}: ranks {', '.join(map(str, v.ranks)) or 'none'} of world size {v.world_size}"
        )
    emit_view(v.table, glance(v.table), fmt, out, wide)
    if on_terminal(fmt, out):
        typer.echo(
            "◀ straggler: the rank with the most compute time in the step (the one the others wait for)"
        )
        if v.note:
            typer.echo(f"note: {v.note}")
