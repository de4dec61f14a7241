"""``rl roofline``: the hierarchical roofline of one run (per kernel or NVTX layer), or its time-based roofline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from rooflake.cli.common import (
    By,
    CeilingsOpt,
    CeilingSource,
    Level,
    Precision,
    RunArg,
    StoreOpt,
    app,
    ceiling_choice,
    chart_out,
    given,
    guard,
    reading_store,
)
from rooflake.render.captions import roofline_title, roofs_text, titled


def _draw_time(
    store: str | None,
    run_id: str | None,
    out: Path,
    by: By,
    depth: int,
    level: Level,
    t_o: float | None,
    with_run: str | None = None,
    ceilings: CeilingSource | None = None,
) -> str:
    from rooflake.render import engine

    # vl-convert's engine warms up while the store is queried (DuckDB releases the GIL; the warm-up holds it much
    # of the time): 2.17 vs 2.26 s for rl roofline --time
    engine.start_for(out)
    import polars as pl

    from rooflake.render import save_chart
    from rooflake.render.formats import duration
    from rooflake.render.sections import time_chart
    from rooflake.views.time_roofline import estimate_time_roofline, time_roofline

    if with_run is not None:  # layers: time measured by nsys, work modelled by rl estimate
        v = estimate_time_roofline(
            reading_store(store), run_id, with_run, depth=depth, level=level.value, launch_overhead_ns=t_o,
            ceilings=ceiling_choice(ceilings),
        )  # fmt: skip
    else:
        v = time_roofline(
            reading_store(store), run_id, grain=by.value, depth=depth, level=level.value, launch_overhead_ns=t_o,
            ceilings=ceiling_choice(ceilings),
        )  # fmt: skip
    save_chart(time_chart(v), out)
    points = pl.from_arrow(v.points)
    assert isinstance(points, pl.DataFrame)
    drawn = points.filter(pl.col("t_min_ns").is_not_null())
    bounds = ", ".join(f"{b} {n}" for b, n in drawn.get_column("bound").value_counts(sort=True).iter_rows())
    # (a missing roof or FLOP counter: the largest known term is the bound)
    if "unknown_terms" in drawn.columns:
        n = drawn.filter(pl.col("unknown_terms").list.contains("compute")).height
        bounds += f"; compute term unknown for {n}, bound among the known terms" if n else ""
    what = _what(by, depth)
    lo = v.launch_overhead
    return (
        f"wrote {out} (run {v.run_id}, {drawn.height} {what}, t_o = {duration(lo.value_ns)} ({lo.source}), "
        f"bounds: {bounds}{roofs_text(v.ceilings) if ceilings else ''})"
    ) + (f"\n{v.provenance}" if v.provenance else "")


ByOpt = Annotated[
    By,
    typer.Option(
        "--by",
        help="One point per kernel (ncu counters), per NVTX layer, per recorded op of a trace (work from its "
        "recorded shapes), or per LLM serving step (vLLM, SGLang: the work of its ops).",
    ),
]
TOP_OPS = 15  # ops printed under an op roofline's chart (the most time first; every op is in the chart)


def _what(by: By, depth: int) -> str:
    """What one point of the chart is, in the command's closing line."""
    return {
        By.layer: f"layers at depth {depth}",
        By.op: "recorded ops (work modelled from their shapes)",
        By.step: "serving steps (work modelled from their ops' shapes)",
    }.get(by, "kernels")


def _modelled_columns(grain: str) -> list[Any]:
    """The terminal columns of the points whose work is modelled (:func:`rooflake.views.roofline.modelled_table`),
    in human units, headers saying what is modelled (the time is measured: the line under the table says how)."""
    from rooflake.cli.output import Column

    return [  # (the few that fit 80 columns beside a name; the chart's tooltips hold the rest)
        Column(grain, "layer", cut_start=grain == "layer"),
        Column("time", "time_ns_measured", "ns"),
        Column("FLOP model", "flops_modelled", "FLOP"),
        Column("AI model", "ai", "FLOP/B"),
        Column("FLOP/s", "flops_per_s", "FLOP/s"),
        Column("bound", "bound"),
    ]


