"""Shared pieces of the ``rl`` commands: the typer app, the one error handler, option types and output."""

from __future__ import annotations

import functools
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


class Fmt(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"
    parquet = "parquet"


FmtOpt = Annotated[Fmt, typer.Option("--format", "-f", help="Output format.")]
OutOpt = Annotated[Path | None, typer.Option("--out", "-o", help="Write to this file instead of stdout.")]


def _need_out(fmt: Fmt, out: Path | None) -> None:
    """Parquet is binary: it goes to a file, never to the terminal (exit 2 otherwise)."""
    if fmt is Fmt.parquet and out is None:
        raise typer.BadParameter("--format parquet needs --out FILE", param_hint="--out")


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
