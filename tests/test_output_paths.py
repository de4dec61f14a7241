"""``-o`` paths that cannot be written (issue 10), and the one rule every command follows for its output path:
missing parent directories are created; a path that cannot be written (its parent a file, a read-only
directory, a full disk) gives exit 1 and one ``Error:`` line naming it, no traceback; a device is written in
place, never replaced. Also: the text table shows control characters from NVTX text escaped.
"""

from __future__ import annotations

import datetime as dt
import os
import stat
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from rooflake.cli import app
from rooflake.cli.output import printable, render_markdown, render_text

from _support import fixture

ESMM = fixture("AveryClapp__ESMM-Research__profile_output")
DEV_FULL = Path("/dev/full")


def rl(*args: str) -> object:
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("out_store") / "store"
    r = rl("ingest", ESMM, "--store", root)
    assert r.exit_code == 0, r.stderr
    return root


# each command with its output option, and the output name it writes (a file, or the report's directory)
COMMANDS = {
    "roofline": (["roofline", "--level", "all"], "chart.html"),
    "roofline --time": (["roofline", "--time"], "time.svg"),
    "report": (["report"], "rep"),
    "check": (["check", "-f", "csv"], "checks.csv"),
    "sql": (["sql", "SELECT run_id, gpu_name FROM runs"], "runs.txt"),
}


def _one_error_line(r: object, path: Path) -> None:
    assert r.exit_code == 1, (r.exit_code, r.stdout, r.stderr, r.exception)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.stderr
    assert str(path) in lines[0], lines[0]
    assert "Traceback" not in r.stderr + r.stdout


@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_missing_parents_are_created(store: Path, tmp_path: Path, cmd: str) -> None:
    args, name = COMMANDS[cmd]
    out = tmp_path / "new" / "deeper" / name
    r = rl(*args, "--store", store, "-o", out)
    assert r.exit_code == 0, r.stderr
    assert out.is_dir() if cmd == "report" else out.is_file() and out.stat().st_size > 0


@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_parent_is_a_file(store: Path, tmp_path: Path, cmd: str) -> None:
    args, name = COMMANDS[cmd]
    (tmp_path / "afile").write_text("not a directory")
    out = tmp_path / "afile" / name
    _one_error_line(rl(*args, "--store", store, "-o", out), out)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_read_only_directory(store: Path, tmp_path: Path, cmd: str) -> None:
    args, name = COMMANDS[cmd]
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        out = ro / name
        _one_error_line(rl(*args, "--store", store, "-o", out), out)
        assert list(ro.iterdir()) == []  # no temporary file left behind
    finally:
        ro.chmod(0o755)


needs_dev_full = pytest.mark.skipif(not DEV_FULL.exists(), reason="no /dev/full on this system")


@needs_dev_full
@pytest.mark.parametrize("cmd", [c for c in COMMANDS if c != "report"])
def test_full_disk(store: Path, tmp_path: Path, cmd: str) -> None:
    """An output path that is a link to /dev/full (every write fails with ENOSPC): the device is written in place
    (the link and the device stay), and the error names the path."""
    args, name = COMMANDS[cmd]
    out = tmp_path / name
    out.symlink_to(DEV_FULL)
    _one_error_line(rl(*args, "--store", store, "-o", out), out)
    assert out.is_symlink() and stat.S_ISCHR(DEV_FULL.stat().st_mode)


