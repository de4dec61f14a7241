"""`rl profile` / `rooflake.instrument.profile`: the ncu and nsys command lines per option, the missing-tool error,
and a real `rl profile --nsys` of a small script with NVTX ranges (skipped without `nsys`). No fixture needed."""

from __future__ import annotations

import shlex
import shutil
import socket
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflake.cli import app
from rooflake.instrument.profiling import (
    env_labels,
    environment,
    ncu_command,
    nsys_command,
    plan,
    qdstrm_importer,
)
from rooflake.schema import ToolMissingError, UsageError

NSYS = shutil.which("nsys")
TARGET = ["python", "train.py", "--batch", "8"]


def invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(app, list(args), env=env)


def test_ncu_default_is_the_roofline_set_with_nvtx_all_processes_and_base_clocks() -> None:
    assert ncu_command(TARGET, output="out") == [
        "ncu",
        "--set",
        "roofline",
        "--nvtx",
        "--target-processes",
        "all",
        "--clock-control",
        "base",
        "--force-overwrite",
        "-o",
        "out",
        *TARGET,
    ]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"section_set": "full"}, ["--set", "full"]),
        ({"nvtx_include": ["rooflake@forward/"]}, ["--nvtx-include", "rooflake@forward/"]),
        (
            {"nvtx_include": ["rooflake@forward/layer1/", "rooflake@backward/"]},
            ["--nvtx-include", "rooflake@forward/layer1/", "--nvtx-include", "rooflake@backward/"],
        ),
        ({"kernel": "gemm|conv"}, ["--kernel-name", "regex:gemm|conv"]),
        ({"launch_skip": 10}, ["--launch-skip", "10"]),
        ({"launch_count": 5}, ["--launch-count", "5"]),
        ({"launch_skip": 0, "launch_count": 1}, ["--launch-skip", "0", "--launch-count", "1"]),
        ({"clock_control": "none"}, ["--target-processes", "all", "--clock-control", "none"]),
    ],
)
def test_ncu_options(options: dict, expected: list[str]) -> None:
    cmd = ncu_command(TARGET, output="out", **options)
    joined = " ".join(cmd)
    assert " ".join(expected) in joined
    assert cmd[-len(TARGET) :] == TARGET  # the target comes last, untouched
    assert "--nvtx" in cmd and "--clock-control" in cmd


@pytest.mark.parametrize(
    "options",
    [{"section_set": "detailed"}, {"launch_count": 0}, {"launch_skip": -1}, {"clock_control": "boost"}],
)
def test_ncu_bad_options(options: dict) -> None:
    with pytest.raises(UsageError):
        ncu_command(TARGET, output="out", **options)


def test_nsys_default_traces_cuda_nvtx_osrt_graph_nodes_and_exports_sqlite() -> None:
    assert nsys_command(TARGET, output="out") == [
        "nsys",
        "profile",
        "--trace=cuda,nvtx,osrt",
        "--cuda-graph-trace=node",
        "--sample=none",
        "--cpuctxsw=none",
        "--export=sqlite",
        "--force-overwrite=true",
        "-o",
        "out",
        *TARGET,
    ]


def test_nsys_cpu_only_trace_drops_the_graph_option() -> None:
    cmd = nsys_command(TARGET, output="out", trace=["nvtx", "osrt"])
    assert "--trace=nvtx,osrt" in cmd and not any(c.startswith("--cuda-graph") for c in cmd)


def test_plan_refuses_ncu_filters_with_nsys_and_an_empty_command() -> None:
    with pytest.raises(UsageError, match="use --ncu"):
        plan(TARGET, tool="nsys", kernel="gemm", dry_run=True)
    with pytest.raises(UsageError, match="use --ncu"):
        plan(TARGET, tool="nsys", clock_control="none", dry_run=True)
    with pytest.raises(UsageError, match="no command"):
        plan([], tool="ncu", dry_run=True)


def test_dry_run_prints_the_command_line(tmp_path: Path) -> None:
    r = invoke("profile", "--dry-run", "--ncu", "--kernel", "gemm", "-o", "rep", "--", *TARGET)
    assert r.exit_code == 0, r.output
    (line,) = r.stdout.splitlines()
    assert line.endswith(
        "--set roofline --nvtx --kernel-name regex:gemm --target-processes all "
        "--clock-control base --force-overwrite -o rep python train.py --batch 8"
    )
    r = invoke("profile", "--dry-run", "--nsys", "-o", "rep", "--", *TARGET)
    assert r.exit_code == 0, r.output
    assert r.stdout.split()[1:3] == ["profile", "--trace=cuda,nvtx,osrt"]


