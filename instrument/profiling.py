"""Profiler command lines a roofline needs, run for the user: Nsight Compute (``ncu``) and Nsight Systems (``nsys``).

- ncu (counters per kernel, replayed in isolation): ``--set roofline`` (SpeedOfLight and the RooflineChart and
  Hierarchical{Double,Single,Half,Tensor}RooflineChart sections: what :mod:`rooflake.ingest` derives FLOPs, bytes
  per level and the roofs from) or ``--set full``; ``--nvtx`` so each kernel keeps the NVTX ranges open at its
  launch (its layer), ``--nvtx-include`` filters; ``--target-processes all`` (PyTorch data loaders and launchers
  spawn children); ``--clock-control base`` (ncu's default, stated so it is recorded: clocks locked to base, so the
  report's peaks and the kernels' times refer to the same clock; ``none`` lets the GPU boost, as in production, and
  is recorded the same way: the command line and the label ``env.clock_control``); ``--kernel-name regex:``,
  ``--launch-skip``,
  ``--launch-count`` to keep long jobs short.
- nsys (a timeline: real durations, the NVTX ranges of every thread): ``--trace=cuda,nvtx,osrt``,
  ``--cuda-graph-trace=node`` (kernels of CUDA graphs one by one, attributed through the graph launch), CPU
  sampling and context-switch tracing off (not needed for layers; Nsight Systems 2022.4 hangs with them on some
  machines), ``--export=sqlite``. A ``.qdstrm`` left by a package whose ``nsys`` cannot find its importer is
  converted with the ``QdstrmImporter`` next to it, then exported with ``nsys export --type sqlite``.

:func:`profile` runs the command lines and returns the report to ingest with the facts of the environment;
:func:`environment` gathers them (host, GPU, driver, CUDA and torch versions, profiler version) without importing
torch.
"""

from __future__ import annotations

import os
import platform
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from rooflake.schema import InputError, RooflakeError, ToolMissingError, UsageError

NCU_SETS = ("roofline", "full")
CLOCK_CONTROLS = ("base", "none")
NSYS_TRACE = ("cuda", "nvtx", "osrt")
CLOCK_CONTROL = "base"
HINTS = {
    "ncu": "install NVIDIA Nsight Compute (it ships with the CUDA toolkit as <cuda>/bin/ncu; or download it from "
    "https://developer.nvidia.com/nsight-compute, or install the `nsight-compute` package of NVIDIA's CUDA "
    "repository for your Linux distribution) and put the folder holding `ncu` on PATH; `ncu --version` checks it",
    "nsys": "install NVIDIA Nsight Systems (it ships with the CUDA toolkit as <cuda>/bin/nsys; or download it from "
    "https://developer.nvidia.com/nsight-systems, or install the `nsight-systems` package of NVIDIA's CUDA "
    "repository for your Linux distribution) and put the folder holding `nsys` on PATH; `nsys --version` checks it",
}
NAMES = {"ncu": "Nsight Compute", "nsys": "Nsight Systems"}


def find_tool(tool: str) -> str:
    """Path of ``ncu`` or ``nsys`` on PATH. Raises :class:`ToolMissingError` naming the tool and how to get it."""
    path = shutil.which(tool)
    if path is None:
        raise ToolMissingError(f"`{tool}` ({NAMES[tool]}) is not on PATH: {HINTS[tool]}")
    return path


