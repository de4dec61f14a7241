"""``-o`` paths that cannot be written (issue 10), and the one rule every command follows for its output path:
missing parent directories are created; a path that cannot be written (its parent a file, a read-only
directory, a full disk) gives exit 1 and one ``Error:`` line naming it, no traceback; a device is written in
place, never replaced. Also: the text table shows control characters from NVTX text escaped.
"""

from __future__ import annotations

import os
import stat
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