def _draw(
    store: str | None,
    run_id: str | None,
    out: Path,
    level: Level,
    precision: Precision,
    by: By,
    depth: int,
    with_run: str | None,
    ceilings: CeilingSource | None = None,
) -> str:
    # no engine.start_for here: vl-convert 1.9's warm-up holds the GIL while this path's imports run (they took
    # 0.35 s instead of 0.07 s beside it), so the thread gained nothing and cost 0.03-0.04 s (measured)
    from rooflake.render.rows import save_roofline
    from rooflake.views.modelled import modelled_table
    from rooflake.views.roofline import roofline

    v = roofline(
        reading_store(store), run_id, level.value, grain=by.value, depth=depth, with_run=with_run,
        ceilings=ceiling_choice(ceilings), as_rows=True,
    )  # fmt: skip  # as_rows: a run on its own peaks is read without importing pyarrow; the chart is the same
    title = titled(roofline_title(v.run, v.run_id, v.grain, depth), v.provenance)
    noun = v.grain
    n_zero = save_roofline(
        v.points, v.ceilings, out, level=level.value, precision=precision.value, title=title, noun=noun
    )
    if v.provenance:  # time measured, work modelled: the numbers beside the chart
        from rooflake.cli.output import render_table, terminal_width

        table = modelled_table(v.points, top=TOP_OPS if v.grain == "op" else None)
        typer.echo(render_table(table.to_pylist(), _modelled_columns(v.grain), terminal_width()))
    return (
        f"wrote {out} (run {v.run_id}, {_what(by, depth)}, level {level.value}, precision {precision.value}, "
        f"{n_zero} {v.grain}s without FLOPs"
        f"{roofs_text(v.ceilings) if ceilings else ''})"
    ) + (f"\n{v.provenance}" if v.provenance else "")


@app.command()
@guard
def roofline(
    ctx: typer.Context,
    run_id: RunArg = None,
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="Output file: .html, .png or .svg (missing parent directories are created)."
        ),
    ] = Path("roofline.html"),
    level: Annotated[Level, typer.Option("--level", help="Memory level of the AI axis.")] = Level.dram,
    precision: Annotated[
        Precision, typer.Option("--precision", help="FLOP precision ('all': each kernel's dominant one).")
    ] = Precision.all,
    by: ByOpt = By.kernel,
    depth: Annotated[
        int, typer.Option("--depth", "-d", min=1, help="With --by layer: NVTX depth of a layer.")
    ] = 1,
    with_run: Annotated[
        str | None,
        typer.Option(
            "--with",
            help="With --by layer on an nsys run: the ncu run giving FLOPs/bytes, or an `rl estimate` run "
            "(time measured, FLOPs and compulsory bytes modelled; also a CPU run's NVTX ranges; with --time too).",
        ),
    ] = None,
    time: Annotated[
        bool,
        typer.Option(
            "--time", help="Time-based roofline (Wang et al.): time vs FLOPs/bytes, complexity plane."
        ),
    ] = False,
    launch_overhead: Annotated[
        float | None,
        typer.Option(
            "--launch-overhead",
            help="With --time: launch overhead t_o in ns (default: derived from an nsys run of this run or the "
            "same GPU, else 1000).",
        ),
    ] = None,
    ceilings: CeilingsOpt = None,
    store: StoreOpt = None,
) -> None:
    """Draw the hierarchical roofline of one run: one point per kernel (or layer), ceilings from the report (or
    --ceilings)."""
    chart_out(out)
    _refuse_what_does_not_apply(ctx, by, with_run, time, launch_overhead)
    if time:
        if level is Level.all:
            raise typer.BadParameter(
                "--time draws one level: use --level dram, l2 or l1", param_hint="--level"
            )
        typer.echo(_draw_time(store, run_id, out, by, depth, level, launch_overhead, with_run, ceilings))
        return
    typer.echo(_draw(store, run_id, out, level, precision, by, depth, with_run, ceilings))


def _refuse_what_does_not_apply(
    ctx: typer.Context, by: By, with_run: str | None, time: bool, launch_overhead: float | None
) -> None:
    """Raise ``typer.BadParameter`` (exit 2) for an option given where it does not apply (they were ignored without
    a word): --with or --depth without --by layer, --launch-overhead without --time, --precision with --time."""
    if with_run is not None and by is By.kernel:
        raise typer.BadParameter("--with needs --by layer", param_hint="--with")
    if with_run is not None and by in (By.op, By.step):
        raise typer.BadParameter(
            "--with needs --by layer (an op's or a step's work comes from its shapes)", param_hint="--with"
        )
    if by is not By.layer and given(ctx, "depth"):
        raise typer.BadParameter("--depth needs --by layer", param_hint="--depth")
    if launch_overhead is not None and not time:
        raise typer.BadParameter("--launch-overhead needs --time", param_hint="--launch-overhead")
    if time and given(ctx, "precision"):
        raise typer.BadParameter(
            "--time takes each kernel's pipes together (the largest F/P): --precision does not apply",
            param_hint="--precision",
        )
