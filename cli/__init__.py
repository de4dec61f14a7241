"""rooflake.cli: the ``rl`` command, a thin typer layer over the library.

Each command parses its arguments, calls one view of :mod:`rooflake.views` (or a pipeline function), renders with
:mod:`rooflake.render` and prints or saves the result. Every :class:`~rooflake.schema.RooflakeError` is turned into
one ``Error: <message>`` line on stderr and exit code 1 in one place (:func:`rooflake.cli.common.guard`); bad
arguments exit 2 (typer/click usage errors). Commands live by group: ``store_cmds`` (ingest, runs, sql),
``roofline_cmds`` (roofline, --time), ``layer_cmds`` (layers), ``compare_cmds`` (compare), ``trajectory_cmds``
(trajectory), ``report_cmds`` (report, check), ``profile_cmds`` (profile), ``demo_cmds`` (demo). Imports of the
library stay inside the commands: ``rl --help`` starts fast. A command module imports, of this package, only
:mod:`rooflake.cli.common` (the app, shared options) and :mod:`rooflake.cli.output`.

Importing a command module registers its commands on the app. :func:`main` imports only the module of the command
it is given (:data:`COMMANDS`; typer then builds that command's options only): ``rl runs`` does not import and
build the fifteen others. An unknown command and the ``app`` attribute of this package (``from
rooflake.cli import app``, what tests invoke) have every command, in :data:`MODULES` order. ``rl --help``, ``rl``
alone and ``rl --version`` import none: the help's list of commands is written from :data:`SUMMARIES`
(:class:`rooflake.cli.common.Group`), and ``tests/test_startup.py`` checks that it equals the list the commands
themselves give, at every width.
"""

from __future__ import annotations

import importlib
import signal
import sys
from typing import Any

__all__ = ["COMMANDS", "MODULES", "QUERYING", "SUMMARIES", "app", "load", "main"]

#: the command modules, in the order of ``rl --help``
MODULES = (
    "store_cmds",
    "profile_cmds",
    "estimate_cmds",
    "ceilings_cmds",
    "measure_cmds",  # rl ceilings measure
    "roofline_cmds",
    "layer_cmds",
    "trajectory_cmds",
    "compare_cmds",
    "rank_cmds",
    "whatif_cmds",
    "report_cmds",
    "doctor_cmds",
    "compact_cmds",
    "demo_cmds",
)

#: each command (or command group) of ``rl`` -> the modules that register it and its subcommands
COMMANDS: dict[str, tuple[str, ...]] = {
    "ingest": ("store_cmds",),
    "runs": ("store_cmds",),
    "sql": ("store_cmds",),
    "profile": ("profile_cmds",),
    "estimate": ("estimate_cmds",),
    "roofline": ("roofline_cmds",),
    "layers": ("layer_cmds",),
    "trajectory": ("trajectory_cmds",),
    "compare": ("compare_cmds",),
    "ranks": ("rank_cmds",),
    "whatif": ("whatif_cmds",),
    "report": ("report_cmds",),
    "check": ("report_cmds",),
    "doctor": ("doctor_cmds",),
    "compact": ("compact_cmds",),
    "ceilings": ("ceilings_cmds", "measure_cmds"),
    "demo": ("demo_cmds",),
}

