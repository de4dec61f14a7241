"""``rl estimate``: analytic per-layer FLOPs, bytes and modelled traffic of a PyTorch model, stored as a run."""

from __future__ import annotations

from typing import Annotated

import typer

from rooflake.cli.common import StoreOpt, app, guard, parse_labels


@app.command(no_args_is_help=True)
@guard
def estimate(
    model: Annotated[str, typer.Argument(help="PACKAGE.MODULE:FACTORY that returns the torch.nn.Module.")],
    input: Annotated[
        list[str], typer.Option("--input", "-i", help="An input's SHAPE[:DTYPE], e.g. 8x3x224x224:float16.")
    ],
    training: Annotated[
        bool, typer.Option("--training", help="Forward and backward (of sum(outputs)).")
    ] = False,
    dtype: Annotated[
        str | None, typer.Option("--dtype", help="Cast parameters and inputs (e.g. bfloat16).")
    ] = None,
    gpu: Annotated[
        str | None,
        typer.Option("--gpu", help="GPU of the DRAM traffic model (datasheet name, e.g. 'A100 SXM4')."),
    ] = None,
    label: Annotated[
        list[str] | None, typer.Option("--label", "-l", help="KEY=VALUE label (repeatable).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace the run if it exists.")] = False,
    store: StoreOpt = None,
) -> None:
    """Trace a model on meta tensors (no weights, no compute, no GPU) and store per op and module path its FLOPs
    (PyTorch's formulas, else ours, each row says which), compulsory bytes and DeLTA-style modelled traffic
    (table `estimates`, source_format torch-model)."""
    from rooflake.instrument.model_spec import estimate_spec
    from rooflake.pipeline.tables import ingest_tables

    labels = parse_labels(label)
    table, identity, fields = estimate_spec(model, input, dtype=dtype, training=training, gpu=gpu)
    res = ingest_tables(
        store, {"estimates": table}, identity=identity, source_format="torch-model", producer=fields.pop("producer"),
        labels=labels, run_fields=fields, force=force,
    )  # fmt: skip
    flops = sum(v for v in table.column("flops").to_pylist() if v)
    typer.echo(
        f"{res.status:<9} {res.run_id}  {table.num_rows} ops  {flops / 1e9:.3f} GFLOP (modelled)  {identity}"
    )
