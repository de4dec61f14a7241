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
    app,
    emit,
    guard,
    need_out,
    on_terminal,
    one_line,
    reading_store,
)

#: the columns a glance needs on the terminal; csv/json/parquet get all
GLANCE = [
    "device_id",
    "layer",
    "kernels",
    "launches",
    "memops",
    "gpu_time_ns",
    "share_of_gpu_time",
    "flops",
    "ai_l1",
    "ai_l2",
    "ai_dram",
    "flops_per_s",
]

#: the same for a run without GPU kernels, timed by its NVTX ranges (range_times)
RANGE_GLANCE = ["layer", "calls", "inclusive_ns", "exclusive_ns", "mean_inclusive_ns", "share_of_top"]


def emit_range_layers(v: Any, fmt: Fmt, out: Path | None) -> None:
    """The layers of a run without GPU kernels (a :class:`rooflake.views.layers.Layers` timed by ``ranges``), and
    on the terminal a line saying where their times come from."""
    emit(v.table.select(RANGE_GLANCE) if on_terminal(fmt, out) else v.table, fmt, out)
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
            "time measured); no launch has FLOP counters (an ncu report of the same program has them)"
        )
        return
    if counted == 0:
        typer.echo(
            "no launch of these layers has FLOP counters (an ncu report with the roofline sections has them; an "
            "nsys run takes them from one: --with NCU_RUN): flops, ai_* and flops_per_s are NULL"
        )
        return
    typer.echo(
        f"flops, ai_* and flops_per_s cover {counted} of {launches} launches, leaving out {launches - counted} "
        "without FLOP counters or with a NaN count or duration (a failed replay): never counted as 0 (columns "
        "launches_with_counters, counters_complete)"
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
            help="An ncu run of the same program (FLOPs/bytes from it, time from this nsys run), or an "
            "`rl estimate` run (measured vs analytic FLOPs and modelled bytes per layer).",
        ),
    ] = None,
    fmt: FmtOpt = Fmt.table,
    out: OutOpt = None,
    store: StoreOpt = None,
) -> None:
    """GPU time, launches and (with ncu counters) FLOPs, bytes and AI per NVTX layer, with attribution coverage;
    a run without GPU kernels (CPU): inclusive/exclusive time per NVTX range."""
    from rooflake.views.layers import MODELLED
    from rooflake.views.layers import layers as layer_view

    need_out(fmt, out)
    v = layer_view(reading_store(store), run_id, depth, match, device, with_run, domain=domain)
    if v.estimates is not None:  # measured vs modelled, per layer
        emit(v.estimates, fmt, out)
        return
    if v.timed_by == "ranges":  # a CPU run: its NVTX ranges time the layers
        emit_range_layers(v, fmt, out)
        return
    glance = GLANCE
    # a trace: its ops' work modelled from their shapes, no counters
    if "flops_modelled" in v.table.column_names:
        glance = [c for c in GLANCE if not c.startswith(("flops", "ai_"))] + MODELLED[:-1]
    emit(v.table.select(glance) if on_terminal(fmt, out) else v.table, fmt, out)
    if on_terminal(fmt, out):
        print_counted(v.table)
        print_coverage(v.coverage)
        if v.matched is not None:
            print_match(v.matched)
