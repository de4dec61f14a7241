"""Expected failures of the environment and of arguments end in one ``Error:`` line, never a traceback: blank SQL,
a full disk behind stdout, an unreadable folder, an out-of-range ``--since``, worker processes that cannot start.
Exit 1 for bad data or environment, 2 for bad arguments. And the small promises beside them: ``rl doctor -f json
-o F`` writes F, ``rl ingest DIR`` follows symlinked folders once."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from rooflake.cli import app
from rooflake.cli.common import guard
from rooflake.pipeline import expand_paths, ingest_file
from rooflake.schema import BadArgument, InputError
from rooflake.store import Store
from rooflake.views.report import parse_since, report

from _support import fixture, snapshot

A10G = fixture("AveryClapp__ESMM-Research__profile_output")
NVTX = fixture("NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__manual_nvtx")
CLI = "from rooflake.cli import main; main()"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("notrace") / "store"
    ingest_file(A10G, root)
    return root


def _one_error(code: int, stderr: str, exit_code: int = 1) -> str:
    assert code == exit_code, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), stderr
    return lines[0]


def _rl(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CLI, *args],
        capture_output=kwargs.pop("stdout", None) is None,
        text=True,
        **kwargs,
    )  # type: ignore[call-overload]


@pytest.mark.parametrize("sql", ["   ", ";;", "/* x */", "-- only a comment", " ; /* a */ ; "])
@pytest.mark.parametrize("unsafe", [[], ["--unsafe"]])
def test_blank_sql_is_one_error(store: Path, sql: str, unsafe: list[str]) -> None:
    """Before: IndexError traceback (the views were pointed at the text's first statement, which it lacks)."""
    r = CliRunner().invoke(app, ["sql", "--store", str(store), *unsafe, "--", sql])
    assert "no SQL statement" in _one_error(r.exit_code, r.stderr)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize(
    "args",
    [
        ["runs"],
        ["sql", "SELECT * FROM kernels"],
        ["sql", "-f", "csv", "SELECT 1"],
        ["ingest", "--force", str(A10G)],
    ],
)
def test_a_full_disk_behind_stdout_is_one_error(store: Path, args: list[str]) -> None:
    """Before: `rl runs > /dev/full` ended in an OSError (ENOSPC) traceback."""
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-c", CLI, *args, "--store", str(store)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert "No space left on device" in _one_error(done.returncode, done.stderr)


def test_an_unreadable_folder_is_one_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: PermissionError traceback. Listing the folder fails here by a stand-in for os.scandir (root reads
    a chmod 0 folder: the test below does it for real where it can)."""
    (tmp_path / "in" / "locked").mkdir(parents=True)
    locked = str(tmp_path / "in" / "locked")
    real = os.scandir

    def scandir(path: object = ".") -> object:
        if os.fspath(path) == locked:  # type: ignore[arg-type]
            raise PermissionError(13, "Permission denied", locked)
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(InputError, match="locked: cannot read this folder"):
        expand_paths([str(tmp_path / "in")])
    r = CliRunner().invoke(app, ["ingest", str(tmp_path / "in"), "--store", str(tmp_path / "store")])
    assert "cannot read this folder (Permission denied)" in _one_error(r.exit_code, r.stderr)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a chmod 0 folder (the test above covers it)")
def test_a_chmod_0_folder_is_one_error(tmp_path: Path) -> None:
    locked = tmp_path / "in" / "locked"
    locked.mkdir(parents=True)
    locked.chmod(0)
    try:
        done = _rl("ingest", str(tmp_path / "in"), "--store", str(tmp_path / "store"))
    finally:
        locked.chmod(0o755)
    assert "cannot read this folder" in _one_error(done.returncode, done.stderr)


@pytest.mark.parametrize("since", ["800000d", "99999999999999999d", "0m", "0.0h"])
def test_since_out_of_range_is_a_bad_argument(store: Path, since: str) -> None:
    """Before: 800000d raised OverflowError (exit 1, a traceback); 0m selected every run (a zero span read as 'no
    --since'). Both are bad arguments now: exit 2, one line naming --since."""
    with pytest.raises(BadArgument, match="--since"):
        parse_since(since)
    with pytest.raises(BadArgument, match="--since"):  # what rl report calls; the CLI turns it into exit 2
        report(Store(store), since=since)


# ---- worker processes that cannot start ------------------------------------------------------------------------
# a sitecustomize that ends every interpreter started with -c (the fork server, spawned workers), not `rl` itself
_NO_WORKERS = 'import os, sys\nif sys.argv[:1] == ["-c"]:\n    os._exit(3)\n'


def test_ingest_workers_that_cannot_start_are_one_error(tmp_path: Path) -> None:
    """Before: `rl ingest DIR` with workers that could not start ended in ConnectionRefusedError / EOFError
    ("Aborted!"). The store is left as it was."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(_NO_WORKERS)
    (tmp_path / "in").mkdir()
    for f in (A10G, NVTX):
        (tmp_path / "in" / f.name).symlink_to(f)
    store = tmp_path / "store"
    rl = Path(sys.executable).with_name("rl")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    done = subprocess.run(
        [str(rl), "ingest", str(tmp_path / "in"), "--store", str(store)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert "cannot start the worker processes" in _one_error(done.returncode, done.stderr)
    assert not snapshot(store / "runs")


def test_a_broken_pool_is_one_error(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `rl report` whose renderers could not start ended in a BrokenProcessPool traceback (or exit 1 with
    nothing said). The one handler turns it into one line, exit 1."""

    @guard
    def command() -> None:
        raise BrokenProcessPool("A child process terminated abruptly")

    with pytest.raises(typer.Exit) as exited:
        command()
    assert exited.value.exit_code == 1
    assert "worker processes stopped or could not start" in _one_error(1, capsys.readouterr().err)


# ---- minor promises -------------------------------------------------------------------------------------------
def test_doctor_json_out_on_a_healthy_store_writes_the_file(store: Path, tmp_path: Path) -> None:
    """Before: `rl doctor -f json -o F` on a healthy store wrote no F and printed prose."""
    out = tmp_path / "doctor.json"
    r = CliRunner().invoke(app, ["doctor", "--store", str(store), "-f", "json", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_text().strip() == "[]" and r.stdout == ""
    r = CliRunner().invoke(app, ["doctor", "--store", str(store), "-f", "csv"])
    assert r.stdout.splitlines() == ["table,run_id,path,problem,error"]


def test_ingest_follows_symlinked_folders_once(tmp_path: Path) -> None:
    """Before: a symlinked sub-folder was not looked into. Now it is, once: a link back up (a loop) and a second
    link to the same folder add nothing."""
    real = tmp_path / "reports"
    real.mkdir()
    (real / A10G.name).symlink_to(A10G)
    top = tmp_path / "top"
    (top / "deeper").mkdir(parents=True)
    (top / "deeper" / "link").symlink_to(real, target_is_directory=True)
    (top / "again").symlink_to(real, target_is_directory=True)
    (real / "loop").symlink_to(top, target_is_directory=True)
    found = expand_paths([str(top)])
    assert [p.resolve() for p in found] == [A10G.resolve()]
    r = CliRunner().invoke(app, ["ingest", str(top), "--store", str(tmp_path / "store")])
    assert r.exit_code == 0 and r.stdout.startswith("ingested "), r.output
