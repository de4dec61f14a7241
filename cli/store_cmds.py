"""``rl ingest``, ``rl runs``, ``rl sql``: getting runs into the store and asking it questions."""

from __future__ import annotations

import json
import sys
from enum import Enum
from typing import Annotated, Any

import typer

from rooflake.cli.common import (
    FP16,
    Fmt,
    FmtOpt,
    OutOpt,
    StoreOpt,
    WideOpt,
    app,
    emit,
    emit_view,
    err,
    guard,
    need_out,
    one_line,
    parse_labels,
    reading_store,
    system_allocator,
)

MergeOpt = Annotated[
    bool,
    typer.Option(
        "--merge",
        help="Join two Nsight Compute files, the halves of one split profile (time + DRAM, FLOP counters), into "
        "one run, per kernel launch.",
    ),
]
GpuOpt = Annotated[
    str | None,
    typer.Option(
        "--gpu",
        help="The GPU of a trace that names none (datasheet name, e.g. 'H100 SXM5'): its ops' modelled DRAM "
        "traffic and datasheet roofs then follow. A file that names its GPU keeps it.",
    ),
]
CaptureOpt = Annotated[
    str | None,
    typer.Option(
        "--capture",
        help="With one torch.profiler execution trace: the trace of its CUDA graph capture, whose ops and shapes "
        "the replayed kernels are matched to (one run of the two).",
    ),
]


@app.command()
@guard
def ingest(
    paths: Annotated[
        list[str], typer.Argument(help="Report files, directories (searched recursively) or globs.")
    ],
    store: StoreOpt = None,
    label: Annotated[
        list[str] | None,
        typer.Option("--label", "-l", help="KEY=VALUE label stored on the run (repeatable)."),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace runs that are already in the store.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per file instead of text.")
    ] = False,
    fp16: Annotated[
        FP16,
        typer.Option("--fp16", help="FP16 FLOP factors: ncu (hadd 2, hmul 2, hfma 4) or nersc (1, 1, 2)."),
    ] = FP16.ncu,
    workers: Annotated[
        int | None, typer.Option("--workers", min=1, help="Worker processes (default: cores).")
    ] = None,
    merge: MergeOpt = False,
    capture: CaptureOpt = None,
    gpu: GpuOpt = None,
) -> None:
    """Ingest profiles, one run per file: Nsight Compute reports (.ncu-rep) and CSV exports, Nsight Systems exports
    (.sqlite, .nsys-rep, a parquetdir folder), ERT roofline.json, torch.profiler traces.

    The format is detected from each file's content (a parquetdir folder by its files). Re-ingesting the same file
    is a no-op unless --force.
    """
    system_allocator()
    from rooflake.pipeline import expand_paths, ingest_paths

    labels = parse_labels(label)
    gpu = _gpu_key(gpu, merge)
    files = expand_paths(paths)
    if capture is not None:
        raise typer.Exit(_print_result(_captured(files, capture, store, labels, force, gpu), as_json))
    if merge:
        from rooflake.pipeline.merge import ingest_merged

        raise typer.Exit(
            _print_result(ingest_merged(files, store, labels, force=force, fp16=fp16.value), as_json)
        )
    results = ingest_paths(files, store, labels, force=force, fp16=fp16.value, workers=workers, gpu=gpu)
    if _print_all(results, len(files), as_json):
        raise typer.Exit(1)


def _gpu_key(gpu: str | None, merge: bool) -> str | None:
    """``--gpu``'s datasheet catalog key (:func:`rooflake.schema.datasheets.one_gpu`: exit 2 for a name the catalog
    does not know or that names several GPUs, and beside --merge, whose Nsight Compute files name their GPU)."""
    if gpu is None:
        return None
    if merge:
        raise typer.BadParameter(
            "--merge joins Nsight Compute files, which name their GPU; --gpu is for traces that do not",
            param_hint="--gpu",
        )
    from rooflake.schema.datasheets import one_gpu

    return one_gpu(gpu)


