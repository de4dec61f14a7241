"""``rl ceilings measure``: measure this machine's ceilings with torch (GEMM per dtype, copy bandwidth, launch
overhead), write them as JSON and ingest them as ``ceilings`` rows with ``source = 'measured'``.

Registered on the ``rl ceilings`` group of :mod:`rooflake.cli.ceilings_cmds` (whose ``show`` reads them back).
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from rooflake.cli.common import StoreOpt, ceilings_app, guard, parse_labels


class Device(str, Enum):
    cpu = "cpu"
    cuda = "cuda"


def _threads(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out or min(out) < 1:
        raise typer.BadParameter(
            f"{text!r}: comma-separated thread counts ≥ 1, e.g. 1,2", param_hint="--threads"
        )
    return out


@ceilings_app.command("measure")
@guard
def measure(
    device: Annotated[
        Device, typer.Option("--device", help="cpu (matmul and copies per thread count) or cuda.")
    ] = Device.cpu,
    threads: Annotated[str, typer.Option("--threads", help="CPU thread counts, comma-separated.")] = "1,2",
    label: Annotated[
        list[str] | None,
        typer.Option("--label", "-l", help="KEY=VALUE label stored on the run (repeatable)."),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="JSON file to write (default rl-ceilings-DEVICE-TIME.json)."),
    ] = None,
    store: StoreOpt = None,
) -> None:
    """Measure GEMM FLOP/s per dtype and copy bandwidth (DRAM-sized and cache-resident; on a GPU also the launch
    overhead) with torch, write them to a JSON file and ingest it: ceilings with source 'measured', the method and
    the date. On a GPU the GEMM ceilings are named by the roof they run on (TENSOR BF16, ...) and the run is
    labelled gpu=DEVICE NAME (unless -l gpu=/machine= is given), so that GPU's reports find them. Prints one line
    per ceiling and the run id."""
    counts = _threads(threads)
    labels = parse_labels(label)
    out = output or Path(f"rl-ceilings-{device.value}-{datetime.now():%Y%m%d-%H%M%S}.json")
    result = _measure_and_ingest(device.value, counts, out, labels, store)
    width = max([6, *(len(row["ceiling"]) for row in result["ceilings"])])
    for row in result["ceilings"]:
        value = row["value"] / (1e9 if row["unit"] != "s" else 1e-6)
        unit = {"FLOP/s": "GFLOP/s", "byte/s": "GB/s", "s": "µs"}[row["unit"]]
        typer.echo(f"{row['ceiling']:<{width}} {value:>10.2f} {unit:<8} {row['source_name']}")
    typer.echo(f"{result['status']}  {result['run_id']}  {out}")


def _measure_and_ingest(
    device: str, threads: list[int], out: Path, labels: dict[str, str], store: str | None
) -> dict[str, Any]:
    """:func:`rooflake.instrument.ceilings.measure`, written to ``out`` and ingested with the labels, env.* and, for
    a GPU, ``gpu`` = its name when the labels name neither ``gpu`` nor ``machine``."""
    import sys

    from rooflake.instrument.ceilings import measure as measure_ceilings
    from rooflake.instrument.ceilings import write
    from rooflake.instrument.profiling import env_labels, environment
    from rooflake.pipeline import ingest_file

    doc = measure_ceilings(device, threads, argv=["rl", *sys.argv[1:]])
    # a GPU's ceilings join that GPU's runs through the label gpu=NAME (views.ceilings), unless the user named one
    named = {"gpu": doc["gpu"]} if doc.get("gpu") and not {"gpu", "machine"} & labels.keys() else {}
    res = ingest_file(write(doc, out), store, {**env_labels(environment()), **named, **labels})
    return {"ceilings": doc["ceilings"], "run_id": res.run_id, "status": res.status}
