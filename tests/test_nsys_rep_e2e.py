"""`rl ingest X.nsys-rep` end to end with NVIDIA's own `nsys` (Nsight Systems 2022.4 from
../shared/tools/install-nsight.sh): the .nsys-rep equals its own SQLite export, a C program with a known NVTX
structure comes out as exactly those ranges, and without `nsys` the ingest fails cleanly.

Recording notes (nsys 2022.4.2 from Debian, on this machine):
- `nsys profile` with the default CPU sampling / context-switch tracing hangs for ever in its agent after
  "Generating ....qdstrm", so the recording turns both off (--sample=none --cpuctxsw=none).
- the Debian package's `nsys` cannot find its QdstrmImporter ("importer binary and its dependencies were not
  found") and leaves a .qdstrm; it is converted with the importer from the package's host-linux-x64 folder.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflake import queries
from rooflake.cli import app
from rooflake.store import Store

from _support import FIXTURES, snapshot

NSYS_DIR = FIXTURES / "nsys"
DLPROF_REP = NSYS_DIR / "MohanadOdema__DLProf__nsys_profile.nsys-rep"
DLPROF_SQLITE = NSYS_DIR / "MohanadOdema__DLProf__nsys_profile.sqlite"
ARMLETH_REP = NSYS_DIR / "armleth__cuda-mlp-inference__nsys_report.nsys-rep"  # written by nsys 2025.2.1
NVTX_C = Path(__file__).resolve().parent / "data" / "nvtx_ranges.c"

NSYS = shutil.which("nsys")
needs_nsys = pytest.mark.skipif(
    NSYS is None,
    reason="NVIDIA Nsight Systems `nsys` is not on PATH (bash ../shared/tools/install-nsight.sh)",
)
DEFAULT_DOMAIN = "<default domain>"


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def sql(store: Path, query: str, params: dict | None = None):
    return queries.execute(Store(store), query, params)


def ingest(path: Path, store: Path) -> str:
    """`rl ingest path --store store`; returns the new run's id."""
    r = invoke("ingest", str(path), "--store", str(store))
    assert r.exit_code == 0, (r.stdout, r.stderr)
    (run_id,) = Store(store).run_ids()
    return run_id


# ------------------------------------------------------------------------------------------------ (a)

KERNELS_SQL = """
    SELECT name, start_ns, end_ns, duration_ns, correlation_id, nvtx_path, nvtx_stack
    FROM kernels ORDER BY start_ns, correlation_id, name
"""
RANGES_SQL = """
    SELECT domain, name, kind, start_ns, end_ns, depth
    FROM ranges ORDER BY start_ns, name, domain, kind, end_ns, depth
"""


@needs_nsys
def test_nsys_rep_equals_its_sqlite_export(tmp_path: Path) -> None:
    s_rep, s_sql = tmp_path / "rep", tmp_path / "sqlite"
    run_rep = ingest(DLPROF_REP, s_rep)
    run_sql = ingest(DLPROF_SQLITE, s_sql)
    assert run_rep != run_sql  # run ids hash the file bytes, and the files differ

    fmt = "SELECT source_format, n_kernels FROM runs"
    assert sql(s_rep, fmt).to_pylist() == [{"source_format": "nsys-rep", "n_kernels": 46}]
    assert sql(s_sql, fmt).to_pylist() == [{"source_format": "nsys-sqlite", "n_kernels": 46}]

    k_rep, k_sql = sql(s_rep, KERNELS_SQL), sql(s_sql, KERNELS_SQL)
    assert k_sql.num_rows == 46
    assert sum(k_sql.column("duration_ns").to_pylist()) == 346_684  # sum(end - start) of the export's kernels
    assert k_rep.equals(k_sql), "kernels of the .nsys-rep differ from those of its .sqlite export"

    r_rep, r_sql = sql(s_rep, RANGES_SQL), sql(s_sql, RANGES_SQL)
    assert r_sql.num_rows == 82  # NVTX_EVENTS: 82 push/pop ranges
    assert r_rep.equals(r_sql), "ranges of the .nsys-rep differ from those of its .sqlite export"


# ------------------------------------------------------------------------------------------------ (b)