@needs_dev_full
@pytest.mark.parametrize("cmd", ["sql", "report"])
def test_onto_dev_full(store: Path, cmd: str) -> None:
    """``-o /dev/full`` itself: ENOSPC for a file, "not a directory" for the report; the device is never replaced."""
    before = DEV_FULL.stat()
    _one_error_line(rl(*COMMANDS[cmd][0], "--store", store, "-o", DEV_FULL), DEV_FULL)
    after = DEV_FULL.stat()
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def test_unknown_suffix_is_not_a_traceback(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "chart.pdf"
    r = rl("roofline", "--store", store, "-o", out)
    assert r.exit_code in (1, 2) and "Traceback" not in r.stderr
    assert not out.exists()


HOSTILE = "layer\x1b]0;owned\x07\x1b[2J\rfake\u202eevil"


def test_table_output_escapes_control_characters() -> None:
    table = pa.table({"name": [HOSTILE, None], "stack": [[HOSTILE], []], "n": [1, 2]})
    for text in (render_text(table), render_markdown(table)):
        assert not any(ch in text for ch in "\x1b\x07\r\u202e"), repr(text)
        assert "layer\\x1b]0;owned\\x07\\x1b[2J\\x0dfake\\u202eevil" in text
    assert printable("tab\there\nnew") == "tab\\x09here\\x0anew"
    assert printable("naïve ∑ 名前 \\x1b") == "naïve ∑ 名前 \\x1b"  # other characters as they are


def test_sql_table_escapes_but_csv_and_json_stay_faithful(store: Path) -> None:
    query = "SELECT chr(27) || ']0;owned' || chr(7) || chr(13) || 'x' AS nvtx"
    r = rl("sql", "--store", store, query)
    assert r.exit_code == 0, r.stderr
    assert "\x1b" not in r.stdout and "\\x1b]0;owned\\x07\\x0dx" in r.stdout
    r = rl("sql", "--store", store, "-f", "csv", query)
    assert "\x1b]0;owned\x07\rx" in r.stdout
    r = rl("sql", "--store", store, "-f", "json", query)
    assert "\\u001b]0;owned\\u0007\\rx" in r.stdout


_TZ = dt.timezone.utc
# every kind of value a store or a user's SQL gives, with the float cases of polars' fmt_float rules
LOOKS = {
    "floats": pa.table(
        {
            "f": [
                0.1,
                1 / 3,
                123456.789,
                999999.5,
                1e6,
                1234567.0,
                1e15,
                1e16,
                1e-6,
                1.5e-6,
                1e-7,
                0.000123456789,
            ]
            + [-1e-7, float("inf"), float("-inf"), 100.0, 0.0, -0.0, 2.0**53, 12345678.9, 1e21, 5e-324]
            + [float("nan"), -123456789.123, 0.997483333, 12197522.333, 34359738368.0, 6234.0, 4.98, None]
            + [
                999999.0,
                -999999.0,
                1e-5,
                0.1 + 0.2,
                1.7976931348623157e308,
                2.5e-10,
                123456789.0,
                99999999.0,
            ],
        }
    ),
    "float32": pa.table({"f": pa.array([0.1, 1.5, 3.3333333, None, 1e10], pa.float32())}),
    "text": pa.table(
        {"s": ["x" * 85, "é" * 85, "a", None, "", "naïve ∑"], "i": [1, -20000000000, None, 0, 2**62, 7]}
    ),
    "nested": pa.table(
        {
            "l": [[1.0, 2.5e10, None], [], None, [1e-7]],
            "st": [{"a": "x", "b": 1.0}, None, {"a": None, "b": 2.0}, {"a": "y", "b": None}],
            "bl": [b"\x00ab" * 70, b"", None, b'"'],
            "l4": [["a", "b", "c", "d"], ["a", "b", "c"], ["y" * 30, "z" * 30, "w" * 30], None],
        }
    ),
    "maps": pa.table(
        {
            "m": pa.array(
                [[("a", "b"), ("c", "d"), ("e", "f"), ("g", "h")], [], None, [("k", None)]],
                pa.map_(pa.string(), pa.string()),
            ),
            "lm": pa.array([[[("a", 1)]], None, [], [[]]], pa.list_(pa.map_(pa.string(), pa.int64()))),
            "d": pa.array(
                [Decimal("1.50"), None, Decimal("-0.01"), Decimal("123456789.10")], pa.decimal128(12, 2)
            ),
            "b": [True, False, None, True],
        }
    ),
    "times": pa.table(
        {
            "t": pa.array([dt.time(10, 0, 0, 500000), dt.time(1, 2, 3), None]),
            "ts": pa.array(
                [
                    dt.datetime(2024, 1, 1, 10, 0, 0, 1000),
                    dt.datetime(2024, 1, 1),
                    dt.datetime(2024, 1, 1, 0, 0, 0, 7),
                ],
                pa.timestamp("us"),
            ),
            "tz": pa.array(
                [dt.datetime(2024, 1, 1, 10, 0, 0, 1000, _TZ), dt.datetime(2024, 7, 1, tzinfo=_TZ), None],
                pa.timestamp("us", tz="UTC"),
            ),
            "date": pa.array([dt.date(2024, 1, 1), None, dt.date(1, 1, 1)]),
        }
    ),
    "empty": pa.table({"a": pa.array([], pa.int64()), "bb": pa.array([], pa.string())}),
    "no columns": pa.table({}),
}


@pytest.mark.parametrize("name", list(LOOKS))
def test_text_table_looks_as_polars_printed_it(name: str) -> None:
    """The terminal table is drawn without polars (0.15 s to import, issue 14) but looks as polars drew it before,
    from an Arrow table and from DuckDB's own Python values (``rl sql``, ``rl runs``) alike."""
    import duckdb
    import polars as pl

    from rooflake.cli.output import render_rows
    from rooflake.schema.duck import fetch_rows

    table = LOOKS[name]
    with pl.Config(
        tbl_rows=-1,
        tbl_cols=-1,
        fmt_str_lengths=80,
        tbl_width_chars=65_000,
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
        tbl_hide_dtype_separator=True,
    ):
        want = str(pl.from_arrow(table))
    assert render_text(table) == want
    if table.num_columns:
        con = duckdb.connect()
        con.execute("SET TimeZone = 'UTC'")  # as the Arrow column's zone
        con.register("t", table)
        assert render_rows(fetch_rows(con, "FROM t")) == want
