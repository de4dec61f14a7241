"""Bad input: one ``Error: ...`` line naming the input, exit 1 (2 for bad arguments), no traceback, and the store
exactly as before."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflake.cli import app

from _support import FIXTURES, fixture, snapshot

GOOD = fixture("NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__CuVectorAddDrv")
ROOFLINE_READY = fixture("AveryClapp__ESMM-Research__profile_output")


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    r = CliRunner().invoke(app, ["ingest", str(GOOD), "--store", str(root)])
    assert r.exit_code == 0, r.output
    return root


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


def assert_one_error(code: int, err: str, *needles: str, exit_code: int = 1) -> None:
    assert code == exit_code, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], (n, lines[0])


def _bad_files(tmp: Path) -> dict[str, tuple[Path, str]]:
    data = ROOFLINE_READY.read_bytes()
    rng = random.Random(1234)
    files = {
        "truncated": (data[: len(data) // 2], "truncated"),
        "empty": (b"", "empty file"),
        "random": (bytes(rng.getrandbits(8) for _ in range(4096)), "unknown format"),
        "magic_then_garbage": (b"NVR\x00" + bytes(rng.getrandbits(8) for _ in range(4096)), "truncated"),
    }
    out = {}
    for name, (content, msg) in files.items():
        p = tmp / f"{name}.ncu-rep"
        p.write_bytes(content)
        out[name] = (p, msg)
    return out


@pytest.mark.parametrize("case", ["truncated", "empty", "random", "magic_then_garbage"])
def test_bad_report_files(store: Path, tmp_path: Path, case: str) -> None:
    path, msg = _bad_files(tmp_path)[case]
    before = snapshot(store)
    code, out, err = run("ingest", str(path), "--store", str(store))
    assert_one_error(code, err, str(path), msg)
    assert snapshot(store) == before


def test_bad_file_among_good_ones_ingests_the_good(store: Path, tmp_path: Path) -> None:
    d = tmp_path / "mixed"
    d.mkdir()
    shutil.copy(ROOFLINE_READY, d / "good.ncu-rep")
    (d / "bad.ncu-rep").write_bytes(ROOFLINE_READY.read_bytes()[:1000])
    code, out, err = run("ingest", str(d / "good.ncu-rep"), str(d / "bad.ncu-rep"), "--store", str(store))
    assert code == 1
    assert [ln for ln in err.splitlines() if ln.startswith("Error: ")] == [
        f"Error: {d / 'bad.ncu-rep'}: truncated Nsight Compute report (a block ends at byte "
        + err.split("a block ends at byte ")[1].split("\n")[0]
    ]
    assert "ingested" in out and "good.ncu-rep" in out


def test_directory_without_reports(store: Path, tmp_path: Path) -> None:
    d = tmp_path / "nothing"
    d.mkdir()
    (d / "notes.txt").write_text("no reports here")
    before = snapshot(store)
    code, _, err = run("ingest", str(d), "--store", str(store))
    assert_one_error(
        code, err, str(d), "holds no file rl ingest reads (found by first bytes): Nsight Compute"
    )
    assert snapshot(store) == before


def test_missing_path_and_empty_glob(store: Path, tmp_path: Path) -> None:
    code, _, err = run("ingest", str(tmp_path / "nope.ncu-rep"), "--store", str(store))
    assert_one_error(code, err, "nope.ncu-rep", "no such file")
    code, _, err = run("ingest", str(tmp_path / "*.ncu-rep"), "--store", str(store))
    assert_one_error(code, err, "no file matches")


def test_unwritable_store(tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    code, _, err = run("ingest", str(GOOD), "--store", str(blocker / "store"))
    assert_one_error(code, err, str(blocker / "store"), "not writable")
    assert blocker.read_text() == "not a directory"


def test_unknown_run_id(store: Path) -> None:
    before = snapshot(store)
    code, _, err = run("roofline", "deadbeef", "--store", str(store), "--out", str(store.parent / "x.html"))
    assert_one_error(code, err, "no run 'deadbeef'")
    assert snapshot(store) == before and not (store.parent / "x.html").exists()


def test_sql_syntax_error(store: Path) -> None:
    before = snapshot(store)
    code, _, err = run("sql", "SELEC * FROM kernels", "--store", str(store))
    assert_one_error(code, err, "SQL failed", "syntax error")
    code, _, err = run("sql", "SELECT no_such_column FROM kernels", "--store", str(store))
    assert_one_error(code, err, "no_such_column")
    assert snapshot(store) == before


def test_roofline_without_counters_says_what_to_collect(store: Path, tmp_path: Path) -> None:
    code, _, err = run("roofline", "--store", str(store), "--out", str(tmp_path / "r.html"))
    assert_one_error(
        code, err, "has no counters for a DRAM roofline", "dram__bytes.sum", "ncu --set roofline"
    )
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["ingest", str(GOOD), "--label", "novalue"],
        ["roofline", "--level", "l3"],
        ["roofline", "--precision", "int8"],
        ["sql", "SELECT 1", "--format", "xml"],
        ["sql", "SELECT 1", "--format", "parquet"],
        ["roofline", "--out", "chart.pdf"],
    ],
)
def test_bad_arguments_exit_2(store: Path, args: list[str]) -> None:
    before = snapshot(store)
    code, _, err = run(*args, "--store", str(store))
    assert code == 2, err
    assert "Traceback" not in err
    assert snapshot(store) == before


def test_nsys_rep_renamed_without_nsys_names_the_tool(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "renamed.ncu-rep"
    path.write_bytes((FIXTURES / "nsys" / "MohanadOdema__DLProf__nsys_profile.nsys-rep").read_bytes())
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools-here"))
    before = snapshot(store)
    code, _, err = run("ingest", str(path), "--store", str(store))
    assert_one_error(code, err, str(path), "`nsys`", "nsys export --type sqlite")
    assert snapshot(store) == before


def test_sqlite_that_is_not_an_nsys_export(store: Path, tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (x INTEGER)")
    before = snapshot(store)
    code, _, err = run("ingest", str(path), "--store", str(store))
    assert_one_error(code, err, str(path), "not an Nsight Systems export")
    assert snapshot(store) == before


def test_format_comes_from_the_bytes_not_the_suffix(store: Path, tmp_path: Path) -> None:
    path = tmp_path / "actually_nsys.ncu-rep"
    path.write_bytes((FIXTURES / "nsys" / "GindaChen__nsys-ai__tests__fixtures__mock.sqlite").read_bytes())
    code, out, err = run("ingest", str(path), "--store", str(store), "--json")
    assert code == 0, err
    assert '"kernels": 2' in out


def _flip(data: bytes, seed: int, n: int = 3) -> bytes:
    """``data`` with ``n`` bytes changed past the header: the NVR\\0 framing stays intact, the content does not."""
    rng = random.Random(seed)
    b = bytearray(data)
    for _ in range(n):
        i = rng.randrange(64, len(b))
        b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def test_corrupt_content_never_gives_a_traceback(store: Path, tmp_path: Path) -> None:
    """Hostile files: flipped bytes inside a well-framed report either ingest or give one Error line."""
    data = GOOD.read_bytes()
    outcomes = set()
    for seed in range(12):
        path = tmp_path / f"corrupt{seed}.ncu-rep"
        path.write_bytes(_flip(data, seed))
        code, _, err = run("ingest", str(path), "--store", str(store / ".." / f"s{seed}"))
        assert "Traceback" not in err
        if code != 0:
            assert_one_error(code, err, str(path))
        outcomes.add(code)
    assert outcomes == {0, 1}  # some flips land in values (ingest), some break the report (one Error line)


def test_a_crashing_file_does_not_stop_the_batch(store: Path, tmp_path: Path) -> None:
    d = tmp_path / "batch"
    d.mkdir()
    shutil.copy(ROOFLINE_READY, d / "good.ncu-rep")
    (d / "bad.ncu-rep").write_bytes(ROOFLINE_READY.read_bytes()[:100])
    code, out, err = run("ingest", str(d), "--store", str(store))
    assert code == 1 and "good.ncu-rep" in out and err.count("Error: ") == 1


def test_fifo_is_refused_not_read(store: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.ncu-rep"
    os.mkfifo(fifo)
    before = snapshot(store)
    code, _, err = run("ingest", str(fifo), "--store", str(store))
    assert_one_error(code, err, str(fifo), "not a regular file")
    assert snapshot(store) == before


def test_failed_ingest_into_a_new_store_creates_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ncu-rep"
    bad.write_bytes(b"\x00" * 100)
    code, _, err = run("ingest", str(bad), "--store", str(tmp_path / "new-store"))
    assert_one_error(code, err, str(bad))
    assert not (tmp_path / "new-store").exists()


def test_output_into_a_missing_directory(store: Path, tmp_path: Path) -> None:
    """One rule for every command's -o: missing parent directories are created (tests/test_output_paths.py)."""
    for fmt in ("csv", "parquet"):
        out = tmp_path / "no" / fmt / "x.out"
        code, _, err = run("sql", "SELECT 1", "-f", fmt, "-o", str(out), "--store", str(store))
        assert code == 0 and out.stat().st_size > 0, err
    code, _, _ = run("runs", "-f", "parquet", "--store", str(store))
    assert code == 2  # rl runs prints: its --help offers no Parquet (it listed one it always refused)
    code, out, _ = run("runs", "--help")
    assert code == 0 and "<table|csv|json>" in out and "parquet>" not in out