def _symlink_chain(path: str) -> list[Path]:
    """``path``, every link its symlinks lead through (not resolving folders), and the real file."""
    out, p = [], Path(path)
    for _ in range(40):
        out.append(p)
        if not p.is_symlink():
            break
        p = Path(os.path.normpath(p.parent / os.readlink(p)))
    return [*out, Path(path).resolve()]


def _nsys_sibling(*parts: str) -> Path | None:
    """``<nsys install folder>/<parts>``, looked up next to every link on the way to the `nsys` binary
    (Debian: /usr/bin/nsys -> /usr/lib/nsight-systems/bin/nsys -> ../target-linux-x64/nsys)."""
    if NSYS is None:
        return None
    for link in _symlink_chain(NSYS):
        for base in (link.parent.parent, link.parent):
            cand = base.joinpath(*parts)
            if cand.exists():
                return cand
    return None


def _nvtx_include() -> Path | None:
    """A folder holding nvtx3/nvToolsExt.h: the CUDA toolkit's first, then the copy shipped with nsys."""
    cands = [Path(os.environ[v]) / "include" for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    cands += [
        Path("/usr/local/cuda/include"),
        *sorted(Path("/usr/local").glob("cuda-*/include"), reverse=True),
    ]
    cands += [Path("/usr/include"), Path("/opt/cuda/include")]
    shipped = _nsys_sibling("nvtx", "include")
    if shipped:
        cands.append(shipped)
    return next((c for c in cands if (c / "nvtx3" / "nvToolsExt.h").is_file()), None)


NVTX_INCLUDE = _nvtx_include()
GCC = shutil.which("gcc")


def _record(binary: Path, out: Path) -> Path:
    """Record ``binary`` with `nsys profile --trace=nvtx,osrt`; returns the .nsys-rep."""
    cmd = [
        NSYS,
        "profile",
        "--trace=nvtx,osrt",
        "--sample=none",
        "--cpuctxsw=none",
        "-o",
        str(out),
        str(binary),
    ]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=180, cwd=out.parent)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`{' '.join(cmd)}` did not finish in 180 s (its agent process may still be running)")
    assert p.returncode == 0, p.stdout + p.stderr
    rep, qdstrm = out.with_suffix(".nsys-rep"), out.with_suffix(".qdstrm")
    if not rep.exists() and qdstrm.exists():  # nsys could not find its importer: convert by hand
        importer = _nsys_sibling("host-linux-x64", "QdstrmImporter")
        assert importer, f"nsys left {qdstrm} and no QdstrmImporter was found next to {NSYS}"
        q = subprocess.run([str(importer), "-i", str(qdstrm)], capture_output=True, text=True, timeout=180)
        assert q.returncode == 0, q.stdout + q.stderr
    assert rep.exists(), p.stdout + p.stderr
    return rep


