"""``rl demo``: ingest the real reports rooflake ships into a store, write their HTML report and a roofline PNG."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rooflake.cli.common import app, guard, one_line


@app.command()
@guard
def demo(
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="Folder of what is written: report/ (HTML, PNG, SVG), roofline.png, store/."
        ),
    ] = Path("rl-demo"),
    store: Annotated[
        str | None,
        typer.Option("--store", help="Store to ingest into (default: OUT/store).", show_default=False),
    ] = None,
) -> None:
    """Try rooflake on two real Nsight Compute reports it ships (an H100 running a bf16 transformer block): ingest
    them into a store, write their HTML report and the training step's roofline as a PNG."""
    from rooflake.demo import demo as run_demo

    res = run_demo(out, store)
    for r in res.ingested:
        what = f"{r.kernels} kernels  {r.gpu_name}" if r.status != "exists" else "already in the store"
        typer.echo(one_line(f"{r.status:<9} {r.run_id}  {what}  {Path(r.path).name}"))
    typer.echo(f"store     {res.store}")
    report = res.report
    typer.echo(
        f"wrote {report.index} ({len(report.run_ids)} runs, {report.charts} charts as HTML, PNG and SVG)"
    )
    typer.echo(f"wrote {res.roofline} (run {res.roofline_run}, kernels, level all, precision all)")
    typer.echo(
        f"next: rl runs --store {res.store}; rl roofline --store {res.store} --level all --out roofline.html"
    )