def _print_all(results: Any, n_files: int, as_json: bool) -> int:
    """Print each file's result as it comes (with a progress bar on stderr for several files on a terminal);
    returns how many failed."""
    failed = 0
    if n_files > 1 and sys.stderr.isatty():  # (elsewhere the bar drew nothing but an empty line on stderr)
        from rich.console import Console
        from rich.progress import Progress

        with Progress(console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task("ingesting", total=n_files)
            for r in results:  # on a terminal, rich shows stdout lines above the bar
                failed += _print_result(r, as_json)
                bar.advance(task)
    else:
        for r in results:
            failed += _print_result(r, as_json)
    return failed


def _captured(
    files: list[Any], capture: str, store: str | None, labels: Any, force: bool, gpu: str | None
) -> Any:
    """``rl ingest EXEC --capture CAPTURE``: one execution trace and its capture as one run."""
    from rooflake.pipeline.capture import ingest_captured

    if len(files) != 1:
        raise typer.BadParameter(
            f"--capture goes with one execution trace; got {len(files)} files", param_hint="--capture"
        )
    return ingest_captured(files[0], capture, store, labels, force=force, gpu=gpu)


def _print_result(r: Any, as_json: bool) -> int:
    from rooflake.ingest.messages import shown  # loaded by the ingest already

    if r.status == "error":
        err(r.error)
        if as_json:  # one object per file, a failed one too (its "error" holds the message)
            typer.echo(json.dumps(r.as_dict()))
        return 1
    if as_json:
        line = json.dumps(r.as_dict())
    elif r.status == "exists":
        line = f"exists    {r.run_id}  already in the store (use --force to replace)  {shown(r.path)}"
    else:
        counts = (
            f"{r.kernels} kernels  {r.metrics} metrics"
            if r.ranges is None
            else f"{r.kernels} kernels  {r.ranges} NVTX ranges"
        )
        line = f"{r.status:<9} {r.run_id}  {counts}  {r.gpu_name or 'GPU unknown'}  {shown(r.path)}"
        if r.note:
            line += f"  ({r.note})"
    typer.echo(one_line(line))  # the GPU name and note are the report's text: data, one line
    for w in r.warnings or []:  # rows the reader flagged (flags column): say so, never silently
        typer.echo(one_line(f"warning: {r.run_id}: {w}"), err=True)
    return 0


class PrintFmt(str, Enum):
    """The formats of a command that prints (``rl runs``: no Parquet to stdout, no ``--out``)."""

    table = "table"
    csv = "csv"
    json = "json"


@app.command()
@guard
def runs(
    store: StoreOpt = None,
    fmt: Annotated[
        PrintFmt,
        typer.Option(
            "--format",
            "-f",
            help="Output format (for Parquet: rl sql 'SELECT * FROM runs' -f parquet -o FILE).",
        ),
    ] = PrintFmt.table,
    wide: WideOpt = False,
) -> None:
    """List the runs in the store: id, source, GPU, kernels, labels, ingested_at."""
    from rooflake.views.runs import run_list

    out = Fmt(fmt.value)
    emit_view(run_list(reading_store(store), as_rows=out is Fmt.table), _run_columns(), out, None, wide)


def _run_columns() -> list[Any]:
    """The terminal columns of ``rl runs``: the id and the time (to the minute) whole, the source and GPU cut to fit."""
    from rooflake.cli.output import Column

    def labels(row: dict[str, Any]) -> str:
        got = row.get("labels") or {}
        if isinstance(got, str):  # (run_list's rows may hold them as text already: key=value,...)
            return got
        return ", ".join(f"{k}={v}" for k, v in (got.items() if isinstance(got, dict) else got))

    return [
        Column("run_id", "run_id", shrink=False),
        Column("source", "source"),
        Column("gpu_name", "gpu_name"),
        Column("kernels", "kernels"),
        Column("labels", labels),
        Column("ingested_at", lambda r: str(r["ingested_at"])[:16], shrink=False),
    ]


SQL_HELP = "\n\n".join(
    [
        "Run DuckDB SQL over the store (Nsight Compute and Nsight Systems runs), its named queries and macros.",
        "Tables: runs, kernels, metrics, ceilings, ranges, memops, coverage, estimates. A parameter-free named query "
        "is a view (SELECT * FROM kernel_roofline); a parameterized one is a table macro, its parameters in order "
        "(SELECT * FROM time_roofline('RUN_ID', 1000)); rl sql --list shows both. The shared rules are macros: "
        "nvtx_layer, attainable, roof_bound, by_precision, flops_total, has_labels, ...",
        "Only queries run (SELECT, EXPLAIN) unless --unsafe.",
        "--engine spark: Spark SQL over the same store and named queries (rooflake.spark; local[*], or "
        "$RL_SPARK_MASTER, or Spark Connect at $SPARK_REMOTE); -p NAME=VALUE binds :NAME, and a parameterized "
        "named query whose parameters -p gives is a view (-p run_id=ID -p launch_overhead_ns=2000 "
        "'SELECT * FROM time_roofline').",
    ]
)


class Engine(str, Enum):
    duckdb = "duckdb"
    spark = "spark"


@app.command(help=SQL_HELP)
@guard
def sql(
    query: Annotated[
        str | None,
        typer.Argument(help="SQL over the store's tables, named queries (views, table macros) and macros."),
    ] = None,
    store: StoreOpt = None,
    fmt: FmtOpt = Fmt.table,
    out: OutOpt = None,
    wide: Annotated[
        bool,
        typer.Option("--wide", help="On the terminal: every cell in full, however wide (default: fitted)."),
    ] = False,
    param: Annotated[
        list[str] | None,
        typer.Option("--param", "-p", help="NAME=VALUE bound to $NAME in the query (repeatable)."),
    ] = None,
    list_: Annotated[
        bool,
        typer.Option("--list", help="List the named queries: views, and table macros with their parameters."),
    ] = False,
    unsafe: Annotated[
        bool,
        typer.Option("--unsafe", help="Allow statements other than queries and files outside the store."),
    ] = False,
    engine: Annotated[
        Engine, typer.Option("--engine", help="duckdb (in process) or spark (pip install 'rooflake[spark]').")
    ] = Engine.duckdb,
) -> None:
    from rooflake import queries

    if list_:
        for name in queries.names():
            params = queries.parameters(name)
            call = f"{name}({', '.join(params)})" if params else name
            typer.echo(f"{call:<40} {queries.header(name)}")
        return
    if not query:
        raise typer.BadParameter("give an SQL query, or --list", param_hint="QUERY")
    need_out(fmt, out)
    bound: dict[str, Any] = dict(parse_labels(param, "--param"))
    if engine is Engine.spark:
        from rooflake.spark import execute as spark_execute

        table = spark_execute(reading_store(store), query, bound, unsafe=unsafe)
    else:
        table = queries.execute(
            reading_store(store),
            query,
            bound,
            unsafe=unsafe,
            as_rows=fmt is Fmt.table,
            as_pylist=fmt is Fmt.json,
        )
    emit(table, fmt, out, wide)
