"""``rl whatif``: what scaling a ceiling would buy a run (time-based roofline + DeLTA's what-if)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from rooflake.cli.common import (
    CeilingSource,
    Fmt,
    FmtOpt,
    OneSourceCeilingsOpt,
    OutOpt,
    StoreOpt,
    WideOpt,
    app,
    ceiling_choice,
    emit_view,
    guard,
    on_terminal,
    reading_store,
)
from rooflake.render.captions import roofs_note


@app.command(no_args_is_help=True)
@guard
def whatif(
    run_id: Annotated[str, typer.Argument(help="Run id or unique prefix.")],
    scale: Annotated[
        list[str],
        typer.Option(
            "--scale", "-s", help="KEY=FACTOR: fp64|fp32|fp16|tensor|compute|l1|l2|dram|launch (repeatable)."
        ),
    ],
    by: Annotated[str, typer.Option("--by", help="Rows: layer (and the run) or kernel.")] = "layer",
    depth: Annotated[int, typer.Option("--depth", "-d", min=1, help="NVTX depth of a layer.")] = 1,
    launch_overhead: Annotated[
        float | None,
        typer.Option("--launch-overhead", help="t_o in ns (default: from an nsys run, else 1000)."),
    ] = None,
    ceilings: OneSourceCeilingsOpt = None,
    fmt: FmtOpt = Fmt.table,
    out: OutOpt = None,
    wide: WideOpt = False,
    store: StoreOpt = None,
) -> None:
    """Scale ceilings (--scale dram=2 --scale tensor=1.5), recompute every kernel's T_min and predict its time at
    its measured inefficiency s = T/T_min; per layer and run, the predicted total and the layers that limit it.
    Predicted times are modelled: every row names the roofs they are modelled against (ceilings_source,
    ceilings_machine; per kernel bound_ceiling and bound_scaled_ceiling)."""
    from rooflake.views.whatif import parse_scales
    from rooflake.views.whatif import whatif as run_whatif

    if by not in ("layer", "kernel"):
        raise typer.BadParameter("layer or kernel", param_hint="--by")
    if ceilings is CeilingSource.all:
        raise typer.BadParameter("a what-if scales one source's roofs: not all", param_hint="--ceilings")
    w = run_whatif(
        reading_store(store), run_id, parse_scales(scale), depth=depth, launch_overhead_ns=launch_overhead,
        ceilings=ceiling_choice(ceilings),
    )  # fmt: skip
    t = w.total
    changed = ", ".join(f"{k}×{v:g}" for k, v in w.scales.items() if v != 1) or "nothing scaled"
    if on_terminal(fmt, out):
        how = _modelled(w.kernels.column("modelled").to_pylist(), t["untimed"])
        typer.echo(
            f"run {w.run_id}: {changed}: {t['duration_ns'] / 1e6:.3f} ms measured → {t['predicted_ns'] / 1e6:.3f} ms "
            f"predicted (×{t['speedup']:.2f}; {how}, t_o {w.launch_overhead.value_ns:g} ns, {w.launch_overhead.source}"
            f"{roofs_note(w.ceilings, ceilings)})"
        )
    emit_view(w.layers if by == "layer" else w.kernels, _glance(), fmt, out, wide)


def _bounds(row: dict[str, Any]) -> str:
    """The bound before the scaling and after it (one where it stays)."""
    from rooflake.cli.output import human

    before, after = human(row.get("bound"), None), human(row.get("bound_scaled"), None)
    return before if before == after else f"{before} → {after}"


def _glance() -> list[Any]:
    """The terminal columns of a what-if: the layer or kernel, measured time, T_min, s = T/T_min, the bound before
    and after the scaling, the predicted time, the speed-up and the share of the predicted total."""
    from rooflake.cli.output import Column

    return [
        Column("name", "name"),
        Column("measured", "duration_ns", "ns"),
        Column("T_min", "t_min_ns", "ns"),
        Column("s", "inefficiency", "x"),
        Column("bound", _bounds, shrink=False),
        Column("predicted", "predicted_ns", "ns"),
        Column("speed-up", "speedup", "x"),
        Column("share", "share_of_predicted", "%"),
    ]


def _modelled(flags: list[bool], untimed: int) -> str:
    """How much of a what-if is modelled, in words: ``flags`` its kernels' ``modelled``, ``untimed`` the launches
    without a duration (no kernel modelled: no T_min without counters and roofs, every prediction is the measured
    time)."""
    n = sum(flags)
    how = (
        "nothing modelled: no kernel has the counters and roofs a T_min needs"
        if n == 0
        else "modelled"
        if n == len(flags)
        else f"modelled: {n} of {len(flags)} kernels, the others at their measured time (unknown_terms)"
    )
    return how + (
        f"; {untimed} launch(es) without a duration left out (NaN: a failed replay)" if untimed else ""
    )
