"""Shared pieces of the ``rl`` commands: the typer app, the one error handler, option types (``--ceilings`` of
every roofline command among them) and output. A command module imports, of ``rooflake.cli``, this module and
:mod:`rooflake.cli.output` only (tests/test_architecture.py)."""

from __future__ import annotations

import copy
import errno
import functools
import os
import sys
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
import typer.core

from rooflake.cli import coercion
from rooflake.schema import BadArgument, RooflakeError, ceiling_sources

coercion.install()  # a value typer would hand back unchanged needs no pydantic (~0.1 s of every command)

F = TypeVar("F", bound=Callable[..., Any])

HELP = (
    "rooflake: Nsight Compute reports and Nsight Systems exports into a Parquet store; roofline views (kernels, "
    "NVTX layers, time-based, trajectories, comparisons, physics checks, reports) with DuckDB SQL and Altair."
)


def one_line(text: str) -> str:
    """``text`` with every character that is not printable written as its escape (``\\n``, ``\\x1b``, ``\\x07``):
    one line, and nothing a terminal would act on (colours, cursor moves, a bell), whatever a file name or a
    report's text holds. Printable text, quotes and brackets included, is unchanged."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def err(msg: str) -> None:
    """Print ``Error: <msg>`` on stderr, as one line (:func:`one_line`: a newline or escape sequence in a message,
    from a file's name or a report's text, is shown escaped, never sent to the terminal)."""
    typer.echo(f"Error: {one_line(msg)}", err=True)


def _named_paths(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Path]:
    """The files and folders the user named in a command's arguments (Path values, or lists of them)."""
    out: list[Path] = []
    for v in [*args, *kwargs.values()]:
        for item in v if isinstance(v, list) else [v]:
            if isinstance(item, Path):
                out.append(item.resolve())
    return out


def _about_named_path(e: OSError, named: list[Path]) -> bool:
    if not e.filename:
        return False
    p = Path(str(e.filename)).resolve()
    return any(p == n or n in p.parents for n in named)


#: what writing to a full or failing disk raises (stdout redirected to a file, ``rl runs > /dev/full``)
_WRITE_FAILED = frozenset([errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG])


def _output_failed(e: OSError) -> bool:
    """Whether ``e`` is a failed write of the output (no file named: stdout), and make the rest of the output go
    nowhere, so that Python's flush at exit does not fail on it again (a second message, a traceback)."""
    if e.filename is not None or e.errno not in _WRITE_FAILED:
        return False
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # a stdout without a file descriptor (a test's capture)
        pass
    return True


def _broken_pool(e: Exception) -> bool:
    """Whether ``e`` says a pool of worker processes broke (one could not start or died): ``BrokenExecutor`` of
    ``concurrent.futures``, looked up only when a pool was used (the module is then loaded)."""
    futures = sys.modules.get("concurrent.futures")
    return futures is not None and isinstance(e, futures.BrokenExecutor)


def guard(fn: F) -> F:
    """Run a command; a :class:`RooflakeError`, an ``OSError`` about a file or folder the user named (``--out``),
    the output failing to be written (a full disk behind stdout) or a pool of worker processes that broke becomes
    ``Error: ...`` on stderr and exit 1, a :class:`BadArgument` exit 2 (bad arguments exit 2, as click's own checks
    do): the one place this happens. Anything else is a bug: its traceback shows."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RooflakeError as e:
            err(str(e))
            raise typer.Exit(2 if isinstance(e, BadArgument) else 1) from None
        except OSError as e:
            if _output_failed(e):
                err(f"cannot write the output: {e.strerror or e}")
            elif _about_named_path(e, _named_paths(args, kwargs)):
                err(f"{e.filename}: {e.strerror or e}")
            else:
                raise
            raise typer.Exit(1) from None
        except Exception as e:
            if not _broken_pool(e):
                raise
            err(
                f"worker processes stopped or could not start ({e}); check the limits on processes and memory"
            )
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


class Group(typer.core.TyperGroup):
    """``rl``'s command group. With no command module imported (:func:`rooflake.cli.main` given ``--help``,
    ``--version`` or nothing: ``rl --help`` need not import and build sixteen commands), the help lists
    :data:`rooflake.cli.SUMMARIES`, shortened by typer's own ``format_commands`` as it shortens the commands'
    help."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        if self.commands:
            return super().format_commands(ctx, formatter)
        from rooflake.cli import SUMMARIES

        listed = copy.copy(self)  # self keeps no commands: nothing can run a stand-in
        listed.commands = {name: typer.core.TyperCommand(name, help=text) for name, text in SUMMARIES.items()}
        return super(Group, listed).format_commands(ctx, formatter)