def ncu_command(
    target: list[str],
    *,
    output: str | Path,
    ncu: str = "ncu",
    section_set: str = "roofline",
    nvtx_include: list[str] | tuple[str, ...] = (),
    kernel: str | None = None,
    launch_skip: int | None = None,
    launch_count: int | None = None,
    clock_control: str = CLOCK_CONTROL,
) -> list[str]:
    """The ``ncu`` command line profiling ``target`` into ``output``.ncu-rep (see the module docstring for why each
    option). ``kernel`` is a regular expression on the function name (``--kernel-name regex:...``).
    Raises :class:`UsageError` for an unknown set or clock control, or a negative count."""
    if section_set not in NCU_SETS:
        raise UsageError(f"--set {section_set!r}: one of {', '.join(NCU_SETS)}")
    if clock_control not in CLOCK_CONTROLS:
        raise UsageError(f"--clock-control {clock_control!r}: one of {', '.join(CLOCK_CONTROLS)}")
    for name, value in (("--launch-skip", launch_skip), ("--launch-count", launch_count)):
        if value is not None and value < (1 if name == "--launch-count" else 0):
            raise UsageError(f"{name} {value}: must be {'≥ 1' if name == '--launch-count' else '≥ 0'}")
    cmd = [ncu, "--set", section_set, "--nvtx"]
    for expr in nvtx_include:
        cmd += ["--nvtx-include", expr]
    if kernel is not None:
        cmd += ["--kernel-name", f"regex:{kernel}"]
    if launch_skip is not None:
        cmd += ["--launch-skip", str(launch_skip)]
    if launch_count is not None:
        cmd += ["--launch-count", str(launch_count)]
    cmd += ["--target-processes", "all", "--clock-control", clock_control]
    return [*cmd, "--force-overwrite", "-o", str(output), *target]


def nsys_command(
    target: list[str],
    *,
    output: str | Path,
    nsys: str = "nsys",
    trace: list[str] | tuple[str, ...] = NSYS_TRACE,
) -> list[str]:
    """The ``nsys profile`` command line recording ``target`` into ``output``.nsys-rep and its SQLite export."""
    if not trace:
        raise UsageError("--trace: name at least one of cuda, nvtx, osrt, ...")
    return [
        nsys,
        "profile",
        f"--trace={','.join(trace)}",
        *(["--cuda-graph-trace=node"] if "cuda" in trace else []),
        "--sample=none",
        "--cpuctxsw=none",
        "--export=sqlite",
        "--force-overwrite=true",
        "-o",
        str(output),
        *target,
    ]


def nsys_export_command(nsys: str, report: Path) -> list[str]:
    """``nsys export`` of a ``.nsys-rep`` into the ``.sqlite`` beside it."""
    sqlite = report.with_suffix(".sqlite")
    return [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "-o", str(sqlite), str(report)]


def qdstrm_importer(nsys: str) -> Path | None:
    """``QdstrmImporter`` of the Nsight Systems install ``nsys`` belongs to, looked up next to every link on the way
    to the binary (Debian: /usr/bin/nsys -> /usr/lib/nsight-systems/bin/nsys, importer in ../host-linux-x64)."""
    link = Path(nsys)
    for _ in range(16):
        for base in (link.parent.parent, link.parent):
            cand = base / "host-linux-x64" / "QdstrmImporter"
            if cand.is_file():
                return cand
        if not link.is_symlink():
            return None
        link = Path(os.path.normpath(link.parent / link.readlink()))
    return None


@dataclass
class ProfileResult:
    """What :func:`profile` did: ``tool`` (ncu | nsys), ``commands`` (every command line, in order), ``report``
    (the file to ingest: ``.ncu-rep`` or the nsys ``.sqlite``; None for a dry run), ``facts`` (see
    :func:`environment`, plus ``command``: the profiled command line)."""

    tool: str
    commands: list[list[str]]
    report: Path | None
    facts: dict[str, str] = field(default_factory=dict)

    def command_lines(self) -> list[str]:
        """The command lines as a shell would take them."""
        return [shlex.join(c) for c in self.commands]

    def run_fields(self) -> dict[str, str | None]:
        """Columns of the run's ``runs`` row that the report itself may lack, for
        ``rooflake.pipeline.ingest_file(report, store, labels, run_fields=result.run_fields())``: ``command_line``
        (the profiler command line that ran, the profiled command at its end, as a shell takes it) and ``host``
        (where it ran, :func:`environment`). Empty for a dry run (nothing ran)."""
        if self.report is None:
            return {}
        return {"command_line": shlex.join(self.commands[0]), "host": self.facts.get("host")}


