"""``rl compare``: two runs side by side per NVTX layer and per kernel, with a verdict (and an exit status for CI)."""

from __future__ import annotations

import json
import textwrap
from enum import Enum
from typing import Annotated, Any

import typer

from rooflake.cli.common import (
    CeilingSource,
    DepthOpt,
    StoreOpt,
    WideOpt,
    app,
    ceiling_choice,
    guard,
    reading_store,
)


class CompareFmt(str, Enum):
    table = "table"
    markdown = "markdown"
    json = "json"


def pair(row: dict[str, Any], key: str, unit: str | None) -> str:
    """``before → after`` of ``base_<key>`` and ``new_<key>`` in human units (one value where the text is the
    same: an unchanged bound)."""
    from rooflake.cli.output import human

    before, after = human(row.get(f"base_{key}"), unit), human(row.get(f"new_{key}"), unit)
    return before if before == after and unit is None else f"{before} → {after}"


def note(row: dict[str, Any], slower: set[str] | None = None) -> str:
    """What to look at in a row: ``new``, ``removed``, ``renamed``, ``▲ slower`` (its time grew; ``▲ FAIL`` past
    --fail-if-slower: ``slower`` holds the layers that did)."""
    said = [] if row["status"] == "both" else [row["status"]]
    if (row["time_change"] or 0) > 0:
        said.append("▲ FAIL" if slower and row.get("layer") in slower else "▲ slower")
    return " ".join(said)


def kernel_name(row: dict[str, Any]) -> str:
    """A kernel's base name, ``old → new`` where it was renamed."""
    name = row.get("short_name") or row["name"] or "(no name)"
    new = row.get("new_short_name") or row.get("new_name")
    return f"{name} → {new}" if row["status"] == "renamed" and new else name


def tables(c: Any) -> tuple[list[Any], list[Any]]:
    """The terminal columns of a comparison's layers and kernels: name, GPU time before → after, its change, the
    bound before → after, and what got slower."""
    from rooflake.cli.output import Column

    slower = set(c.slower_layers)
    common = [
        Column("GPU time", lambda r: pair(r, "time_ns", "ns"), right=True),
        Column("change", "time_change", "+%"),
        Column("bound", lambda r: pair(r, "bound", None), shrink=False),
    ]
    layers = [
        Column("layer", "layer", cut_start=True),
        *common,
        Column("", lambda r: note(r, slower), shrink=False),
    ]
    return layers, [Column("kernel", kernel_name), *common, Column("", note, shrink=False)]


def print_tables(c: Any, wide: bool) -> None:
    """A comparison on the terminal: its layers and kernels, then the verdict."""
    from rooflake.cli.output import columns_of, render_table, terminal_width

    layers, kernels = tables(c)
    if wide:
        layers, kernels = columns_of(c.layers.column_names), columns_of(c.kernels.column_names)
    width = None if wide else terminal_width()
    typer.echo(f"before {c.base_run} → after {c.new_run}")
    typer.echo(render_table(c.layers.to_pylist(), layers, width))
    typer.echo(render_table(c.kernels.to_pylist(), kernels, width))
    typer.echo(c.verdict if wide else textwrap.fill(c.verdict, width or 80, break_on_hyphens=False))


def print_json(c: Any) -> None:
    """A comparison as one JSON document: the verdict, the totals and every column of both tables."""
    keys = ("base_run", "new_run", "base_time_ns", "new_time_ns", "time_change", "ceilings")
    fields = {k: getattr(c, k) for k in keys}
    layers, kernels = c.layers.to_pylist(), c.kernels.to_pylist()
    doc = {"verdict": c.verdict, "failed": c.failed, **fields, "layers": layers, "kernels": kernels}
    typer.echo(json.dumps(doc, default=str))


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
    wide: WideOpt = False,
    store: StoreOpt = None,
) -> None:
    """Compare two runs per layer and per kernel: time, FLOP/s, AI, bound, share; new and removed kernels."""
    from rooflake.cli.output import render_markdown
    from rooflake.views.compare import compare as compare_view

    c = compare_view(reading_store(store), base_run, new_run, depth, fail_if_slower, ceiling_choice(ceilings))
    if fmt is CompareFmt.json:
        print_json(c)
    elif fmt is CompareFmt.markdown:
        typer.echo(
            f"**{c.verdict}**\n\n### Layers\n\n{render_markdown(c.layers)}\n\n"
            f"### Kernels\n\n{render_markdown(c.kernels)}"
        )
    else:
        print_tables(c, wide)
    if c.failed:
        raise typer.Exit(3)