NCU_DRY = ["profile", "--dry-run", "--ncu", "-o", "rep"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], "--set roofline --nvtx --target-processes all --clock-control base --force-overwrite -o rep"),
        (["--set", "full"], "--set full --nvtx"),
        (
            ["--nvtx-include", "rooflake@forward/layer1/", "--nvtx-include", "rooflake@backward/"],
            "--nvtx --nvtx-include rooflake@forward/layer1/ --nvtx-include rooflake@backward/ --target-processes",
        ),
        (["--kernel", "gemm|conv"], "--kernel-name 'regex:gemm|conv'"),
        (
            ["--launch-skip", "3", "--launch-count", "2"],
            "--launch-skip 3 --launch-count 2 --target-processes",
        ),
        (["--clock-control", "none"], "--target-processes all --clock-control none --force-overwrite"),
    ],
)
def test_rl_profile_dry_run_passes_each_ncu_option(args: list[str], expected: str) -> None:
    r = invoke(*NCU_DRY, *args, "--", *TARGET)
    assert r.exit_code == 0, r.output
    (line,) = r.stdout.splitlines()
    assert expected in line and line.endswith(" -o rep python train.py --batch 8"), line


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            [],
            "profile --trace=cuda,nvtx,osrt --cuda-graph-trace=node --sample=none --cpuctxsw=none --export=sqlite",
        ),
        (
            ["--trace", "nvtx,osrt"],
            "profile --trace=nvtx,osrt --sample=none",
        ),  # no CUDA: no graph-node option
    ],
)
def test_rl_profile_dry_run_passes_each_nsys_option(args: list[str], expected: str) -> None:
    r = invoke("profile", "--dry-run", "--nsys", "-o", "rep", *args, "--", *TARGET)
    assert r.exit_code == 0, r.output
    (line,) = r.stdout.splitlines()
    assert expected in line and line.endswith(" -o rep python train.py --batch 8"), line


def test_bad_arguments_exit_2() -> None:
    assert invoke("profile", "--set", "bogus", "--", *TARGET).exit_code == 2
    assert invoke("profile", "--nsys", "--ncu", "--", *TARGET).exit_code == 2
    assert invoke("profile", "--nsys", "--kernel", "x", "--", *TARGET).exit_code == 2
    assert invoke("profile", "--launch-count", "0", "--", *TARGET).exit_code == 2
    assert invoke("profile", "--clock-control", "boost", "--", *TARGET).exit_code == 2
    assert invoke("profile", "--nsys", "--clock-control", "none", "--", *TARGET).exit_code == 2


@pytest.mark.parametrize(
    ("flag", "tool", "name"), [("--ncu", "ncu", "Nsight Compute"), ("--nsys", "nsys", "Nsight Systems")]
)
def test_a_missing_profiler_is_one_error_naming_it(
    flag: str, tool: str, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = invoke("profile", flag, "--store", str(tmp_path / "s"), "--", *TARGET, env={"PATH": str(tmp_path)})
    assert r.exit_code == 1
    (line,) = r.stderr.splitlines()
    assert line.startswith(f"Error: `{tool}` ({name}) is not on PATH: install NVIDIA {name}")
    assert not (tmp_path / "s").exists()
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolMissingError, match=f"`{tool}`"):
        plan(TARGET, tool=tool)
    assert plan(TARGET, tool=tool, dry_run=True).commands[0][0] == tool  # a dry run needs no profiler


def test_run_fields_a_caller_may_not_set_are_refused_before_reading(tmp_path: Path) -> None:
    from rooflake.pipeline import RUN_FIELDS, ingest_file
    from rooflake.schema import InputError

    assert {"command_line", "host"} <= set(RUN_FIELDS)
    with pytest.raises(InputError, match="run_fields run_id, source_path"):
        ingest_file(tmp_path / "none.sqlite", tmp_path / "s", run_fields={"run_id": "x", "source_path": "y"})
    assert not (tmp_path / "s").exists()
    dry = plan(TARGET, tool="nsys", dry_run=True)
    assert dry.run_fields() == {}  # nothing ran: nothing to record


def test_environment_facts() -> None:
    facts = environment()
    assert set(facts) == {"host", "gpu", "driver", "cuda", "torch", "python"}
    assert facts["python"] == ".".join(map(str, sys.version_info[:3]))
    try:
        import torch
    except ImportError:
        assert facts["torch"] == "not installed"
    else:
        assert facts["torch"] == torch.__version__
        assert facts["cuda"] == (torch.version.cuda or "none")
    labels = env_labels({**facts, "command": "python x.py"})
    assert "env.command" not in labels and labels["env.host"] == facts["host"]


SCRIPT = """
import time
import nvtx

for step in range(2):
    with nvtx.annotate("step", domain="demo"):
        with nvtx.annotate("work", domain="demo"):
            time.sleep(0.01)
"""