def _run(cmd: list[str], what: str, *, quiet: bool = False) -> None:
    """Run a command (the profiled one with its output shown; ``quiet`` helper steps show theirs only on failure).
    Raises :class:`RooflakeError` naming the command when it exits non-zero."""
    try:
        proc = subprocess.run(cmd, capture_output=quiet, text=True)
    except OSError as e:
        raise ToolMissingError(f"cannot run {cmd[0]}: {e.strerror}") from e
    if proc.returncode != 0:
        said = " ".join((proc.stderr or proc.stdout or "").split())[-400:] if quiet else ""
        raise RooflakeError(f"{what} exited with status {proc.returncode}: {shlex.join(cmd)} {said}".rstrip())


def _finish_nsys(nsys: str, output: Path, commands: list[list[str]]) -> Path:
    """The SQLite export of the recording ``output`` (importing a leftover .qdstrm and exporting as needed)."""
    rep, sqlite, qdstrm = (output.with_name(output.name + s) for s in (".nsys-rep", ".sqlite", ".qdstrm"))
    if not rep.exists() and qdstrm.exists():
        importer = qdstrm_importer(nsys)
        if importer is None:
            raise ToolMissingError(f"nsys left {qdstrm} and no QdstrmImporter was found next to {nsys}")
        commands.append([str(importer), "-i", str(qdstrm)])
        _run(commands[-1], "QdstrmImporter", quiet=True)
        qdstrm.unlink(missing_ok=True)
    if not rep.exists():
        raise InputError(f"nsys wrote no report {rep} (did the command start? see nsys's messages above)")
    if not sqlite.exists() or sqlite.stat().st_mtime < rep.stat().st_mtime:
        commands.append(nsys_export_command(nsys, rep))
        _run(commands[-1], "nsys export", quiet=True)
    return sqlite


def default_output(tool: str) -> Path:
    """``rl-<tool>-YYYYmmdd-HHMMSS`` in the current directory (the profiler adds its suffix)."""
    return Path(f"rl-{tool}-{datetime.now():%Y%m%d-%H%M%S}")


def plan(
    target: list[str],
    *,
    tool: str = "ncu",
    output: str | Path | None = None,
    section_set: str = "roofline",
    nvtx_include: list[str] | tuple[str, ...] = (),
    kernel: str | None = None,
    launch_skip: int | None = None,
    launch_count: int | None = None,
    trace: list[str] | tuple[str, ...] = NSYS_TRACE,
    clock_control: str = CLOCK_CONTROL,
    dry_run: bool = False,
) -> ProfileResult:
    """The command line :func:`profile` runs (``report`` None). With ``dry_run`` the tool need not be installed
    (its bare name stands in); otherwise raises :class:`ToolMissingError` when it is not on PATH.
    Raises :class:`UsageError` (no command, an unknown tool, ncu's kernel filters with nsys)."""
    if not target:
        raise UsageError("no command to profile: rl profile [OPTIONS] -- CMD ARGS...")
    if tool not in NAMES:
        raise UsageError(f"unknown profiler {tool!r} (ncu or nsys)")
    ncu_only = kernel is not None or launch_skip is not None or launch_count is not None or bool(nvtx_include)
    if tool == "nsys" and (ncu_only or clock_control != CLOCK_CONTROL):
        raise UsageError(
            "--kernel, --launch-skip, --launch-count, --nvtx-include and --clock-control are ncu's options: use --ncu"
        )
    exe = tool if dry_run and shutil.which(tool) is None else find_tool(tool)
    out = Path(output) if output is not None else default_output(tool)
    if tool == "nsys":
        return ProfileResult(tool, [nsys_command(target, output=out, nsys=exe, trace=trace)], None)
    cmd = ncu_command(
        target,
        output=out,
        ncu=exe,
        section_set=section_set,
        nvtx_include=nvtx_include,
        kernel=kernel,
        launch_skip=launch_skip,
        launch_count=launch_count,
        clock_control=clock_control,
    )
    return ProfileResult(tool, [cmd], None)


