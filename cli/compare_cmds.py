"""``rl compare``: two runs side by side per NVTX layer and per kernel, with a verdict (and an exit status for CI)."""

from __future__ import annotations

import json
from enum import Enum
from typing import Annotated

import typer

from rooflake.cli.ceilings_cmds import CeilingSource, ceiling_choice
from rooflake.cli.common import DepthOpt, StoreOpt, app, guard, reading_store


class CompareFmt(str, Enum):
    table = "table"
    markdown = "markdown"
    json = "json"


@app.command()
@guard
def compare(
    base_run: Annotated[str, typer.Argument(help="The baseline run (id or unique prefix).")],
    new_run: Annotated[str, typer.Argument(help="The run to compare with it.")],
    depth: DepthOpt = 1,
    fmt: Annotated[CompareFmt, typer.Option("--format", "-f", help="Output format.")] = CompareFmt.table,
    fail_if_slower: Annotated[
        float | None,
        typer.Option(
            "--fail-if-slower",
            min=0,
            help="Exit 3 when total or any layer's GPU time grew by more than PCT %.",
        ),
    ] = None,
    ceilings: Annotated[
        CeilingSource | None,
        typer.Option(
            "--ceilings",
            help="Take each kernel's bound against the roofs of the report's peaks, the datasheet, ERT or measured "
            "ceilings, as rl roofline takes them ('all' is not one source: not here). Default: each run's own "
            "report peaks, as stored.",
        ),
    ] = None,
    store: StoreOpt = None,
) -> None:
    """Compare two runs per layer and per kernel: time, FLOP/s, AI, bound, share; new and removed kernels."""
    from rooflake.cli.output import render_markdown, render_text
    from rooflake.views.compare import compare as compare_view

    c = compare_view(reading_store(store), base_run, new_run, depth, fail_if_slower, ceiling_choice(ceilings))
    if fmt is CompareFmt.json:
        keys = ("base_run", "new_run", "base_time_ns", "new_time_ns", "time_change", "ceilings")
        fields = {k: getattr(c, k) for k in keys}
        layers, kernels = c.layers.to_pylist(), c.kernels.to_pylist()
        doc = {"verdict": c.verdict, "failed": c.failed, **fields, "layers": layers, "kernels": kernels}
        typer.echo(json.dumps(doc, default=str))
    elif fmt is CompareFmt.markdown:
        typer.echo(
            f"**{c.verdict}**\n\n### Layers\n\n{render_markdown(c.layers)}\n\n"
            f"### Kernels\n\n{render_markdown(c.kernels)}"
        )
    else:
        typer.echo(render_text(c.layers))
        typer.echo(render_text(c.kernels.drop_columns(["nvtx_path"])))
        typer.echo(c.verdict)
    if c.failed:
        raise typer.Exit(3)