app = typer.Typer(
    name="rl",
    cls=Group,
    help=HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click help: Rich's help formatter takes 0.1 s to import, half of `rl --help`
)

StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="Store directory (default: $RL_STORE, else ~/.local/share/rooflake).",
        show_default=False,
    ),
]
RunArg = Annotated[str | None, typer.Argument(help="Run id or unique prefix (default: the latest run).")]
DepthOpt = Annotated[
    int, typer.Option("--depth", "-d", min=1, help="NVTX stack depth of a layer (1 = outermost).")
]
WhereOpt = Annotated[
    list[str] | None,
    typer.Option("--where", "-w", help="KEY=VALUE label the runs must carry (repeatable)."),
]


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"rooflake {version('rooflake')}")
        raise typer.Exit()


@app.callback(help=HELP)
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    pass


def parse_labels(labels: list[str] | None, option: str = "--label") -> dict[str, str]:
    """``["k=v", ...]`` -> ``{"k": "v"}``; a bad item is a usage error (exit 2) naming ``option``."""
    out: dict[str, str] = {}
    for item in labels or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"{item!r} is not KEY=VALUE", param_hint=option)
        if key.strip() in out:  # -l k=v -l k=w: which one was meant? refuse rather than keep the last
            raise typer.BadParameter(f"{key.strip()!r} is given twice; give each key once", param_hint=option)
        out[key.strip()] = value
    return out


def chart_out(out: Path) -> Path:
    """``out`` if it names a chart file (.html, .png, .svg); a usage error (exit 2) otherwise."""
    if out.suffix.lower() not in (".html", ".png", ".svg"):
        raise typer.BadParameter(f"{out}: use a .html, .png or .svg file", param_hint="--out")
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
OutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out", "-o", help="Write to this file instead of stdout (missing parent directories are created)."
    ),
]


WideOpt = Annotated[
    bool,
    typer.Option(
        "--wide",
        help="On the terminal: every column, in human units, however wide (default: the few that fit).",
    ),
]


def given(ctx: typer.Context, name: str) -> bool:
    """Whether option ``name`` (its parameter's name) was given on the command line or by its environment variable,
    not left at its default: an option that does not apply is refused only when it was asked for."""
    source = ctx.get_parameter_source(name)  # (click's ParameterSource, which typer bundles privately)
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


def need_out(fmt: Fmt, out: Path | None) -> None:
    """Parquet is binary: it goes to a file, never to the terminal (exit 2 otherwise)."""
    if fmt is Fmt.parquet and out is None:
        raise typer.BadParameter("--format parquet needs --out FILE", param_hint="--out")


def reading_store(store: str | None) -> Any:  # -> rooflake.store.Store
    """The :class:`rooflake.store.Store` a reading command opens, refused when its local folder does not exist
    (:func:`existing_store`): a mistyped ``--store`` or ``$RL_STORE`` read as an empty store, and ``rl check``
    passed on it (0 findings, exit 0)."""
    from rooflake.store import Store

    s = Store(store)
    existing_store(s)
    return s


def existing_store(s: Any) -> None:
    """Refuse a local store folder that does not exist (a mistyped --store looked like a healthy empty store to
    ``rl doctor``, and ``rl compact`` created it): :class:`rooflake.schema.StoreError`, one ``Error:`` line. A store
    on object storage has no folder to look for."""
    from rooflake.store.layout import existing_root

    if s.url is None:
        existing_root(Path(str(s.root)))


class By(str, Enum):
    kernel = "kernel"
    layer = "layer"
    op = "op"
    step = "step"


class KernelOrLayer(str, Enum):
    """What a trajectory follows (a trace's recorded ops have no trajectory across runs yet)."""

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