#: each command's help up to its first sentence's end, in the order of ``rl --help``: what click shortens into the
#: help's list of commands (``make_default_short_help``) when :func:`main` imports no command module
SUMMARIES: dict[str, str] = {
    "ingest": "Ingest profiles, one run per file: Nsight Compute reports (.ncu-rep) and CSV exports, Nsight Systems "
    "exports (.sqlite, .nsys-rep, a parquetdir folder), ERT roofline.json, torch.profiler traces.",
    "runs": "List the runs in the store: id, source, GPU, kernels, labels, ingested_at.",
    "sql": "Run DuckDB SQL over the store (Nsight Compute and Nsight Systems runs), its named queries and macros.",
    "profile": "Profile a command (ncu --set roofline --nvtx ...",
    "estimate": "Trace a model on meta tensors (no weights, no compute, no GPU) and store per op and module path its "
    "FLOPs (PyTorch's formulas, else ours, each row says which), compulsory bytes and DeLTA-style modelled traffic "
    "(table `estimates`, source_format torch-model).",
    "roofline": "Draw the hierarchical roofline of one run: one point per kernel (or layer), ceilings from the report "
    "(or --ceilings).",
    "layers": "GPU time, launches and (with ncu counters) FLOPs, bytes and AI per NVTX layer, with attribution "
    "coverage; a run without GPU kernels (CPU): inclusive/exclusive time per NVTX range.",
    "trajectory": "Roofline trajectories: each layer's or kernel's (AI, FLOP/s) across runs that differ in one label.",
    "compare": "Compare two runs per layer and per kernel: time, FLOP/s, AI, bound, share; new and removed kernels.",
    "ranks": "Per rank of a distributed job and per profiler step: compute, communication and idle GPU time, the "
    "straggler of each step and its gap to the median rank.",
    "whatif": "Scale ceilings (--scale dram=2 --scale tensor=1.5), recompute every kernel's T_min and predict its time "
    "at its measured inefficiency s = T/T_min; per layer and run, the predicted total and the layers that limit it.",
    "report": "Write a static HTML report (opens offline) with PNG/SVG of each chart: per run the roofline, top layers "
    "and kernels, zero-FLOP share, physics warnings and the comparison with the previous run of the same labels.",
    "check": "Physics checks: points above their roof, AI order violated, GEMMs without FLOPs, NaN durations, zero or "
    "missing peaks, instrumented durations, NVTX coverage under 90 %.",
    "doctor": "Check every file of the store; list damaged or missing partitions and leftovers of killed writers.",
    "compact": "Fold the runs ingested since the last compaction into compacted files, without changing any answer.",
    "demo": "Try rooflake on two real Nsight Compute reports it ships (an H100 running a bf16 transformer block): "
    "ingest them into a store, write their HTML report and the training step's roofline as a PNG.",
    "ceilings": "Every ceiling known for a machine: report peaks, datasheet, ERT and measured, side by side.",
}

#: what :func:`main` is given when it imports no command module: the help (``rl`` alone prints it too) or the version
NO_COMMAND = frozenset(["--help", "--version"])

#: the commands that open the store's DuckDB database (:func:`rooflake.store.database.build`): :func:`main` starts
#: DuckDB on a second thread while typer parses their arguments (:mod:`rooflake.store.early`)
QUERYING = frozenset(
    [
        "runs",
        "sql",
        "roofline",
        "layers",
        "trajectory",
        "compare",
        "ranks",
        "whatif",
        "report",
        "check",
        "ceilings",
    ]
)


def load(modules: tuple[str, ...] = MODULES) -> Any:  # -> typer.Typer
    """Import command ``modules`` of this package (registering their commands); the app (every command by
    default)."""
    for name in modules:
        importlib.import_module(f"{__name__}.{name}")
    from rooflake.cli.common import app

    return app


def __getattr__(name: str) -> Any:
    if name == "app":
        return load()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _terminated(signum: int, frame: Any) -> None:
    """SIGTERM's handler: exit (status 143) from wherever the main thread is."""
    sys.exit(128 + signum)


def main() -> None:
    """Console-script entry point (``rl``): the app with the commands ``sys.argv[1]`` names; none for ``rl``,
    ``rl --help`` and ``rl --version`` (:data:`NO_COMMAND`; the help lists :data:`SUMMARIES`); every one for anything
    else (a mistyped command: click suggests the nearest). For a command of :data:`QUERYING`, DuckDB starts
    meanwhile."""
    if len(sys.argv) > 1 and sys.argv[1] in QUERYING:
        from rooflake.store import early

        early.start()
    # SIGTERM (systemd, cron and CI timeouts) ends rl as Ctrl-C does: unwinding, so that worker processes are
    # terminated and temporary folders removed, exit status 128 + 15
    signal.signal(signal.SIGTERM, _terminated)
    given = sys.argv[1] if len(sys.argv) > 1 else "--help"
    load(() if given in NO_COMMAND else COMMANDS.get(given, MODULES))(prog_name="rl")


if __name__ == "__main__":  # pragma: no cover
    main()