@pytest.mark.skipif(
    NVTX_INCLUDE is None,
    reason="NVTX v3 headers (nvtx3/nvToolsExt.h) not found in a CUDA toolkit or nsys folder",
)
@pytest.mark.skipif(GCC is None, reason="gcc is not on PATH (needed to build tests/data/nvtx_ranges.c)")
@needs_nsys
def test_c_program_ranges_come_out_exactly(tmp_path: Path) -> None:
    binary = tmp_path / "nvtx_ranges"
    cc = [GCC, "-O0", f"-I{NVTX_INCLUDE}", str(NVTX_C), "-o", str(binary), "-ldl", "-lpthread"]
    c = subprocess.run(cc, capture_output=True, text=True)
    assert c.returncode == 0, c.stderr
    rep = _record(binary, tmp_path / "prog")

    store = tmp_path / "store"
    run_id = ingest(rep, store)
    assert sql(store, "SELECT source_format, n_kernels FROM runs").to_pylist() == [
        {"source_format": "nsys-rep", "n_kernels": 0}
    ]
    assert sql(store, "SELECT count(*) AS n FROM kernels").to_pylist() == [{"n": 0}]

    rows = sql(
        store,
        "SELECT range_id, domain, name, kind, start_ns, end_ns, thread, depth, parent_id FROM ranges "
        "WHERE run_id = $run ORDER BY start_ns",
        {"run": run_id},
    ).to_pylist()
    by = {r["name"]: r for r in rows}
    assert len(by) == len(rows), [r["name"] for r in rows]

    push = {"outer", "inner/with/slash", "inner2", "worker", "step", "dom_range"}
    # nothing else (no domain create/destroy rows), names with '/' kept whole
    assert set(by) == push | {"async", "tick"}
    assert {n for n, r in by.items() if r["kind"] == "push_pop"} == push
    assert by["async"]["kind"] == "start_end"
    assert by["tick"]["kind"] == "mark"

    # depth and parent: one stack per thread and domain
    depth = {"outer": 0, "inner/with/slash": 1, "inner2": 1, "worker": 0, "step": 1, "dom_range": 0}
    assert {n: by[n]["depth"] for n in push} == depth
    parent = {
        "outer": None,
        "inner/with/slash": "outer",
        "inner2": "outer",
        "worker": None,
        "step": "worker",
        "dom_range": None,
    }
    assert {n: by[n]["parent_id"] for n in push} == {
        n: (by[p]["range_id"] if p else None) for n, p in parent.items()
    }

    # threads: the pthread's ranges are on another thread than main's
    main, worker = by["outer"]["thread"], by["worker"]["thread"]
    assert isinstance(main, int) and isinstance(worker, int) and main != worker
    assert {n: r["thread"] for n, r in by.items()} == {
        **{n: main for n in ("outer", "inner/with/slash", "inner2", "dom_range", "async", "tick")},
        "worker": worker,
        "step": worker,
    }

    # domains
    assert {n: r["domain"] for n, r in by.items()} == {
        **{n: DEFAULT_DOMAIN for n in by},
        "dom_range": "mydomain",
    }

    # times: every range lasts (2 ms naps), children inside parents, the mark inside its range
    for n in push | {"async"}:
        assert by[n]["end_ns"] - by[n]["start_ns"] >= 1_000_000, n
    for n, p in parent.items():
        if p:
            assert by[p]["start_ns"] < by[n]["start_ns"] < by[n]["end_ns"] < by[p]["end_ns"], n
    tick = by["tick"]
    assert tick["start_ns"] == tick["end_ns"]
    assert by["inner/with/slash"]["start_ns"] < tick["start_ns"] < by["inner/with/slash"]["end_ns"]
    assert by["async"]["start_ns"] < by["outer"]["start_ns"]
    assert by["async"]["end_ns"] > by["dom_range"]["end_ns"]
    assert by["inner/with/slash"]["end_ns"] < by["inner2"]["start_ns"]
    assert (
        by["outer"]["end_ns"]
        < by["worker"]["start_ns"]
        < by["worker"]["end_ns"]
        < by["dom_range"]["start_ns"]
    )


# ------------------------------------------------------------------------------------------------ (c)


def test_nsys_rep_without_nsys_fails_cleanly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "store"
    ingest(DLPROF_SQLITE, store)  # a store with a run in it, which must stay as it is
    before = snapshot(store)

    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert shutil.which("nsys") is None
    r = invoke("ingest", str(ARMLETH_REP), "--store", str(store))

    assert r.exit_code == 1, (r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.stderr
    assert "nsys" in lines[0].replace("nsys export --type sqlite", ""), lines[0]  # names the missing tool
    assert "nsys export --type sqlite" in lines[0], lines[0]
    assert snapshot(store) == before


def _nsys_year() -> int | None:
    if NSYS is None:
        return None
    out = subprocess.run([NSYS, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"version (\d{4})\.", out)
    return int(m.group(1)) if m else None


@needs_nsys
def test_report_newer_than_nsys_fails_cleanly(tmp_path: Path) -> None:
    """armleth's report is from nsys 2025.2.1; nsys 2022.4 answers "Exportation error: Version number is
    invalid: 2025@2@1@130-252135690618v0" with exit 1 and writes nothing."""
    year = _nsys_year()
    if year is None or year >= 2025:
        pytest.skip(f"this nsys ({year}) may read a 2025.2 report")
    store = tmp_path / "store"
    ingest(DLPROF_SQLITE, store)
    before = snapshot(store)
    r = invoke("ingest", str(ARMLETH_REP), "--store", str(store))
    assert r.exit_code == 1, (r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.stderr
    assert "nsys export" in lines[0] and "Version number is invalid" in lines[0], lines[0]
    assert snapshot(store) == before
