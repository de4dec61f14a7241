"""``rl layers``: GPU time, launches and (with counters) FLOPs, bytes and AI per NVTX layer of one run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from rooflake.cli.common import (
    DepthOpt,
    Fmt,
    FmtOpt,
    OutOpt,
    RunArg,
    StoreOpt,
    WideOpt,
    app,
    emit_view,
    guard,
    need_out,
    on_terminal,
    one_line,
    reading_store,
)


def glance(table: Any) -> list[Any]:
    """The terminal columns of layer_summary rows: the layer (and its device where the run has several),
    launches, GPU time, its share, FLOP/s and the DRAM AI; csv/json/parquet and --wide get all."""
    from rooflake.cli.output import Column

    devices = set(table.column("device_id").to_pylist())
    return [
        *([Column("device", "device_id")] if len(devices) > 1 else []),
        Column("layer", "layer", cut_start=True),
        Column("launches", "launches"),
        Column("GPU time", "gpu_time_ns", "ns"),
        Column("share", "share_of_gpu_time", "%"),
        *_work(table),
    ]


def _work(table: Any) -> list[Any]:
    """FLOP/s and AI of the layers: counted at DRAM (ncu counters), or modelled from a trace's recorded ops
    (:data:`rooflake.views.layers.MODELLED`), the header saying so."""
    from rooflake.cli.output import Column

    if "flops_ratio" in table.column_names:  # a trace with an ncu run's counters: counted beside modelled
        return [
            Column("FLOP/s", "flops_per_s", "FLOP/s"),
            Column("FLOP/s model", "flops_per_s_modelled", "FLOP/s"),
            Column("ratio", "flops_ratio", "x"),
        ]
    if (
        "flops_modelled" in table.column_names
    ):  # a trace: its ops' work modelled from their shapes, no counters
        return [
            Column("FLOP/s model", "flops_per_s_modelled", "FLOP/s"),
            Column("AI model", "ai_modelled", "FLOP/B"),
        ]
    if "flops_per_s" not in table.column_names:
        return []
    return [Column("FLOP/s", "flops_per_s", "FLOP/s"), Column("AI DRAM", "ai_dram", "FLOP/B")]


def _range_glance(table: Any) -> list[Any]:
    """The terminal columns of a run without GPU kernels, timed by its NVTX ranges (range_times)."""
    from rooflake.cli.output import Column

    return [
        Column("layer", "layer", cut_start=True),
        Column("calls", "calls"),
        Column("inclusive", "inclusive_ns", "ns"),
        Column("exclusive", "exclusive_ns", "ns"),
        Column("mean", "mean_inclusive_ns", "ns"),
        Column("share", "share_of_top", "%"),
        *_work(table),
    ]


def _versus_glance(table: Any) -> list[Any]:
    """The terminal columns of measured vs modelled layers (estimate_vs_measured, or a CPU run's RANGE_VERSUS)."""
    from rooflake.cli.output import Column, unit_of

    wanted = {
        "layer": "layer",
        "duration_ns": "time",
        "time_ns_measured": "time",
        "flops_measured": "FLOP",
        "flops_analytic": "FLOP model",
        "flops_modelled": "FLOP model",
        "flops_ratio": "ratio",
        "dram_ratio": "DRAM ratio",
        "ai": "AI",
        "flops_per_s": "FLOP/s",
    }
    names = [n for n in wanted if n in table.column_names]
    return [Column(wanted[n], n, unit_of(n) if n != "ai" else "FLOP/B") for n in names]


def emit_range_layers(v: Any, fmt: Fmt, out: Path | None, wide: bool = False) -> None:
    """The layers of a run without GPU kernels (a :class:`rooflake.views.layers.Layers` timed by ``ranges``), and
    on the terminal a line saying where their times come from."""
    emit_view(v.table, _range_glance(v.table), fmt, out, wide)
    if on_terminal(fmt, out):
        typer.echo(
            f"run {v.run_id} has no GPU kernels: layer times are the CPU time of its NVTX ranges (query "
            "range_times; inclusive = end - start, exclusive = minus the ranges directly inside; ns over all calls)"
        )


def print_coverage(coverage: Any) -> None:
    """One line per device and attribution reason: ops and GPU time under NVTX ranges (``unknown`` where the
    stored GPU time is NULL: no operation of the group has both a start and an end)."""
    for row in coverage.to_pylist():
        ns, share = row["gpu_time_ns"], row["share_of_gpu_time"]
        time = "unknown GPU time" if ns is None else f"{ns / 1e6:.3f} ms GPU time"
        typer.echo(
            f"device {row['device_id']}: {row['attribution']:<14} {row['ops']:>7} ops "
            f"({_pct(row['share_of_ops'])}), {time} ({_pct(share)})"
        )


def print_counted(table: Any) -> None:
    """One line, before the coverage lines, when FLOPs, AI and FLOP/s cover only part of the launches shown
    (``layer_summary``'s ``launches_with_counters`` against ``launches``): how many lack FLOP counters or hold a
    failed replay's NaN, left out (NULL where a layer has none), never counted as 0."""
    launches = sum(table.column("launches").to_pylist())
    counted = sum(table.column("launches_with_counters").to_pylist())
    if counted == launches:
        return
    if counted == 0 and "flops_modelled" in table.column_names:
        typer.echo(
            "FLOPs, bytes and AI are modelled from the recorded ops' shapes (*_modelled: each op counted once; "
            "time measured); no launch has FLOP counters (an ncu run of the same program has them: --with NCU_RUN "
            "sets them beside the modelled ones)"
        )
        return
    if counted == 0:
        typer.echo(
            "no launch of these layers has FLOP counters (an ncu report with the roofline sections has them; a "
            "trace run, nsys or torch.profiler, takes them from one: --with NCU_RUN): flops, ai_* and flops_per_s "
            "are NULL"
        )
        return
    typer.echo(
        f"flops, ai_* and flops_per_s cover {counted} of {launches} launches, leaving out {launches - counted} "
        "without FLOP counters or with a NaN count or duration (a failed replay): never counted as 0 (columns "
        "launches_with_counters, counters_complete)"
    )


def print_cross_check(table: Any) -> None:
    """Where a trace's layers hold ncu-counted FLOPs beside the FLOPs modelled from its recorded shapes (columns
    flops_ratio, gaps: :func:`rooflake.views.layers.with_modelled_work`), one line: what the ratio is and how many
    layers differ by over 10 %."""
    if "flops_ratio" not in table.column_names:
        return
    ratios = [r for r in table.column("flops_ratio").to_pylist() if r is not None]
    off = sum(1 for r in ratios if not 0.9 <= r <= 1.1)
    typer.echo(
        f"ratio = ncu-counted FLOPs / FLOPs modelled from the recorded shapes (each op once), on {len(ratios)} of "
        f"{table.num_rows} layers, {off} of them off by more than 10 % (the likely cause: column gaps, -f csv or --wide)"
    )


def _pct(share: float | None) -> str:
    """A share as a percentage, ``-`` where it is NULL (a total of 0 or unknown)."""
    return "-" if share is None else f"{share:.1%}"


def _kernel_name(name: str | None) -> str:
    """A kernel's name as one terminal line of at most 100 characters (the report's text: control characters
    escaped), ``(no name)`` where the source gave none."""
    return "(no name)" if name is None else one_line(name[:100])


def print_match(m: Any) -> None:
    """How an nsys run's launches matched the ncu run's kernels (a :class:`rooflake.views.layers.RunMatch`)."""
    for row in m.summary.to_pylist():
        typer.echo(
            f"ncu match ({m.ncu_run}): {row['match']:<20} {row['launches']:>7} launches "
            f"({_pct(row['share_of_launches'])}), {_pct(row['share_of_kernel_time'])} of kernel time"
        )
    for row in m.unmatched_nsys.to_pylist()[:10]:
        typer.echo(f"  not profiled by ncu: {_kernel_name(row['name'])} ({row['launches']} launches)")
    for row in m.unmatched_ncu.to_pylist()[:10]:
        typer.echo(f"  ncu kernel {row['kernel_id']} matched no nsys launch: {_kernel_name(row['name'])}")


def print_collectives(table: Any, wide: bool) -> None:
    """The run's collective kernels as their own table (a :class:`rooflake.views.layers.Layers`' ``collectives``):
    layer, collective, launches, GPU time, bytes per launch, bus bandwidth and its fraction of the NVLink roof; the
    reasons for what is NULL under it."""
    from rooflake.cli.output import Column, columns_of, render_table, terminal_width

    cols = [
        Column("layer", "layer", cut_start=True),
        Column("collective", "collective", shrink=False),
        Column("calls", "launches"),
        Column("GPU time", "time_ns", "ns"),
        Column("bytes", "bytes", "B", shrink=False),
        Column("busbw", "busbw_bytes_per_s", "B/s", shrink=False),
        Column("of NVLink", "fraction_of_roof", "%", shrink=False),
    ]
    rows = table.to_pylist()
    typer.echo(
        render_table(
            rows, columns_of(table.column_names) if wide else cols, None if wide else terminal_width()
        )
    )
    for reason in sorted({r["roof_reason"] for r in rows if r["roof_reason"]}):
        typer.echo(f"collectives: {reason}")


@app.command()
@guard
def layers(
    run_id: RunArg = None,
    depth: DepthOpt = 1,
    match: Annotated[
        str | None, typer.Option("--match", "-m", help="Keep layers matching this regex.")
    ] = None,
    device: Annotated[int | None, typer.Option("--device", help="Only this CUDA device.")] = None,
    domain: Annotated[
        str | None,
        typer.Option(
            "--domain",
            help="Only the layers of this NVTX domain (default: every domain; with an `rl estimate` run, the domain "
            "of the run's annotated model).",
        ),
    ] = None,
    with_run: Annotated[
        str | None,
        typer.Option(
            "--with",
            help="An ncu run of the same program (FLOPs/bytes from it, time from this trace run; beside a trace "
            "with shapes, counted vs modelled FLOPs), or an `rl estimate` run (measured vs analytic FLOPs and "
            "modelled bytes per layer).",
        ),
    ] = None,
    fmt: FmtOpt = Fmt.table,
    out: OutOpt = None,
    wide: WideOpt = False,
    store: StoreOpt = None,
) -> None:
    """GPU time, launches and (with ncu counters) FLOPs, bytes and AI per NVTX layer, with attribution coverage;
    a run without GPU kernels (CPU): inclusive/exclusive time per NVTX range."""
    from rooflake.views.layers import layers as layer_view

    need_out(fmt, out)
    v = layer_view(reading_store(store), run_id, depth, match, device, with_run, domain=domain)
    if v.estimates is not None:  # measured vs modelled, per layer
        emit_view(v.estimates, _versus_glance(v.estimates), fmt, out, wide)
        return
    if v.timed_by == "ranges":  # a CPU run: its NVTX ranges time the layers
        emit_range_layers(v, fmt, out, wide)
        return
    emit_view(v.table, glance(v.table), fmt, out, wide)
    if on_terminal(fmt, out):
        print_counted(v.table)
        print_cross_check(v.table)
        print_coverage(v.coverage)
        if v.matched is not None:
            print_match(v.matched)
        if v.collectives is not None:
            print_collectives(v.collectives, wide)
