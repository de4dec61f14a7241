"""``rl trajectory``: roofline trajectories of layers or kernels across runs that differ in one label."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rooflake.cli.common import (
    CeilingSource,
    KernelOrLayer,
    Level,
    OneSourceCeilingsOpt,
    StoreOpt,
    WhereOpt,
    app,
    ceiling_choice,
    chart_out,
    guard,
    parse_labels,
    reading_store,
)
from rooflake.render.captions import roofs_note


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@app.command()
@guard
def trajectory(
    vary: Annotated[str, typer.Option("--vary", help="The run label that varies (e.g. batch).")],
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="Output file: .html, .png or .svg (missing parent directories are created)."
        ),
    ] = Path("trajectory.html"),
    where: WhereOpt = None,
    layer: Annotated[
        str | None,
        typer.Option("--layer", help="Regex the layer (--by layer) or the kernel's NVTX path must match."),
    ] = None,
    level: Annotated[Level, typer.Option("--level", help="Memory level of the AI axis.")] = Level.dram,
    by: Annotated[
        KernelOrLayer, typer.Option("--by", help="One trajectory per NVTX layer or per kernel.")
    ] = KernelOrLayer.layer,
    depth: Annotated[
        int, typer.Option("--depth", "-d", min=1, help="With --by layer: NVTX depth of a layer.")
    ] = 1,
    ceilings: OneSourceCeilingsOpt = None,
    store: StoreOpt = None,
) -> None:
    """Roofline trajectories: each layer's or kernel's (AI, FLOP/s) across runs that differ in one label."""
    from rooflake.render import save_chart, trajectory_chart
    from rooflake.views.trajectory import trajectory as trajectory_view

    chart_out(out)
    if ceilings is CeilingSource.all:
        raise typer.BadParameter("a trajectory draws one source's roofs: not all", param_hint="--ceilings")
    t = trajectory_view(
        reading_store(store), vary, parse_labels(where, "--where"), layer, level.value, by.value, depth,
        ceiling_choice(ceilings),
    )  # fmt: skip
    fixed = ", ".join(f"{k}={v}" for k, v in sorted(t.where.items()))
    what = f"NVTX layers at depth {depth}" if by is KernelOrLayer.layer else "kernels"
    title = f"Roofline trajectories as {vary} varies · {what}" + (f" · {fixed}" if fixed else "")
    save_chart(trajectory_chart(t.rows, t.ceilings, level=level.value, title=title), out)
    series = t.rows.column("series").to_pylist()
    entities = set(zip(series, t.rows.column("entity").to_pylist(), strict=True))
    summary = (
        f"wrote {out} (trajectory of {vary}: {len(set(series))} series, {_plural(len(entities), by.value)}, "
        f"{_plural(t.runs, 'run')}, level {level.value}"
    )
    if t.single:
        summary += f"; left out {len(t.single)} series with a single {vary} value"
    if t.undrawn:  # (they were left out without a word)
        summary += (
            f"; no point in {_plural(len(t.undrawn), 'run')} ({', '.join(t.undrawn)}: no roofline counters)"
        )
    typer.echo(summary + roofs_note(t.ceilings, ceilings) + ")")
