"""The rl CLI end to end on real reports; README's CLI reference equals `rl ... --help`."""

from __future__ import annotations

import csv
import io
import json
import runpy
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from rooflake.cli import app

from _support import fixture

ROOT = Path(__file__).resolve().parents[1]
A10G = fixture("AveryClapp__ESMM-Research__profile_output")
A40 = fixture("eschnett")


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_readme_cli_reference_is_current() -> None:
    mod = runpy.run_path(str(ROOT / "docs" / "cli_help.py"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert mod["render"](readme) == readme, "README.md CLI reference is stale: run `python docs/cli_help.py`"


def test_readme_setup_commands_use_a_real_fixture_and_ci_runs_the_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "../shared/fixtures/ncu/AveryClapp__ESMM-Research__profile_output.ncu-rep" in readme
    (test_cmd,) = [
        ln for ln in readme.splitlines() if ln.startswith(".venv/bin/pip install") and "pytest" in ln
    ]
    assert "'.[dev" in test_cmd and test_cmd.endswith(".venv/bin/python -m pytest")
    assert test_cmd in (ROOT / ".ci" / "run").read_text().splitlines()


@pytest.mark.parametrize("suffix", [".html", ".png", ".svg"])
def test_roofline_of_a_real_run(tmp_path: Path, suffix: str) -> None:
    store = tmp_path / "store"
    assert invoke("ingest", str(A10G), "--store", str(store)).exit_code == 0
    out = tmp_path / f"r{suffix}"
    r = invoke("roofline", "--store", str(store), "--level", "all", "--out", str(out))
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith(f"wrote {out}")
    data = out.read_bytes()
    if suffix == ".html":
        text = data.decode()
        assert "warptiling" in text and "<script src=" not in text
    elif suffix == ".png":
        assert data.startswith(b"\x89PNG")
    else:
        assert data.lstrip().startswith(b"<svg")


def test_roofline_lists_zero_flop_kernels_under_the_chart(tmp_path: Path) -> None:
    store = tmp_path / "store"
    invoke("ingest", str(A40), "--store", str(store))
    out = tmp_path / "a40.html"
    r = invoke("roofline", "--store", str(store), "--out", str(out))
    assert r.exit_code == 0, r.stderr
    assert "4 kernels without FLOPs" in r.stdout
    assert "Kernels without FLOPs" in out.read_text()


def test_sql_formats_and_list(tmp_path: Path) -> None:
    store = tmp_path / "store"
    invoke("ingest", str(A10G), "--store", str(store), "-l", "batch=64")
    q = "SELECT kernel_id, short_name, flops_fp32, nvtx_stack FROM kernels ORDER BY kernel_id"
    r = invoke("sql", q, "--store", str(store), "--format", "json")
    rows = json.loads(r.stdout)
    assert [x["short_name"] for x in rows] == [
        "one_blocktiling",
        "two_blocktiling",
        "vectorized_blocktiling",
        "warptiling",
    ]
    r = invoke("sql", q, "--store", str(store), "--format", "csv")
    parsed = list(csv.DictReader(io.StringIO(r.stdout)))
    assert float(parsed[3]["flops_fp32"]) == rows[3]["flops_fp32"]
    out = tmp_path / "k.parquet"
    r = invoke("sql", q, "--store", str(store), "--format", "parquet", "--out", str(out))
    assert r.exit_code == 0 and pq.read_table(out).num_rows == 4
    r = invoke(
        "sql", "SELECT * FROM kernel_roofline WHERE run_id = $run", "--store", str(store), "-p", "run=nope"
    )
    assert r.exit_code == 0 and "kernel_id" in r.stdout
    r = invoke("sql", "--list")
    assert "kernel_roofline" in r.stdout and "run_ceilings" in r.stdout
    r = invoke("sql", "SELECT labels['batch'] AS b FROM runs", "--store", str(store), "-f", "json")
    assert json.loads(r.stdout) == [{"b": "64"}]


def test_empty_store_answers_with_empty_views(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    r = invoke(
        "sql", "SELECT count(*) AS n FROM kernel_roofline", "--store", str(tmp_path / "empty"), "-f", "json"
    )
    assert r.exit_code == 0 and json.loads(r.stdout) == [{"n": 0}]
    r = invoke("roofline", "--store", str(tmp_path / "empty"))
    assert r.exit_code == 1 and "holds no runs" in r.stderr


@pytest.mark.parametrize(
    "command",
    [["runs"], ["sql", "SELECT 1"], ["check"], ["roofline", "ab"], ["layers"], ["whatif", "ab", "-s", "dram=2"],
     ["compare", "ab", "cd"], ["trajectory", "--vary", "batch"], ["ceilings", "ab"], ["report", "-o", "r"]],
)  # fmt: skip
def test_a_store_folder_that_does_not_exist_is_one_error_line(tmp_path: Path, command: list[str]) -> None:
    """A mistyped --store (or $RL_STORE) read as an empty store: `rl check` passed (0 findings, exit 0), `rl runs`
    and `rl sql` printed empty tables; the others blamed the run. Every reading command refuses it, as `rl doctor`
    did; the datasheet of a GPU needs no store."""
    typo = tmp_path / "typo"
    r = invoke(*command, "--store", str(typo))
    assert r.exit_code == 1 and r.stdout == "", r.output
    assert (
        r.stderr
        == f"Error: {typo}: no store there (no such folder; check --store or $RL_STORE; rl ingest creates one)\n"
    )
    assert not typo.exists()
    assert invoke("ceilings", "--gpu", "A10G", "--store", str(typo)).exit_code == 0


def test_version() -> None:
    r = invoke("--version")
    assert r.exit_code == 0 and r.stdout.startswith("rooflake ")


def test_check_on_real_reports(tmp_path: Path) -> None:
    store = tmp_path / "store"
    for name in ("flyinglandlord", "AlpriElse"):
        assert invoke("ingest", str(fixture(name)), "--store", str(store)).exit_code == 0
    r = invoke("check", "--store", str(store), "-f", "json")
    assert r.exit_code == 0
    found = {(row["check"], row["name"]) for row in json.loads(r.stdout)}
    # the H800 flash-attention action whose replay failed, and the H100 silu kernels whose L2 counter leaves out writes
    assert any(c == "nan_duration" and "flash_fwd_kernel" in (n or "") for c, n in found)
    assert any(c == "ai_order_violated" and n.startswith("silu_kernel_vector") for c, n in found)


def test_layers_of_a_run_with_a_failed_replay(tmp_path: Path) -> None:
    """The H800 report's failed replay (every value NaN) made its layer's FLOPs, AI and FLOP/s NaN beside
    ``counters_complete`` true; the layer now sums the other 4 launches, says they are 4 of 5, and the terminal
    says so (before the coverage lines, which end the output)."""
    store = tmp_path / "store"
    assert invoke("ingest", str(fixture("flyinglandlord")), "--store", str(store)).exit_code == 0
    sql = "select flops_fp32, bytes_dram, duration_ns from kernels order by kernel_id"
    kernels = json.loads(invoke("sql", sql, "--store", str(store), "-f", "json").stdout)
    good = [k for k in kernels if k["duration_ns"] != "nan"]
    assert (len(kernels), len(good)) == (5, 4) and all(k["flops_fp32"] != "nan" for k in good)
    r = invoke("layers", "--store", str(store), "-f", "json")
    (layer,) = json.loads(r.stdout)
    assert (layer["launches"], layer["launches_with_counters"], layer["counters_complete"]) == (5, 4, False)
    assert layer["flops"] == pytest.approx(sum(k["flops_fp32"] for k in good), rel=1e-12)
    assert layer["bytes_dram"] == sum(k["bytes_dram"] for k in good)
    assert layer["counted_time_ns"] == sum(k["duration_ns"] for k in good)
    assert layer["flops_per_s"] == pytest.approx(layer["flops"] * 1e9 / layer["counted_time_ns"], rel=1e-12)
    text = invoke("layers", "--store", str(store)).stdout
    table, said = text.split("flops, ai_* and flops_per_s cover ")
    assert said.startswith("4 of 5 launches, leaving out 1 ") and "NaN" not in table


def test_time_roofline_cli(tmp_path: Path) -> None:
    store = tmp_path / "store"
    invoke("ingest", str(A10G), "--store", str(store))
    r = invoke(
        "roofline",
        "--time",
        "--launch-overhead",
        "2000",
        "--out",
        str(tmp_path / "t.svg"),
        "--store",
        str(store),
    )
    assert r.exit_code == 0, r.stderr
    assert "t_o = 2 µs (option)" in r.stdout and "bounds: FP32 4" in r.stdout
    r = invoke("roofline", "--time", "--level", "all", "--store", str(store))
    assert r.exit_code == 2


def test_sql_table_macros_and_list(tmp_path: Path) -> None:
    """A parameterized named query is a table macro: usable from rl sql with -p (and plain DuckDB SQL)."""
    store = tmp_path / "store"
    invoke("ingest", str(A10G), "--store", str(store))
    q = "SELECT grain, count(*) AS n, min(launch_overhead_source) AS src FROM time_roofline($run, 1000) GROUP BY ALL"
    r = invoke("sql", q, "--store", str(store), "-p", "run=d9660c5cc48f9a68", "-f", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == [
        {"grain": "kernel", "n": 4, "src": "parameter"},
        {"grain": "layer", "n": 1, "src": "parameter"},
    ]
    listed = invoke("sql", "--list").stdout
    assert "time_roofline(run_id, launch_overhead_ns, launch_overhead_source)" in listed
    assert "kernel_roofline " in listed and "run_info" not in listed  # steps of the views are not listed


def test_guard_reports_os_errors_of_named_files_only(tmp_path: Path) -> None:
    import errno

    import typer

    from rooflake.cli.common import guard

    mine, other = tmp_path / "out" / "x.html", tmp_path / "elsewhere"

    @guard
    def command(out: Path, fail_on: str) -> None:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", fail_on)

    with pytest.raises(typer.Exit) as e:
        command(out=tmp_path / "out", fail_on=str(mine))  # under a folder the user named
    assert e.value.exit_code == 1
    with pytest.raises(FileNotFoundError):  # not a file the user named: a bug, its traceback shows
        command(out=mine, fail_on=str(other))


@pytest.mark.parametrize(
    ("args", "option", "why"),
    [
        (["roofline", "-d", "3"], "--depth", "--depth needs --by layer"),
        (["roofline", "--launch-overhead", "5"], "--launch-overhead", "--launch-overhead needs --time"),
        (["roofline", "--time", "--precision", "fp64"], "--precision", "--precision does not apply"),
        (
            ["profile", "--ncu", "--trace", "cuda", "--dry-run", "--", "python", "t.py"],
            "--trace",
            "use --nsys",
        ),
        (["profile", "--nsys", "--set", "full", "--dry-run", "--", "python", "t.py"], "--set", "use --ncu"),
    ],
)
def test_an_option_that_does_not_apply_is_refused(
    tmp_path: Path, args: list[str], option: str, why: str
) -> None:
    """These options were ignored without a word (the chart the same as without them), while their neighbours
    (--with without --by layer, --clock-control with --nsys) were refused: a bad argument, exit 2."""
    r = invoke(*args, "--store", str(tmp_path))
    assert r.exit_code == 2 and r.stdout == "", r.output
    assert f"Invalid value for {option}" in r.stderr and why in r.stderr


def test_rl_estimate_without_torch_is_one_error_line(tmp_path: Path) -> None:
    """torch is the optional extra rooflake[torch]: without it `rl estimate` ended in a ModuleNotFoundError
    traceback (the README's set-up installs rooflake without it)."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['torch'] = None; from rooflake.cli import main; sys.argv[0] = 'rl'; main()"
    )
    args = ["estimate", "torch_models:resnet50", "-i", "1x3x8x8", "--store", str(tmp_path / "s")]
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and p.stdout == "", p.stderr
    assert p.stderr == "Error: rl estimate needs torch: pip install 'rooflake[torch]'\n"
