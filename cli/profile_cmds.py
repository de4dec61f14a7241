"""``rl profile``: run a command under Nsight Compute or Nsight Systems with the options a roofline needs, then
ingest the report with the labels and the facts of the machine."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from rooflake.cli.common import StoreOpt, app, given, guard, parse_labels, system_allocator


class SectionSet(str, Enum):
    roofline = "roofline"
    full = "full"


class ClockControl(str, Enum):
    base = "base"
    none = "none"


SetOpt = Annotated[
    SectionSet, typer.Option("--set", help="ncu section set: roofline (the roofline sections) or full.")
]
NvtxIncludeOpt = Annotated[
    list[str] | None,
    typer.Option("--nvtx-include", help="ncu: profile only kernels inside these NVTX ranges."),
]
ClockOpt = Annotated[
    ClockControl,
    typer.Option(
        "--clock-control",
        help="ncu: base (clocks locked to base: peaks and times at one clock) or none (the GPU boosts); "
        "recorded as env.clock_control.",
    ),
]
LabelOpt = Annotated[
    list[str] | None, typer.Option("--label", "-l", help="KEY=VALUE label stored on the run (repeatable).")
]
OutputOpt = Annotated[
    Path | None, typer.Option("--output", "-o", help="Report name (the profiler adds its suffix).")
]


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    no_args_is_help=True,
)
@guard
def profile(
    ctx: typer.Context,
    command: Annotated[
        list[str], typer.Argument(help="The command to profile, after `--`: -- python train.py ...")
    ],
    ncu: Annotated[
        bool, typer.Option("--ncu", help="Nsight Compute: counters per kernel (the default).")
    ] = False,
    nsys: Annotated[
        bool, typer.Option("--nsys", help="Nsight Systems: a timeline with every NVTX range.")
    ] = False,
    section_set: SetOpt = SectionSet.roofline,
    nvtx_include: NvtxIncludeOpt = None,
    kernel: Annotated[
        str | None, typer.Option("--kernel", help="ncu: regex on the kernel function name.")
    ] = None,
    launch_skip: Annotated[
        int | None, typer.Option("--launch-skip", min=0, help="ncu: skip N launches.")
    ] = None,
    launch_count: Annotated[
        int | None, typer.Option("--launch-count", min=1, help="ncu: profile N launches.")
    ] = None,
    clock_control: ClockOpt = ClockControl.base,
    trace: Annotated[
        str, typer.Option("--trace", help="nsys: what to trace (comma-separated).")
    ] = "cuda,nvtx,osrt",
    label: LabelOpt = None,
    output: OutputOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the command lines; run nothing.")] = False,
    store: StoreOpt = None,
) -> None:
    """Profile a command (ncu --set roofline --nvtx ... | nsys profile --trace=cuda,nvtx,osrt ...), ingest the
    report with the labels and env.* facts (host, GPU, driver, CUDA, torch; the command line and host also in the
    run's own columns), and print the run id."""
    if ncu and nsys:
        raise typer.BadParameter("--ncu or --nsys, not both", param_hint="--ncu/--nsys")
    if nsys and (kernel or nvtx_include or launch_skip is not None or launch_count is not None):
        raise typer.BadParameter(
            "filters ncu's kernels: use --ncu", param_hint="--kernel/--nvtx-include/--launch-*"
        )
    if nsys and clock_control is not ClockControl.base:
        raise typer.BadParameter("an ncu option: use --ncu", param_hint="--clock-control")
    if nsys and given(ctx, "section_set"):  # (the other profiler's option was ignored without a word)
        raise typer.BadParameter("an ncu option: use --ncu", param_hint="--set")
    if not nsys and given(ctx, "trace"):
        raise typer.BadParameter("an nsys option: use --nsys", param_hint="--trace")
    labels = parse_labels(label)
    options: dict[str, Any] = dict(
        section_set=section_set.value, nvtx_include=nvtx_include or [], kernel=kernel
    )
    options |= dict(launch_skip=launch_skip, launch_count=launch_count, dry_run=dry_run)
    if not nsys:
        options["clock_control"] = clock_control.value
    options["trace"] = [t.strip() for t in trace.split(",") if t.strip()]
    result = _profile_and_ingest(command, "nsys" if nsys else "ncu", output, labels, store, options)
    for line in result["commands"]:
        typer.echo(("" if dry_run else "ran  ") + line)
    if not dry_run:
        typer.echo(f"{result['status']}  {result['run_id']}  {result['report']}")


def _profile_and_ingest(
    command: list[str],
    tool: str,
    output: Path | None,
    labels: dict[str, str],
    store: str | None,
    options: dict,
) -> dict[str, Any]:
    """Run :func:`rooflake.instrument.profiling.profile`, then ingest its report with the labels and env.* facts,
    the profiler command line and the host in the ``runs`` row's own columns."""
    from rooflake.instrument.profiling import env_labels, profile
    from rooflake.pipeline import ingest_file

    result = profile(command, tool=tool, output=output, **options)
    out: dict[str, Any] = {"commands": result.command_lines(), "report": result.report}
    if result.report is None:
        return out
    system_allocator()  # after the profiled program ran: its environment is the user's
    res = ingest_file(
        result.report, store, {**env_labels(result.facts), **labels}, run_fields=result.run_fields()
    )
    return {**out, "run_id": res.run_id, "status": res.status}
