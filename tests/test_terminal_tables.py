"""Terminal tables a person can read: each command's default table fits 80 and 120 columns, in human units,
hostile names escaped; machine formats keep raw values, and -f csv round-trips through Python and DuckDB."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from rooflake.cli import app
from rooflake.cli.output import _width, clip, csv_field, fit_widths, human, render_text

from _support import FIXTURES_PRESENT, NCU, tiny_run

BEFORE = NCU / "Bias92__flashattn-cuda__docs__profiling__ncu_sections__fa3_before_n4096_full.ncu-rep"
AFTER = NCU / "Bias92__flashattn-cuda__docs__profiling__ncu_sections__db_full_after_n4096_full.ncu-rep"
A10G = NCU / "AveryClapp__ESMM-Research__profile_output.ncu-rep"
NVTX = NCU / "NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__manual_nvtx.ncu-rep"
BOX = "┌│╞└"


def rl(*args: str, width: int = 80):
    r = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": str(width)})
    assert r.exit_code in (0, 3), (args, r.output)
    return r


def table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line[:1] in BOX]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    if not FIXTURES_PRESENT:
        pytest.skip("no fixtures")
    root = tmp_path_factory.mktemp("tables") / "store"
    ids = {}
    for name, path in {"before": BEFORE, "after": AFTER, "a10g": A10G, "nvtx": NVTX}.items():
        r = rl("ingest", path, "--store", root, "--workers", "1")
        ids[name] = r.stdout.split()[1]
    ids["root"] = str(root)
    return ids


def commands(s: dict[str, str]) -> dict[str, list[str]]:
    return {
        "compare": ["compare", s["before"], s["after"]],
        "compare-kernels-gone": ["compare", s["a10g"], s["before"], "--fail-if-slower", "1"],
        "layers": ["layers", s["nvtx"], "-d", "2"],
        "layers-a10g": ["layers", s["a10g"]],
        "whatif": ["whatif", s["a10g"], "-s", "dram=2", "--by", "kernel"],
        "runs": ["runs"],
        "sql": ["sql", "SELECT * FROM kernel_roofline"],
        "ceilings": ["ceilings", s["a10g"]],
        "check": ["check", s["a10g"]],
    }


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize(
    "name",
    [
        "compare",
        "compare-kernels-gone",
        "layers",
        "layers-a10g",
        "whatif",
        "runs",
        "sql",
        "ceilings",
        "check",
    ],
)
def test_each_default_table_fits_the_terminal(store: dict[str, str], name: str, width: int) -> None:
    r = rl(*commands(store)[name], "--store", store["root"], width=width)
    lines = table_lines(r.stdout)
    assert lines, r.stdout
    assert max(map(_width, lines)) <= width, "\n" + r.stdout
    if name.startswith("compare"):  # the verdict too is wrapped to the width
        assert max(map(_width, r.stdout.splitlines())) <= width, r.stdout


def test_compare_answers_in_human_units(store: dict[str, str]) -> None:
    out = rl("compare", store["before"], store["after"], "--store", store["root"], width=120).stdout
    row = next(line for line in out.splitlines() if "fa3_fwd_kernel → fa3db_full_fwd_kernel" in line)
    assert "1.39 ms → 989 µs" in row and "-28.8 %" in row and "TENSOR" in row and "renamed" in row
    out = rl(
        "compare", store["a10g"], store["before"], "--store", store["root"], "--fail-if-slower", "1"
    ).stdout
    assert "1.21 ms → 1.39 ms" in out and "+14.7 %" in out and "FP32 → TENSOR" in out and "▲ FAIL" in out
    wide = rl("compare", store["before"], store["after"], "--store", store["root"], "--wide").stdout
    assert "base_fraction_of_roof" in wide and "61.5 %" in wide and "25.3 TFLOP/s" in wide


def test_ceilings_show_answers_in_human_units(store: dict[str, str]) -> None:
    """``rl ceilings show``: each source's ceiling in its row's unit (the unit column is in the cells), the ratio to
    the datasheet; clocks and the other ratios behind --wide; -f csv keeps the raw values."""
    out = rl("ceilings", store["a10g"], "--store", store["root"], width=80).stdout
    dram = next(line for line in out.splitlines() if line.startswith("│ DRAM"))
    assert "598 GB/s" in dram and "600 GB/s" in dram and "0.997" in dram, out
    fp32 = next(line for line in out.splitlines() if line.startswith("│ FP32"))
    assert "26.9 TFLOP/s" in fp32 and "byte/s" not in out and "clock" not in out
    wide = rl("ceilings", store["a10g"], "--store", store["root"], "--wide").stdout
    assert "report_clock_hz" in wide and "6.23 GHz" in wide
    raw = rl("ceilings", store["a10g"], "--store", store["root"], "-f", "csv").stdout
    assert raw.startswith("ceiling,kind,unit,") and "DRAM,bandwidth,byte/s,DRAM,5.98489792091599" in raw


def test_layers_and_wide(store: dict[str, str]) -> None:
    out = rl("layers", store["nvtx"], "-d", "2", "--store", store["root"]).stdout
    assert "249 µs" in out and "59.0 %" in out and "run_test/daxpy" in out  # the path's leaf kept when cut
    wide = rl("layers", store["nvtx"], "-d", "2", "--store", store["root"], "--wide").stdout
    assert "launches_with_counters" in wide and "kernel_time_ns" in wide
    raw = json.loads(rl("layers", store["nvtx"], "-d", "2", "--store", store["root"], "-f", "json").stdout)
    assert raw[0]["gpu_time_ns"] == 249216  # machine formats: raw ns, as before


def test_sql_keeps_every_column_and_marks_what_is_cut(store: dict[str, str]) -> None:
    out = rl("sql", "SELECT * FROM kernel_roofline", "--store", store["root"]).stdout
    assert "…" in out and "more column(s) not shown at this width" in out and "flops_uncounted" in out
    wide = rl("sql", "SELECT * FROM kernel_roofline", "--store", store["root"], "--wide").stdout
    lines = table_lines(wide)
    assert max(map(_width, lines)) > 200 and "flops_uncounted" in lines[1]


HOSTILE = "[bold red]k[/]\x1b]0;owned\x07\x1b[2J\rfake\u202e"


def test_hostile_names_stay_escaped(tmp_path: Path) -> None:
    kernels = [
        {"kernel_id": 0, "name": HOSTILE, "short_name": HOSTILE, "duration_ns": 1e6, "flops_fp32": 1e9,
         "bytes_dram": 1e9, "nvtx_path": f"d:{HOSTILE}", "nvtx_stack": [HOSTILE], "nvtx_domain": "d"},
    ]  # fmt: skip
    tiny_run(tmp_path, "a" * 16, [dict(k) for k in kernels], [])
    tiny_run(tmp_path, "b" * 16, [dict(k, duration_ns=2e6) for k in kernels], [])
    for args in (["compare", "a" * 16, "b" * 16], ["layers", "a" * 16], ["sql", "SELECT name FROM kernels"]):
        for width in (80, 120):
            out = rl(*args, "--store", tmp_path, width=width).stdout
            assert not any(c in out for c in "\x1b\x07\r\u202e"), repr(out)
            assert "\\x1b" in out or "\\u202e" in out  # (a layer's path is cut from its start)
            if args[0] != "layers":  # rich markup stays text: tables are never printed through rich
                assert "[bold red]k[/]" in out
    out = rl("compare", "a" * 16, "b" * 16, "--store", tmp_path, width=200).stdout
    assert "[bold red]k[/]\\x1b]0;owned\\x07\\x1b[2J\\x0dfake\\u202e" in out and "▲ slower" in out


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (0.5, "ns", "0.5 ns"),
        (999.0, "ns", "999 ns"),
        (999.4, "ns", "999 ns"),
        (999.6, "ns", "1 µs"),  # rounds up: the next unit
        (1000.0, "ns", "1 µs"),
        (1.389856e6, "ns", "1.39 ms"),
        (999.6e6, "ns", "1 s"),
        (5e9, "ns", "5 s"),
        (3.6e12, "ns", "3600 s"),
        (1.0, "B/s", "1 B/s"),
        (999.0, "B/s", "999 B/s"),
        (999.6, "B/s", "1 kB/s"),
        (5.9849e11, "B/s", "598 GB/s"),
        (2.04e12, "B/s", "2.04 TB/s"),
        (999.6e12, "B/s", "1 PB/s"),
        (2.5267e13, "FLOP/s", "25.3 TFLOP/s"),
        (0.615297, "%", "61.5 %"),
        (-0.288352, "+%", "-28.8 %"),
        (0.147, "+%", "+14.7 %"),
        (7602.716, "FLOP/B", "7603"),
        (61.574, "FLOP/B", "61.6"),
        (None, "ns", "—"),
        (float("nan"), "FLOP/s", "NaN"),
        (3, None, "3"),
    ],
)
def test_units_at_the_edges(value: float | None, unit: str | None, text: str) -> None:
    assert human(value, unit) == text


def test_the_width_rule() -> None:
    assert fit_widths([10, 5], [True, False], None) == [10, 5]
    assert fit_widths([40, 10], [True, False], 40) == [23, 10]  # the name gives way, the number stays
    even = fit_widths([30, 30, 30], [True] * 3, 50)
    assert sum(even) + 3 * 3 + 1 <= 50 and max(even) - min(even) <= 1  # the widest cut first, alike
    assert len(fit_widths([8] * 30, [True] * 30, 80)) < 30  # too many columns: the first ones, then "…"
    assert (
        clip("abcdef", 4) == "abc…"
        and clip("abcdef", 4, start=True) == "…def"
        and clip("名前名前", 5) == "名前…"
    )


def test_the_sql_table_without_a_width_is_unchanged() -> None:
    import pyarrow as pa

    t = pa.table({"name": ["x" * 100], "n": [1]})
    assert max(map(_width, render_text(t).splitlines())) > 80  # no width: every character polars showed
    assert max(map(_width, render_text(t, 40).splitlines())) <= 40


TRICKY = ["plain", "with, comma", 'with "quote"', "two\nlines", "", None, "  spaces ", "tab\there", "ünï"]


def test_csv_quotes_only_where_needed_and_round_trips(tmp_path: Path) -> None:
    import pyarrow as pa

    from rooflake.cli.output import _csv

    assert [csv_field(v) for v in ("a", "a,b", 'a"b', "a\nb", "", None)] == [
        "a", '"a,b"', '"a""b"', '"a\nb"', '""', ""
    ]  # fmt: skip
    table = pa.table(
        {
            "s": TRICKY,
            "x": [1.5, 2.5e13, None, 0.1, -0.0, 1e-300, 3.0, 4.0, 5.0],
            "i": [1, None, 3, 4, 5, 6, 7, 8, 2**62],
            "b": [True, False, None, True, True, True, True, True, True],
        }
    )
    data = _csv(table).decode()
    assert data.startswith("s,x,i,b\nplain,1.5,1,true\n")
    rows = list(csv.reader(io.StringIO(data)))
    assert rows[0] == ["s", "x", "i", "b"]
    assert [r[0] for r in rows[1:]] == [v or "" for v in TRICKY]
    assert [float(r[1]) if r[1] else None for r in rows[1:]] == table.column("x").to_pylist()
    path = tmp_path / "t.csv"
    path.write_text(data)
    # (DuckDB reads a quoted "" as NULL unless allow_quoted_nulls = false: then the two are told apart)
    back = duckdb.sql(f"SELECT * FROM read_csv('{path}', allow_quoted_nulls = false)").arrow()
    back = back.read_all() if hasattr(back, "read_all") else back
    assert back.column("s").to_pylist() == TRICKY  # newlines, quotes, spaces kept
    assert back.column("x").to_pylist() == table.column("x").to_pylist()
    assert back.column("i").to_pylist() == table.column("i").to_pylist()
    assert back.column("b").to_pylist() == table.column("b").to_pylist()


def test_cli_csv_round_trips_against_json(store: dict[str, str]) -> None:
    args = ["layers", store["a10g"], "--store", store["root"]]
    data = rl(*args, "-f", "csv").stdout
    assert not data.startswith('"')
    want = json.loads(rl(*args, "-f", "json").stdout)
    got = list(csv.DictReader(io.StringIO(data)))
    assert [r["layer"] for r in got] == [r["layer"] for r in want]
    assert [float(r["gpu_time_ns"]) for r in got] == [r["gpu_time_ns"] for r in want]
    assert [float(r["flops_per_s"]) for r in got] == [r["flops_per_s"] for r in want]
