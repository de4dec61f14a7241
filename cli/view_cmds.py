"""``rl layers``, ``rl check``, ``rl report``, ``rl trajectory``, ``rl compare``, ``rl roofline``: views of runs."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from rooflake.cli.common import (
    By,
    Fmt,
    FmtOpt,
    Level,
    OutOpt,
    Precision,
    StoreOpt,
    _emit,
    _guard,
    _need_out,
    _parse_labels,
    _print_match,
    app,
)


@app.command()
@_guard
def layers(
    run_id: Annotated[
        str | None, typer.Argument(help="Run id or unique prefix (default: the latest run).")
    ] = None,
    depth: Annotated[
        int, typer.Option("--depth", "-d", min=1, help="NVTX stack depth of a layer (1 = outermost).")
    ] = 1,
    match: Annotated[
        str | None, typer.Option("--match", "-m", help="Keep layers matching this regex.")
    ] = None,
    device: Annotated[int | None, typer.Option("--device", help="Only this CUDA device.")] = None,
    with_run: Annotated[
        str | None,
        typer.Option(
            "--with", help="An ncu run of the same program: FLOPs/bytes from it, time from this nsys run."
        ),
    ] = None,
    fmt: FmtOpt = Fmt.table,
    out: OutOpt = None,
    store: StoreOpt = None,
) -> None:
    """GPU time, launches and (with ncu counters) FLOPs, bytes and AI per NVTX layer, with attribution coverage."""
    from rooflake import queries
    from rooflake.store import Store

    _need_out(fmt, out)
    res = queries.layers(Store(store), run_id, depth, match, device, with_run)
    table = res["table"]
    if (
        fmt is Fmt.table and out is None
    ):  # the terminal gets the columns a glance needs; csv/json/parquet get all
        table = table.select(
            [
                "device_id",
                "layer",
                "kernels",
                "launches",
                "memops",
                "gpu_time_ns",
                "share_of_gpu_time",
                "flops",
            ]
            + ["ai_l1", "ai_l2", "ai_dram", "flops_per_s"]
        )
    _emit(table, fmt, out)
    if fmt is Fmt.table and out is None:
        for row in res["coverage"].to_pylist():
            typer.echo(
                f"device {row['device_id']}: {row['attribution']:<14} {row['ops']:>7} ops "
                f"({row['share_of_ops']:.1%}), {row['gpu_time_ns'] / 1e6:.3f} ms GPU time ({row['share_of_gpu_time']:.1%})"
            )
        if res["match"] is not None:
            _print_match(res["match"])


@app.command()
@_guard
def check(
    run_id: Annotated[
        str | None, typer.Argument(help="Run id or unique prefix (default: every run).")
    ] = None,
    fmt: FmtOpt = Fmt.table,
    out: OutOpt = None,
    store: StoreOpt = None,
) -> None:
    """Physics checks: points above their roof, AI order violated, GEMMs without FLOPs, NaN durations, zero or
    missing peaks, instrumented durations, NVTX coverage under 90 %."""
    from rooflake import queries
    from rooflake.store import Store

    _need_out(fmt, out)
    st = Store(store)
    where, params = ("WHERE run_id = $run_id", {"run_id": st.resolve(run_id)}) if run_id else ("", {})
    table = queries.execute(
        st, f'SELECT * FROM physics_checks {where} ORDER BY run_id, kernel_id NULLS FIRST, "check"', params
    )
    _emit(table, fmt, out)
    if fmt is Fmt.table and out is None:
        typer.echo(f"{table.num_rows} finding(s)")


@app.command()
@_guard
def report(
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory (replaced atomically).")],
    since: Annotated[
        str | None,
        typer.Option("--since", help="Runs ingested within this long: 30m, 24h, 7d (default: all)."),
    ] = None,
    runs: Annotated[
        list[str] | None, typer.Option("--runs", help="These runs (repeatable; overrides --since).")
    ] = None,
    where: Annotated[
        list[str] | None,
        typer.Option("--where", "-w", help="KEY=VALUE label the runs must carry (repeatable)."),
    ] = None,
    store: StoreOpt = None,
) -> None:
    """Write a static HTML report (opens offline) with PNG/SVG of each chart: per run the roofline, top layers and
    kernels, zero-FLOP share, physics warnings and the comparison with the previous run of the same labels."""
    from rooflake.cli.report import build

    typer.echo(build(store, out, since=since, run_ids=runs, where=_parse_labels(where or [], "--where")))


@app.command()
@_guard
def trajectory(
    vary: Annotated[str, typer.Option("--vary", help="The run label that varies (e.g. batch).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output file: .html, .png or .svg.")] = Path(
        "trajectory.html"
    ),
    where: Annotated[
        list[str] | None,
        typer.Option("--where", "-w", help="KEY=VALUE label the runs must carry (repeatable)."),
    ] = None,
    layer: Annotated[
        str | None,
        typer.Option("--layer", help="Regex the layer (--by layer) or the kernel's NVTX path must match."),
    ] = None,
    level: Annotated[Level, typer.Option("--level", help="Memory level of the AI axis.")] = Level.dram,
    by: Annotated[By, typer.Option("--by", help="One trajectory per NVTX layer or per kernel.")] = By.layer,
    depth: Annotated[
        int, typer.Option("--depth", "-d", min=1, help="With --by layer: NVTX depth of a layer.")
    ] = 1,
    store: StoreOpt = None,
) -> None:
    """Roofline trajectories: each layer's or kernel's (AI, FLOP/s) across runs that differ in one label."""
    from rooflake.cli.trajectory import draw_trajectory

    if out.suffix.lower() not in (".html", ".png", ".svg"):
        raise typer.BadParameter(f"{out}: use a .html, .png or .svg file", param_hint="--out")
    where_labels = _parse_labels(where or [], "--where")
    typer.echo(draw_trajectory(store, vary, out, where_labels, layer, level.value, by.value, depth))


class CompareFmt(str, Enum):
    table = "table"
    markdown = "markdown"
    json = "json"


@app.command()
@_guard
def compare(
    base_run: Annotated[str, typer.Argument(help="The baseline run (id or unique prefix).")],
    new_run: Annotated[str, typer.Argument(help="The run to compare with it.")],
    depth: Annotated[int, typer.Option("--depth", "-d", min=1, help="NVTX depth of a layer.")] = 1,
    fmt: Annotated[CompareFmt, typer.Option("--format", "-f", help="Output format.")] = CompareFmt.table,
    fail_if_slower: Annotated[
        float | None,
        typer.Option(
            "--fail-if-slower",
            min=0,
            help="Exit 3 when total or any layer's GPU time grew by more than PCT %.",
        ),
    ] = None,
    store: StoreOpt = None,
) -> None:
    """Compare two runs per layer and per kernel: time, FLOP/s, AI, bound, share; new and removed kernels."""
    from rooflake import queries
    from rooflake.cli.output import render_markdown, render_text
    from rooflake.store import Store

    res = queries.compare(Store(store), base_run, new_run, depth)
    layers, kernels = res["layers"], res["kernels"]
    lrows, krows = layers.to_pylist(), kernels.to_pylist()

    def count(rows: list[dict], key: str, value: str) -> int:
        return sum(1 for r in rows if r[key] == value)

    change = res["time_change"]
    limit = None if fail_if_slower is None else fail_if_slower / 100
    slower = [
        r for r in lrows if r["time_change"] is not None and limit is not None and r["time_change"] > limit
    ]
    total_ms = f"{(res['base_time_ns'] or 0) / 1e6:.3f} ms -> {(res['new_time_ns'] or 0) / 1e6:.3f} ms" + (
        f" ({change:+.1%})" if change is not None else ""
    )
    verdict = (
        f"{res['new_run']} vs {res['base_run']}: total GPU time {total_ms}; layers at depth {depth}: "
        f"{sum(1 for r in lrows if (r['time_change'] or 0) > 0)} slower, "
        f"{sum(1 for r in lrows if (r['time_change'] or 0) < 0)} faster, {count(lrows, 'status', 'new')} new, "
        f"{count(lrows, 'status', 'removed')} removed; kernels: {count(krows, 'status', 'new')} new, "
        f"{count(krows, 'status', 'removed')} removed"
    )
    failed = limit is not None and ((change is not None and change > limit) or bool(slower))
    if failed:
        verdict += f"; FAIL: more than {fail_if_slower:g} % slower" + (
            f" ({', '.join(r['layer'] for r in slower[:5])})" if slower else " in total"
        )
    if fmt is CompareFmt.json:
        typer.echo(json.dumps({"verdict": verdict, "failed": failed, **{k: res[k] for k in ("base_run", "new_run",
                   "base_time_ns", "new_time_ns", "time_change")}, "layers": lrows, "kernels": krows}, default=str))  # fmt: skip
    elif fmt is CompareFmt.markdown:
        typer.echo(
            f"**{verdict}**\n\n### Layers\n\n{render_markdown(layers)}\n\n### Kernels\n\n{render_markdown(kernels)}"
        )
    else:
        typer.echo(render_text(layers))
        typer.echo(render_text(kernels.drop_columns(["nvtx_path"])))
        typer.echo(verdict)
    if failed:
        raise typer.Exit(3)


@app.command()
@_guard
def roofline(
    run_id: Annotated[
        str | None, typer.Argument(help="Run id or unique prefix (default: the latest run).")
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output file: .html, .png or .svg.")] = Path(
        "roofline.html"
    ),
    level: Annotated[Level, typer.Option("--level", help="Memory level of the AI axis.")] = Level.dram,
    precision: Annotated[
        Precision, typer.Option("--precision", help="FLOP precision ('all': each kernel's dominant one).")
    ] = Precision.all,
    by: Annotated[By, typer.Option("--by", help="One point per kernel or per NVTX layer.")] = By.kernel,
    depth: Annotated[
        int, typer.Option("--depth", "-d", min=1, help="With --by layer: NVTX depth of a layer.")
    ] = 1,
    with_run: Annotated[
        str | None,
        typer.Option("--with", help="With --by layer on an nsys run: the ncu run giving FLOPs/bytes."),
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
    store: StoreOpt = None,
) -> None:
    """Draw the hierarchical roofline of one run: one point per kernel (or layer), ceilings from the report."""
    from rooflake.cli.roofline import draw

    if out.suffix.lower() not in (".html", ".png", ".svg"):
        raise typer.BadParameter(f"{out}: use a .html, .png or .svg file", param_hint="--out")
    if time:
        from rooflake.cli.time_roofline import draw_time

        if with_run is not None:
            raise typer.BadParameter("--with is not supported with --time", param_hint="--with")
        if level is Level.all:
            raise typer.BadParameter(
                "--time draws one level: use --level dram, l2 or l1", param_hint="--level"
            )
        typer.echo(
            draw_time(
                store,
                run_id,
                out,
                by=by.value,
                depth=depth,
                launch_overhead_ns=launch_overhead,
                level=level.value,
            )
        )
        return
    if with_run is not None and by is By.kernel:
        raise typer.BadParameter("--with needs --by layer", param_hint="--with")
    summary = draw(
        store, run_id, out, level.value, precision.value, by=by.value, depth=depth, with_run=with_run
    )
    typer.echo(summary)