def test_store_path_problems(tmp_path: Path) -> None:
    code, _, err = run("runs", "--store", str(tmp_path / "st[1]"))
    assert_one_error(code, err, "glob character")
    f = tmp_path / "file"
    f.write_text("x")
    code, _, err = run("runs", "--store", str(f))
    assert_one_error(code, err, "not a directory")


def test_damaged_parquet_in_the_store(store: Path) -> None:
    part = next((store / "kernels").glob("run_id=*/part-0.parquet"))
    part.write_bytes(part.read_bytes()[:100])
    code, _, err = run("sql", "SELECT count(*) FROM kernels", "--store", str(store))
    assert_one_error(code, err)


def test_corrupt_nsys_export_pages(store: Path, tmp_path: Path) -> None:
    """Damaged pages inside an nsys export (read on two threads) give one Error line and leave the store as it was."""
    data = (FIXTURES / "nsys" / "GindaChen__nsys-ai__tests__fixtures__mfu_2gpu_before.sqlite").read_bytes()
    before = snapshot(store)
    for seed in range(3):
        rng = random.Random(seed)
        b = bytearray(data)
        for _ in range(200):
            b[rng.randrange(len(b) // 4, len(b))] = rng.randrange(256)
        path = tmp_path / f"damaged{seed}.sqlite"
        path.write_bytes(bytes(b))
        code, _, err = run("ingest", str(path), "--store", str(store))
        assert_one_error(code, err, str(path), "malformed")
        assert snapshot(store) == before


def test_a_file_name_with_a_newline_gives_one_line(store: Path, tmp_path: Path) -> None:
    """The name is quoted like a Python string literal: the Error line stays one line (issue 10)."""
    path = tmp_path / "bad\nname.ncu-rep"
    path.write_bytes(b"garbage")
    before = snapshot(store)
    code, _, err = run("ingest", str(path), "--store", str(store))
    assert_one_error(code, err, repr(str(path)), "unknown format")
    assert snapshot(store) == before


def test_an_export_named_with_uri_characters_is_read_as_named(tmp_path: Path) -> None:
    """`rl ingest 'run#2.sqlite'` read a file named `run` beside it (issue 10): the file named is the file read."""
    from test_attribution import KERNELS, build_export

    sqlite3.connect(tmp_path / "run").execute("CREATE TABLE x (y)").connection.close()
    build_export(tmp_path / "run#2.sqlite")
    code, out, err = run("ingest", str(tmp_path / "run#2.sqlite"), "--store", str(tmp_path / "store"))
    assert code == 0, err
    assert f"{len(KERNELS)} kernels" in out
    assert (tmp_path / "run").stat().st_size > 0 and not (tmp_path / "run#2").exists()


def test_ingest_json_has_an_object_for_a_failed_file(tmp_path: Path) -> None:
    """`rl ingest A B --json`, B not a report: one JSON object per file (B's with its error: there was none), the one
    Error line on stderr and nothing else (a progress bar drawn off a terminal left an empty line there)."""
    import json
    import subprocess
    import sys

    good = FIXTURES / "ncu" / "armleth__cuda-mlp-inference__report.ncu-rep"
    bad = tmp_path / "rand.ncu-rep"
    bad.write_bytes(random.Random(1).randbytes(4000))
    rl = Path(sys.executable).with_name("rl")
    done = subprocess.run(
        [str(rl), "ingest", str(good), str(bad), "--json", "--store", str(tmp_path / "s")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1
    objects = {
        o["status"]: o for o in map(json.loads, done.stdout.splitlines())
    }  # (in the order they finish)
    assert sorted(objects) == ["error", "ingested"] and objects["ingested"]["error"] is None
    assert objects["error"]["path"] == str(bad) and objects["error"]["error"] in done.stderr
    assert done.stderr.startswith("Error: ") and done.stderr.count("\n") == 1, done.stderr


@pytest.mark.parametrize("command", ["doctor", "compact"])
def test_a_mistyped_store_is_refused(tmp_path: Path, command: str) -> None:
    """`rl doctor --store TYPO` said "0 runs, every file reads whole" and `rl compact` created the folder; both are
    one Error line now, and nothing is created."""
    typo = tmp_path / "no-such-store"
    code, _, err = run(command, "--store", str(typo))
    assert_one_error(code, err, str(typo), "no store there")
    assert not typo.exists()


def test_sql_that_is_not_utf8(store: Path) -> None:
    """A byte of the command line that is not UTF-8 reaches Python as a lone surrogate, which DuckDB's functions
    refused with a TypeError and a traceback."""
    before = snapshot(store)
    for unsafe in ([], ["--unsafe"]):
        code, _, err = run("sql", "SELECT 1 -- \udcff", "--store", str(store), *unsafe)
        assert_one_error(code, err, "SQL is not UTF-8 text: character 13 is the byte 0xff")
    code, _, err = run("sql", "SELECT '\ud800'", "--store", str(store))
    assert_one_error(code, err, "character 9 is a lone surrogate (0xd800)")
    assert snapshot(store) == before