def emit(table: Any, fmt: Fmt, out: Path | None, wide: bool = False) -> None:
    """Write ``table`` as ``fmt`` to ``out`` or stdout (:func:`rooflake.cli.output.write_table`: on the terminal
    every column, fitted to its width unless ``wide``)."""
    from rooflake.cli.output import write_table

    write_table(table, fmt.value, out, wide)


def emit_view(table: Any, columns: Any, fmt: Fmt, out: Path | None, wide: bool = False) -> None:
    """Write a command's result (:func:`rooflake.cli.output.write_view`): on the terminal its ``columns``
    (:class:`rooflake.cli.output.Column`) in human units, fitted, or with ``wide`` all of them; else every column
    as ``fmt``."""
    from rooflake.cli.output import write_view

    write_view(table, columns, fmt.value, out, wide)


def on_terminal(fmt: Fmt, out: Path | None) -> bool:
    """The result goes to the terminal as a table (where the CLI adds its summary lines)."""
    return fmt is Fmt.table and out is None


def system_allocator() -> None:
    """Make the C library's allocator pyarrow's default memory pool in this process and the ingest workers it
    starts, unless ``ARROW_DEFAULT_MEMORY_POOL`` says otherwise (before pyarrow is imported: it reads the variable
    once). What a reader's Arrow buffers took is then given back when freed; pyarrow's own pools (mimalloc,
    jemalloc) keep it. At the nsys range-heavy copy x8, the ingest's peak: 479 MiB against 498."""
    import os

    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")


if TYPE_CHECKING:  # what a type checker sees; the members are the registry's choices, and `all`

    class CeilingSource(str, Enum):
        all = "all"

else:
    CeilingSource = Enum(
        "CeilingSource", [(c, c) for c in (*ceiling_sources.choices(), "all")], type=str, module=__name__
    )
    CeilingSource.__doc__ = (
        "``--ceilings`` of the roofline views (:data:`rooflake.views.ceilings.CHOICES` less ``default``): the "
        "choices of the ceiling sources registry (rooflake.schema.ceiling_sources), and ``all``."
    )


#: The ``--ceilings`` option of ``rl roofline`` (None: the default source).
CeilingsOpt = Annotated[
    CeilingSource | None,
    typer.Option(
        "--ceilings",
        help="Roofs from the report's peaks (profiled clock), the datasheet (boost clock), ERT, measured "
        "ceilings, or all (the others dashed). Default: the report's, else measured, else datasheet.",
    ),
]


#: ``--ceilings`` of the commands that judge points against one source (rl trajectory, rl whatif): the option and
#: values of rl roofline's; ``all`` (other sources drawn dashed beside one run's roofs) has no meaning there: exit 2.
OneSourceCeilingsOpt = Annotated[
    CeilingSource | None,
    typer.Option(
        "--ceilings",
        help="Roofs from the report's peaks (profiled clock), the datasheet (boost clock), ERT or measured "
        "ceilings, as rl roofline takes them ('all' draws one run's other roofs dashed: not here). Default: the "
        "report's, else measured, else datasheet.",
    ),
]


def ceiling_choice(value: CeilingSource | None) -> str:
    """The library's name of a ``--ceilings`` value (None: ``default``)."""
    return "default" if value is None else value.value


class DefaultToShow(typer.core.TyperGroup):
    """A group whose arguments go to its ``show`` subcommand unless the first one names a subcommand or asks for
    help (``rl ceilings abc1`` = ``rl ceilings show abc1``)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # ctx: the (typer-vendored) click Context
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h")):
            args = ["show", *args]
        return super().parse_args(ctx, args)


#: ``rl ceilings``, the command group: ``show`` (:mod:`rooflake.cli.ceilings_cmds`, which adds the group to the app)
#: and ``measure`` (:mod:`rooflake.cli.measure_cmds`)
ceilings_app = typer.Typer(
    cls=DefaultToShow,
    help="Every ceiling known for a machine: report peaks, datasheet, ERT and measured, side by side. `rl ceilings "
    "RUN` and `rl ceilings --gpu NAME` are `rl ceilings show …` (see `rl ceilings show --help`).",
    no_args_is_help=False,
)
