"""rooflake.cli: the ``rl`` command, a thin typer layer over the library.

Each command parses its arguments, makes one library call and prints or saves the result. Every
:class:`~rooflake.schema.RooflakeError` is turned into one ``Error: <message>`` line on stderr and exit code 1 in
one place (:func:`_guard`); bad arguments exit 2 (typer/click usage errors).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from rooflake.schema import RooflakeError

F = TypeVar("F", bound=Callable[..., Any])


def _err(msg: str) -> None:
    typer.echo(f"Error: {msg}", err=True)


def _guard(fn: F) -> F:
    """Run a command; a RooflakeError becomes ``Error: ...`` on stderr and exit 1 (the one place this happens)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RooflakeError as e:
            _err(str(e))
            raise typer.Exit(1) from None
        except ValueError as e:  # bad option values detected by the library (e.g. output suffix)
            _err(str(e))
            raise typer.Exit(1) from None
        except Exception as e:  # DuckDB on a damaged store file: one line, no traceback
            import duckdb

            if not isinstance(e, duckdb.Error):
                raise
            _err(f"reading the store failed: {' '.join(str(e).split())}")
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


app = typer.Typer(
    name="rl",
    help="rooflake: Nsight Compute reports into a Parquet store; roofline views with DuckDB SQL and Altair.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

StoreOpt = Annotated[
    Path | None,
    typer.Option(
        "--store",
        help="Store directory (default: $RL_STORE, else ~/.local/share/rooflake).",
        show_default=False,
    ),
]


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"rooflake {version('rooflake')}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """rooflake: Nsight Compute reports into a Parquet store; roofline views with DuckDB SQL and Altair."""


def _parse_labels(labels: list[str], option: str = "--label") -> dict[str, str]:
    out: dict[str, str] = {}
    for item in labels:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"{item!r} is not KEY=VALUE", param_hint=option)
        out[key.strip()] = value
    return out


class FP16(str, Enum):
    ncu = "ncu"
    nersc = "nersc"


@app.command()
@_guard
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
) -> None:
    """Ingest Nsight Compute reports (.ncu-rep) and Nsight Systems exports (.sqlite, .nsys-rep), one run per file.

    The format is detected from each file's first bytes. Re-ingesting the same file is a no-op unless --force.
    """
    from rooflake.ingest import expand_paths, ingest_paths

    labels = _parse_labels(label or [])
    files = expand_paths(paths)
    results = ingest_paths(files, store, labels, force=force, fp16=fp16.value, workers=workers)
    failed = 0
    if len(files) > 1:
        from rich.console import Console
        from rich.progress import Progress

        with Progress(console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task("ingesting", total=len(files))
            for r in results:  # on a terminal, rich shows stdout lines above the bar
                failed += _print_result(r, as_json)
                bar.advance(task)
    else:
        for r in results:
            failed += _print_result(r, as_json)
    if failed:
        raise typer.Exit(1)


def _print_result(r: Any, as_json: bool) -> int:
    if r.status == "error":
        _err(r.error)
        return 1
    if as_json:
        line = json.dumps(r.as_dict())
    elif r.status == "exists":
        line = f"exists    {r.run_id}  already in the store (use --force to replace)  {r.path}"
    else:
        counts = (
            f"{r.kernels} kernels  {r.metrics} metrics"
            if r.ranges is None
            else f"{r.kernels} kernels  {r.ranges} NVTX ranges"
        )
        line = f"{r.status:<9} {r.run_id}  {counts}  {r.gpu_name or 'GPU unknown'}  {r.path}"
        if r.note:
            line += f"  ({r.note})"
    typer.echo(line)
    return 0


class Fmt(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"
    parquet = "parquet"


class By(str, Enum):
    kernel = "kernel"
    layer = "layer"


class Level(str, Enum):
    dram = "dram"
    l2 = "l2"
    l1 = "l1"
    all = "all"


class Precision(str, Enum):
    fp64 = "fp64"
    fp32 = "fp32"
    fp16 = "fp16"
    tensor = "tensor"
    all = "all"


def _emit(table: Any, fmt: Fmt, out: Path | None) -> None:
    from rooflake.cli.output import write_table

    write_table(table, fmt.value, out)


@app.command()
@_guard
def runs(
    store: StoreOpt = None,
    fmt: Annotated[Fmt, typer.Option("--format", "-f", help="Output format.")] = Fmt.table,
) -> None:
    """List the runs in the store: id, source, GPU, kernels, labels, ingested_at."""
    from rooflake.store import Store, fetch_arrow

    if fmt is Fmt.parquet:
        raise typer.BadParameter(
            "rl runs prints; for Parquet use rl sql 'SELECT * FROM runs' -f parquet -o FILE"
        )

    con = Store(store).connect()
    table = fetch_arrow(
        con,
        """
        SELECT run_id, regexp_extract(source_path, '[^/]*$') AS source, gpu_name, n_kernels AS kernels,
               array_to_string(list_transform(map_entries(labels), lambda e: e.key || '=' || e.value), ',') AS labels,
               strftime(ingested_at, '%Y-%m-%d %H:%M:%S') AS ingested_at
        FROM runs ORDER BY ingested_at, run_id
        """,
    )
    _emit(table, fmt, None)


@app.command()
@_guard
def sql(
    query: Annotated[
        str | None, typer.Argument(help="SQL over views runs, kernels, metrics, ceilings and queries.")
    ] = None,
    store: StoreOpt = None,
    fmt: Annotated[Fmt, typer.Option("--format", "-f", help="Output format.")] = Fmt.table,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write to this file instead of stdout.")
    ] = None,
    param: Annotated[
        list[str] | None,
        typer.Option("--param", "-p", help="NAME=VALUE bound to $NAME in the query (repeatable)."),
    ] = None,
    list_: Annotated[
        bool, typer.Option("--list", help="List the named queries (also usable as views).")
    ] = False,
) -> None:
    """Run DuckDB SQL over the store. Every named query (rl sql --list) is also a view."""
    from rooflake import queries
    from rooflake.store import Store

    if list_:
        for name in queries.names():
            typer.echo(f"{name:<18} {queries.header(name)}")
        return
    if not query:
        raise typer.BadParameter("give an SQL query, or --list", param_hint="QUERY")
    if fmt is Fmt.parquet and out is None:
        raise typer.BadParameter("--format parquet needs --out FILE", param_hint="--out")
    params = _parse_labels(param or [], "--param") if param else {}
    table = queries.execute(Store(store), query, params)
    _emit(table, fmt, out)


@app.command()
@_guard
def layers(
    run_id: Annotated[
        str | None, typer.Argument(help="Run id or unique prefix (default: the latest run).")
    ] = None,
    depth: Annotated[
        int, typer.Option("--depth", "-d", min=1, help="NVTX stack depth of a layer (1 = outermost).")
    ] = 1,
    match: Annotated[
        str | None, typer.Option("--match", "-m", help="Keep layers matching this regex.")
    ] = None,
    device: Annotated[int | None, typer.Option("--device", help="Only this CUDA device.")] = None,
    with_run: Annotated[
        str | None,
        typer.Option(
            "--with", help="An ncu run of the same program: FLOPs/bytes from it, time from this nsys run."
        ),
    ] = None,
    fmt: Annotated[Fmt, typer.Option("--format", "-f", help="Output format.")] = Fmt.table,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write to this file instead of stdout.")
    ] = None,
    store: StoreOpt = None,
) -> None:
    """GPU time, launches and (with ncu counters) FLOPs, bytes and AI per NVTX layer, with attribution coverage."""
    from rooflake import queries
    from rooflake.store import Store

    if fmt is Fmt.parquet and out is None:
        raise typer.BadParameter("--format parquet needs --out FILE", param_hint="--out")
    res = queries.layers(Store(store), run_id, depth, match, device, with_run)
    table = res["table"]
    if (
        fmt is Fmt.table and out is None
    ):  # the terminal gets the columns a glance needs; csv/json/parquet get all
        table = table.select(
            [
                "device_id",
                "layer",
                "kernels",
                "launches",
                "memops",
                "gpu_time_ns",
                "share_of_gpu_time",
                "flops",
            ]
            + ["ai_l1", "ai_l2", "ai_dram", "flops_per_s"]
        )
    _emit(table, fmt, out)
    if fmt is Fmt.table and out is None:
        for row in res["coverage"].to_pylist():
            typer.echo(
                f"device {row['device_id']}: {row['attribution']:<14} {row['ops']:>7} ops "
                f"({row['share_of_ops']:.1%}), {row['gpu_time_ns'] / 1e6:.3f} ms GPU time ({row['share_of_gpu_time']:.1%})"
            )
        if res["match"] is not None:
            _print_match(res["match"])


def _print_match(m: dict[str, Any]) -> None:
    for row in m["summary"].to_pylist():
        typer.echo(
            f"ncu match ({m['ncu_run']}): {row['match']:<20} {row['launches']:>7} launches "
            f"({row['share_of_launches']:.1%}), {row['share_of_gpu_time']:.1%} of kernel time"
        )
    for row in m["unmatched_nsys"].to_pylist()[:10]:
        typer.echo(f"  not profiled by ncu: {row['name'][:100]} ({row['launches']} launches)")
    for row in m["unmatched_ncu"].to_pylist()[:10]:
        typer.echo(f"  ncu kernel {row['kernel_id']} matched no nsys launch: {row['name'][:100]}")


@app.command()
@_guard
def check(
    run_id: Annotated[
        str | None, typer.Argument(help="Run id or unique prefix (default: every run).")
    ] = None,
    fmt: Annotated[Fmt, typer.Option("--format", "-f", help="Output format.")] = Fmt.table,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write to this file instead of stdout.")
    ] = None,
    store: StoreOpt = None,
) -> None:
    """Physics checks: points above their roof, AI order violated, GEMMs without FLOPs, NaN durations, zero or
    missing peaks, instrumented durations, NVTX coverage under 90 %."""
    from rooflake import queries
    from rooflake.store import Store

    if fmt is Fmt.parquet and out is None:
        raise typer.BadParameter("--format parquet needs --out FILE", param_hint="--out")
    st = Store(store)
    where, params = ("WHERE run_id = $run_id", {"run_id": st.resolve(run_id)}) if run_id else ("", {})
    table = queries.execute(
        st, f'SELECT * FROM physics_checks {where} ORDER BY run_id, kernel_id NULLS FIRST, "check"', params
    )
    _emit(table, fmt, out)
    if fmt is Fmt.table and out is None:
        typer.echo(f"{table.num_rows} finding(s)")


@app.command()
@_guard
def report(
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory (replaced atomically).")],
    since: Annotated[
        str | None,
        typer.Option("--since", help="Runs ingested within this long: 30m, 24h, 7d (default: all)."),
    ] = None,
    runs: Annotated[
        list[str] | None, typer.Option("--runs", help="These runs (repeatable; overrides --since).")
    ] = None,
    where: Annotated[
        list[str] | None,
        typer.Option("--where", "-w", help="KEY=VALUE label the runs must carry (repeatable)."),
    ] = None,
    store: StoreOpt = None,
) -> None:
    """Write a static HTML report (opens offline) with PNG/SVG of each chart: per run the roofline, top layers and
    kernels, zero-FLOP share, physics warnings and the comparison with the previous run of the same labels."""
    from rooflake.cli.report import build

    typer.echo(build(store, out, since=since, run_ids=runs, where=_parse_labels(where or [], "--where")))


@app.command()
@_guard
def trajectory(
    vary: Annotated[str, typer.Option("--vary", help="The run label that varies (e.g. batch).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output file: .html, .png or .svg.")] = Path(
        "trajectory.html"
    ),
    where: Annotated[
        list[str] | None,
        typer.Option("--where", "-w", help="KEY=VALUE label the runs must carry (repeatable)."),
    ] = None,
    layer: Annotated[
        str | None,
        typer.Option("--layer", help="Regex the layer (--by layer) or the kernel's NVTX path must match."),
    ] = None,
    level: Annotated[Level, typer.Option("--level", help="Memory level of the AI axis.")] = Level.dram,
    by: Annotated[By, typer.Option("--by", help="One trajectory per NVTX layer or per kernel.")] = By.layer,
    depth: Annotated[
        int, typer.Option("--depth", "-d", min=1, help="With --by layer: NVTX depth of a layer.")
    ] = 1,
    store: StoreOpt = None,
) -> None:
    """Roofline trajectories: each layer's or kernel's (AI, FLOP/s) across runs that differ in one label."""
    from rooflake.cli.trajectory import draw_trajectory

    if out.suffix.lower() not in (".html", ".png", ".svg"):
        raise typer.BadParameter(f"{out}: use a .html, .png or .svg file", param_hint="--out")
    where_labels = _parse_labels(where or [], "--where")
    typer.echo(draw_trajectory(store, vary, out, where_labels, layer, level.value, by.value, depth))


class CompareFmt(str, Enum):
    table = "table"
    markdown = "markdown"
    json = "json"


@app.command()
@_guard
def compare(
    base_run: Annotated[str, typer.Argument(help="The baseline run (id or unique prefix).")],
    new_run: Annotated[str, typer.Argument(help="The run to compare with it.")],
    depth: Annotated[int, typer.Option("--depth", "-d", min=1, help="NVTX depth of a layer.")] = 1,
    fmt: Annotated[CompareFmt, typer.Option("--format", "-f", help="Output format.")] = CompareFmt.table,
    fail_if_slower: Annotated[
        float | None,
        typer.Option(
            "--fail-if-slower",
            min=0,
            help="Exit 3 when total or any layer's GPU time grew by more than PCT %.",
        ),
    ] = None,
    store: StoreOpt = None,
) -> None:
    """Compare two runs per layer and per kernel: time, FLOP/s, AI, bound, share; new and removed kernels."""
    from rooflake import queries
    from rooflake.cli.output import render_markdown, render_text
    from rooflake.store import Store

    res = queries.compare(Store(store), base_run, new_run, depth)
    layers, kernels = res["layers"], res["kernels"]
    lrows, krows = layers.to_pylist(), kernels.to_pylist()

    def count(rows: list[dict], key: str, value: str) -> int:
        return sum(1 for r in rows if r[key] == value)

    change = res["time_change"]
    limit = None if fail_if_slower is None else fail_if_slower / 100
    slower = [
        r for r in lrows if r["time_change"] is not None and limit is not None and r["time_change"] > limit
    ]
    total_ms = f"{(res['base_time_ns'] or 0) / 1e6:.3f} ms -> {(res['new_time_ns'] or 0) / 1e6:.3f} ms" + (
        f" ({change:+.1%})" if change is not None else ""
    )
    verdict = (
        f"{res['new_run']} vs {res['base_run']}: total GPU time {total_ms}; layers at depth {depth}: "
        f"{sum(1 for r in lrows if (r['time_change'] or 0) > 0)} slower, "
        f"{sum(1 for r in lrows if (r['time_change'] or 0) < 0)} faster, {count(lrows, 'status', 'new')} new, "
        f"{count(lrows, 'status', 'removed')} removed; kernels: {count(krows, 'status', 'new')} new, "
        f"{count(krows, 'status', 'removed')} removed"
    )
    failed = limit is not None and ((change is not None and change > limit) or bool(slower))
    if failed:
        verdict += f"; FAIL: more than {fail_if_slower:g} % slower" + (
            f" ({', '.join(r['layer'] for r in slower[:5])})" if slower else " in total"
        )
    if fmt is CompareFmt.json:
        typer.echo(json.dumps({"verdict": verdict, "failed": failed, **{k: res[k] for k in ("base_run", "new_run",
                   "base_time_ns", "new_time_ns", "time_change")}, "layers": lrows, "kernels": krows}, default=str))  # fmt: skip
    elif fmt is CompareFmt.markdown:
        typer.echo(
            f"**{verdict}**\n\n### Layers\n\n{render_markdown(layers)}\n\n### Kernels\n\n{render_markdown(kernels)}"
        )
    else:
        typer.echo(render_text(layers))
        typer.echo(render_text(kernels.drop_columns(["nvtx_path"])))
        typer.echo(verdict)
    if failed:
        raise typer.Exit(3)


@app.command()
@_guard
def roofline(
    run_id: Annotated[
        str | None, typer.Argument(help="Run id or unique prefix (default: the latest run).")
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output file: .html, .png or .svg.")] = Path(
        "roofline.html"
    ),
    level: Annotated[Level, typer.Option("--level", help="Memory level of the AI axis.")] = Level.dram,
    precision: Annotated[
        Precision, typer.Option("--precision", help="FLOP precision ('all': each kernel's dominant one).")
    ] = Precision.all,
    by: Annotated[By, typer.Option("--by", help="One point per kernel or per NVTX layer.")] = By.kernel,
    depth: Annotated[
        int, typer.Option("--depth", "-d", min=1, help="With --by layer: NVTX depth of a layer.")
    ] = 1,
    with_run: Annotated[
        str | None,
        typer.Option("--with", help="With --by layer on an nsys run: the ncu run giving FLOPs/bytes."),
    ] = None,
    store: StoreOpt = None,
) -> None:
    """Draw the hierarchical roofline of one run: one point per kernel (or layer), ceilings from the report."""
    from rooflake.cli.roofline import draw

    if out.suffix.lower() not in (".html", ".png", ".svg"):
        raise typer.BadParameter(f"{out}: use a .html, .png or .svg file", param_hint="--out")
    if with_run is not None and by is By.kernel:
        raise typer.BadParameter("--with needs --by layer", param_hint="--with")
    summary = draw(
        store, run_id, out, level.value, precision.value, by=by.value, depth=depth, with_run=with_run
    )
    typer.echo(summary)


def main() -> None:
    """Console-script entry point (``rl``)."""
    app(prog_name="rl")


if __name__ == "__main__":  # pragma: no cover
    main()