@pytest.mark.skipif(
    NSYS is None, reason="NVIDIA Nsight Systems `nsys` is not on PATH (../shared/tools/install-nsight.sh)"
)
def test_rl_profile_nsys_runs_imports_exports_and_ingests(tmp_path: Path) -> None:
    pytest.importorskip("nvtx")
    import duckdb

    assert qdstrm_importer(NSYS) is None or qdstrm_importer(NSYS).is_file()
    script = tmp_path / "demo.py"
    script.write_text(textwrap.dedent(SCRIPT))
    store = tmp_path / "store"
    args = ["profile", "--nsys", "--trace", "nvtx,osrt", "-l", "model=demo", "-o", str(tmp_path / "rec")]
    r = invoke(*args, "--store", str(store), "--", sys.executable, str(script))
    assert r.exit_code == 0, r.output
    last = r.stdout.splitlines()[-1].split()
    assert last[0] == "ingested" and last[2] == str(tmp_path / "rec.sqlite")
    assert (tmp_path / "rec.nsys-rep").exists() and not (tmp_path / "rec.qdstrm").exists()
    runs = str(store / "runs" / "*" / "*.parquet")
    ((run_id, labels, command_line, host),) = duckdb.execute(
        "SELECT run_id, labels, command_line, host FROM read_parquet($f)", {"f": runs}
    ).fetchall()
    assert run_id == last[1]
    # the runs row's own columns: the nsys command line that ran (the profiled command at its end) and the host
    ran = shlex.split(command_line)
    assert ran[0] == NSYS and ran[1:3] == ["profile", "--trace=nvtx,osrt"]
    assert ran[-2:] == [sys.executable, str(script)] and ran[ran.index("-o") + 1] == str(tmp_path / "rec")
    assert r.stdout.splitlines()[0] == "ran  " + command_line
    assert host == socket.gethostname() == labels["env.host"]
    assert (
        labels["model"] == "demo"
        and labels["env.torch"]
        and "NVIDIA Nsight Systems" in labels["env.profiler"]
    )
    ranges = str(store / "ranges" / "*" / "*.parquet")
    names = duckdb.execute(
        "SELECT name, depth FROM read_parquet($f) ORDER BY start_ns", {"f": ranges}
    ).fetchall()
    assert names == [("step", 0), ("work", 1)] * 2


STAND_IN_NCU = """#!/bin/sh
# a stand-in for ncu on this GPU-less machine: writes a real A10G report (../shared/fixtures) where -o says
if [ "$1" = "--version" ]; then echo "NVIDIA (R) Nsight Compute Command Line Profiler"; echo "Version 2022.3.0.0"; exit 0; fi
out=""
while [ $# -gt 0 ]; do [ "$1" = "-o" ] && out="$2"; shift; done
cp "{report}" "$out.ncu-rep"
"""


def test_rl_profile_ncu_records_command_line_host_and_clock_control(tmp_path: Path) -> None:
    """No GPU here: `ncu` is a script that writes a real report (the A10G SGEMM one) where -o says, so that what
    rl profile records around the report is checked: the command line that ran, the host, the clock control."""
    import os

    import duckdb

    from _support import FIXTURES_PRESENT, NCU

    if not FIXTURES_PRESENT:
        pytest.skip("needs ../shared/fixtures (a real .ncu-rep)")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    ncu = bindir / "ncu"
    ncu.write_text(STAND_IN_NCU.format(report=NCU / "AveryClapp__ESMM-Research__profile_output.ncu-rep"))
    ncu.chmod(0o755)
    store, rec = tmp_path / "store", tmp_path / "rec"
    args = [
        "profile",
        "--ncu",
        "--clock-control",
        "none",
        "-l",
        "model=esmm",
        "-o",
        str(rec),
        "--store",
        str(store),
    ]
    r = invoke(*args, "--", *TARGET, env={"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"})
    assert r.exit_code == 0, r.output
    status, run_id, report = r.stdout.splitlines()[-1].split()
    assert (status, report) == ("ingested", f"{rec}.ncu-rep")
    # its own connection, every row fetched: a result left open on the default connection fails a later test
    ((rid, command_line, host, gpu, labels),) = (
        duckdb.connect()
        .execute(
            "SELECT run_id, command_line, host, gpu_name, labels FROM read_parquet($f)",
            {"f": str(store / "runs" / "*" / "*.parquet")},
        )
        .fetchall()
    )
    assert rid == run_id and gpu == "NVIDIA A10G"
    assert command_line == shlex.join(
        [str(ncu), "--set", "roofline", "--nvtx", "--target-processes", "all", "--clock-control", "none",
         "--force-overwrite", "-o", str(rec), *TARGET]
    )  # fmt: skip
    assert host == socket.gethostname() == labels["env.host"]
    assert labels["env.clock_control"] == "none" and labels["model"] == "esmm"
    assert labels["env.profiler"] == "NVIDIA Nsight Compute Version 2022.3.0.0"  # `ncu --version`'s last line