def profile(
    target: list[str], *, tool: str = "ncu", output: str | Path | None = None, **options: object
) -> ProfileResult:
    """Profile ``target`` (a command and its arguments) with ``tool`` (``ncu`` or ``nsys``) into ``output``
    (default :func:`default_output`; the profiler adds its suffix); ``options`` as :func:`plan` takes them
    (``section_set``, ``nvtx_include``, ``kernel``, ``launch_skip``, ``launch_count``, ``clock_control``,
    ``trace``, ``dry_run``).
    Returns a :class:`ProfileResult` whose ``report`` (``NAME.ncu-rep``, or nsys's ``NAME.sqlite``) is ready for
    :func:`rooflake.pipeline.ingest_file` and whose ``facts`` say where and how it ran (:func:`environment`, the
    profiled ``command``, ncu's ``clock_control``). ``dry_run`` returns the command lines without running them.

    Raises :class:`ToolMissingError` (the profiler is not on PATH: the message says how to get it),
    :class:`UsageError` (see :func:`plan`), :class:`RooflakeError` (the profiler or the command failed),
    :class:`InputError` (no report written: e.g. ncu profiled no kernel).
    """
    out = Path(output) if output is not None else default_output(tool)
    result = plan(target, tool=tool, output=out, **options)  # type: ignore[arg-type]
    if options.get("dry_run"):
        return result
    exe = result.commands[0][0]
    result.facts = {**environment(exe), "command": shlex.join(target)}
    if tool == "ncu":
        result.facts["clock_control"] = str(options.get("clock_control", CLOCK_CONTROL))
    _run(result.commands[0], f"{tool} (or the profiled command: {tool} passes its exit status on)")
    if tool == "nsys":
        result.report = _finish_nsys(exe, out, result.commands)
    else:
        result.report = out.with_name(out.name + ".ncu-rep")
        if not result.report.exists():
            raise InputError(
                f"ncu wrote no report {result.report}: it profiled no kernel (no GPU, or no kernel matched)"
            )
    return result


def _lines(cmd: list[str]) -> list[str]:
    """Non-empty stdout lines of a short command; [] when it cannot run or fails."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [ln.strip() for ln in proc.stdout.splitlines() if ln.strip()] if proc.returncode == 0 else []


def _torch_versions() -> tuple[str, str]:
    """(torch version, the CUDA version torch was built with or 'none') from torch/version.py, without importing
    torch (seconds of start-up); ('not installed', 'none') without torch."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return "not installed", "none"
    text = (Path(next(iter(spec.submodule_search_locations))) / "version.py").read_text(encoding="utf-8")
    version = re.search(r"^__version__\s*(?::[^=]*)?=\s*['\"]([^'\"]+)", text, re.M)
    cuda = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]+)", text, re.M)
    return (version.group(1) if version else "unknown"), (cuda.group(1) if cuda else "none")


def environment(tool: str | None = None) -> dict[str, str]:
    """Facts of the machine a profile runs on, as text: ``host``, ``gpu`` and ``driver`` (``nvidia-smi``, first
    GPU; 'none' without one), ``cuda`` (the CUDA version torch was built with; 'none' for a CPU build), ``torch``,
    ``python``, and ``profiler`` (``tool --version``'s last line) when ``tool`` is given."""
    smi = shutil.which("nvidia-smi")
    gpus = _lines([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"]) if smi else []
    name, _, driver = (gpus[0] if gpus else "").partition(",")
    torch_version, cuda = _torch_versions()
    facts = {
        "host": platform.node() or "unknown",
        "gpu": name.strip() or "none",
        "driver": driver.strip() or "none",
        "cuda": cuda,
        "torch": torch_version,
        "python": platform.python_version(),
    }
    if tool is not None:
        version = (_lines([tool, "--version"]) or ["unknown"])[-1]
        name = NAMES.get(Path(tool).name, "")
        facts["profiler"] = version if "Nsight" in version or not name else f"NVIDIA {name} {version}"
    return facts


ENV_PREFIX = "env."


def env_labels(facts: dict[str, str]) -> dict[str, str]:
    """The facts that hold for every run of a sweep on one machine, as run labels ``env.<fact>`` (host, gpu,
    driver, cuda, torch, python, profiler, clock_control). The profiled command is not one: it differs between the
    runs of a sweep and would split their trajectories."""
    return {ENV_PREFIX + k: v for k, v in facts.items() if k != "command"}
