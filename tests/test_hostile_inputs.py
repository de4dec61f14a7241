"""Every input the CLI reads, made hostile: one ``Error: …`` line naming it, exit 1, the store exactly as before.

The project's rule for bad input, swept over every input ``rl`` accepts (``rl --help`` and each command's help):

- ``rl ingest FILE`` of each format it detects (Nsight Compute ``.ncu-rep`` and CSV export, Nsight Systems
  ``.sqlite``, ``.nsys-rep`` and parquetdir folder, ERT ``roofline.json``, ``rl ceilings measure``'s JSON,
  torch.profiler traces plain and gzipped); ``rl ingest --merge`` of two Nsight Compute halves;
- ``rl profile``, which reads the report its profiler wrote (here a stand-in ``ncu``/``nsys`` on PATH writes the
  hostile file);
- ``rl estimate MODEL``, whose input is a ``PACKAGE.MODULE:FACTORY`` the user wrote.

Each file input is made {empty, truncated (the first half of a real file), of the wrong format (a PNG under the
format's name), foreign (the right container or signature, not this tool's content), random bytes, a directory where
a file is expected, unreadable (mode 000), named with terminal escapes, markup and a newline}. ``rl`` runs as a
subprocess (what native libraries and vendor tools write to file descriptor 2 counts too) against a copy of one
store that already holds a real run; every file and folder under it is hashed before and after.

Unreadable runs only where mode 000 keeps the process out (not as root; ``setpriv --bounding-set
-dac_override,-dac_read_search`` runs it as root). Beside the sweep: a good file under a hostile or non-UTF-8 name
ingests and is printed on one line, and so does an export whose metadata text is not UTF-8.

The other commands read only the store (its own damage is ``rl doctor``'s, tests/test_store_safety.py), run ids,
SQL and option values (tests/test_bad_input.py), and write files (``-o``: tests/test_output_paths.py).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from _support import FIXTURES, ROOT, fixture

RL = Path(sys.executable).with_name("rl")
NCU_GOOD = fixture("NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__CuVectorAddDrv")
NSYS_SQLITE = FIXTURES / "nsys" / "GindaChen__nsys-ai__tests__fixtures__mock.sqlite"
# a report nsys 2022.4 (tests/test_nsys_rep_e2e.py) reads, so a cut copy fails for being cut, not for being new
NSYS_REP = FIXTURES / "nsys" / "MohanadOdema__DLProf__nsys_profile.nsys-rep"
NCU_CSV = (
    FIXTURES
    / "csv"
    / "wdmapp__gene-paper-artifacts-pop2020__roofline__time-dram__nvroof_dgdxy__ncuroof-time-1.csv"
)
ERT = (
    FIXTURES
    / "ert"
    / "WeakKnight__roofline__ERT__Results__Results.kingspeak-p100-gpu.01__Run.002__roofline.json"
)
TORCH_GZ = ROOT / "tests" / "data" / "torch" / "mi250_minitoy_train_rocm6.2.json.gz"

# the first bytes of a PNG image and a little of its header: a file of the wrong kind under a report's name
PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x06\x00\x00\x00\x1f\xf3\xffa"
    + bytes(64)
)
# a file name a terminal would colour (ANSI CSI), Rich would style, a browser would parse, and that breaks a line
HOSTILE_NAME = "run\x1b[31m[bold red]x\x1b[0m<b>&amp;\n\x07end"
CASES = ["empty", "truncated", "wrong_format", "foreign", "random", "directory", "unreadable", "hostile_name"]


def _random(n: int = 4096, seed: int = 1234) -> bytes:
    return random.Random(seed).randbytes(n)


def _measured_doc() -> bytes:
    """A document as ``rl ceilings measure`` writes it (rooflake.instrument.ceilings.measure's shape; no fixture
    holds one, and measuring takes seconds)."""
    from rooflake.instrument import ceilings

    key = "host | cpu | 1 threads"
    rows = [
        {
            "ceiling": name,
            "kind": kind,
            "value": value,
            "unit": unit,
            "machine_key": key,
            "method": "best of 3 torch.mm",
            "source_name": f"{name} probe",
            "details": {"threads": 1},
        }
        for name, kind, value, unit in (
            ("FP32", "compute", 1.5e11, "FLOP/s"),
            ("DRAM", "bandwidth", 2.0e10, "byte/s"),
        )
    ]
    doc = {
        ceilings.FORMAT_KEY: ceilings.FORMAT_VERSION,
        "measured_at": "2026-01-02T03:04:05+00:00",
        "device": "cpu",
        "host": "host",
        "cpu": "cpu",
        "caches": {"L2": 1 << 20},
        "torch": "2.13.0",
        "command_line": "rl ceilings measure",
        "ceilings": rows,
    }
    return (json.dumps(doc, indent=1) + "\n").encode()


def _foreign_sqlite(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (x INTEGER)")
        db.execute("INSERT INTO t VALUES (1)")
    db.close()


class Fmt:
    """An input format: the suffix its files carry, the bytes of a real one (None: a folder, see _parquetdir), and
    how to write a foreign file (the right container or signature, other content)."""

    def __init__(
        self, suffix: str, good: Callable[[], bytes] | None, foreign: Callable[[Path], None]
    ) -> None:
        self.suffix, self.good, self.foreign = suffix, good, foreign


def _write(content: bytes) -> Callable[[Path], None]:
    return lambda p: p.write_bytes(content)


FORMATS: dict[str, Fmt] = {
    "ncu-rep": Fmt(".ncu-rep", NCU_GOOD.read_bytes, _write(b"NVR\x00" + _random())),
    "ncu-csv": Fmt(".csv", NCU_CSV.read_bytes, _write(b"name,value\nalpha,1\nbeta,2\n")),
    "nsys-sqlite": Fmt(".sqlite", NSYS_SQLITE.read_bytes, _foreign_sqlite),
    "nsys-rep": Fmt(".nsys-rep", NSYS_REP.read_bytes, _write(NSYS_REP.read_bytes()[:64] + _random())),
    "ert-json": Fmt(".json", ERT.read_bytes, _write(b'{"empirical": {"gbytes": 3}}')),
    "measured-json": Fmt(".json", _measured_doc, _write(b'{"rooflake_measured_ceilings": 1, "ceilings": 7}')),
    "torch-trace": Fmt(
        ".json",
        lambda: gzip.decompress(TORCH_GZ.read_bytes()),
        _write(b'{"traceEvents": {"not": "a list"}}'),
    ),
    "torch-trace-gz": Fmt(
        ".json.gz",
        TORCH_GZ.read_bytes,
        _write(gzip.compress(b'{"schemaVersion": 1, "deviceProperties": []}')),
    ),
    # a folder: its files are made hostile one by one (see _parquetdir)
    "nsys-parquetdir": Fmt(".parquetdir", None, lambda p: None),
}


def _snapshot(root: Path) -> dict[str, str]:
    """Every file (its SHA-256) and folder (``dir``) under ``root``, by relative path: the store's exact state."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        out[rel] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A store holding one real run (the CuVectorAddDrv Nsight Compute report), and a parquetdir export of the
    mock nsys SQLite export."""
    base = tmp_path_factory.mktemp("hostile")
    store = base / "store"
    r = subprocess.run(
        [str(RL), "ingest", str(NCU_GOOD), "--store", str(store)], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    from rooflake.ingest.nsys_parquet import write_parquetdir

    pq_dir = base / "good.parquetdir"
    write_parquetdir(NSYS_SQLITE, pq_dir)
    return {"store": store, "parquetdir": pq_dir}


@pytest.fixture()
def store(prepared: dict[str, Path], tmp_path: Path) -> Path:
    """A copy of the prepared store for one test."""
    dst = tmp_path / "store"
    shutil.copytree(prepared["store"], dst, symlinks=True)
    return dst


def _bad_file(fmt: Fmt, case: str, folder: Path) -> Path:
    """The hostile input of ``case`` for a file format, written under ``folder``."""
    name = (HOSTILE_NAME if case == "hostile_name" else case) + fmt.suffix
    path = folder / name
    assert fmt.good is not None
    if case == "empty":
        path.write_bytes(b"")
    elif case in ("truncated", "hostile_name"):
        data = fmt.good()
        path.write_bytes(data[: len(data) // 2])
    elif case == "wrong_format":
        path.write_bytes(PNG)
    elif case == "foreign":
        fmt.foreign(path)
    elif case == "random":
        path.write_bytes(_random())
    elif case == "directory":
        path.mkdir()
    elif case == "unreadable":
        path.write_bytes(fmt.good())
        path.chmod(0)
    else:
        raise AssertionError(case)
    return path


def _parquetdir(good: Path, case: str, folder: Path) -> Path:
    """The hostile input of ``case`` for an nsys parquetdir export: the folder, with its files made hostile."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = folder / ((HOSTILE_NAME if case == "hostile_name" else case) + ".parquetdir")
    shutil.copytree(good, path)
    files = sorted(path.glob("*.parquet"))
    for f in files:
        data = f.read_bytes()
        if case == "empty":
            f.write_bytes(b"")
        elif case in ("truncated", "hostile_name"):
            f.write_bytes(data[: len(data) // 2])
        elif case == "wrong_format":
            f.write_bytes(PNG)
        elif case == "foreign":  # Parquet files, but not of these tables' columns
            pq.write_table(pa.table({"x": [1, 2, 3]}), f)
        elif case == "random":
            f.write_bytes(_random(seed=len(data)))
        elif case == "directory":  # the string table is a folder
            if f.name == "StringIds.parquet":
                f.unlink()
                f.mkdir()
        elif case == "unreadable":
            f.chmod(0)
        else:
            raise AssertionError(case)
    return path


@functools.cache
def mode_000_is_readable() -> bool:
    """Whether this process reads a file of mode 000 anyway (root, or CAP_DAC_OVERRIDE: then ``unreadable`` is not
    a case here; ``setpriv --bounding-set -dac_override,-dac_read_search`` makes root run it)."""
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe"
        probe.write_bytes(b"x")
        probe.chmod(0)
        try:
            probe.read_bytes()
        except PermissionError:
            return False
        return True


def hostile_input(fmt_name: str, case: str, folder: Path, prepared: dict[str, Path]) -> Path:
    if case == "unreadable" and mode_000_is_readable():
        pytest.skip("this process reads a file of mode 000 (root)")
    folder.mkdir(parents=True, exist_ok=True)
    fmt = FORMATS[fmt_name]
    if fmt.good is None:
        return _parquetdir(prepared["parquetdir"], case, folder)
    return _bad_file(fmt, case, folder)


def rl(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(RL), *args],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=300,
        env=env,
        cwd=cwd,
    )


def shown(path: Path | str) -> str:
    """How a message names ``path``: as it is, or as a Python literal when it holds an unprintable character."""
    from rooflake.ingest.messages import shown as _shown

    return _shown(path)


def assert_one_error(r: subprocess.CompletedProcess[str], *names: str, code: int = 1) -> str:
    """Exit ``code`` (1; 2 for a bad argument), nothing on stdout, stderr exactly one ``Error: `` line holding each
    of ``names`` (or, for a path quoted as a literal, its unquoted text), no control characters; returns the line."""
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.stdout == "", r.stdout
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.stderr
    line = lines[0]
    assert line.isprintable(), line  # no escape sequence, bell or carriage return reaches the terminal
    for name in names:
        assert name.strip("'\"") in line, (name, line)
    return line


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("fmt_name", list(FORMATS))
def test_ingest(fmt_name: str, case: str, store: Path, prepared: dict[str, Path], tmp_path: Path) -> None:
    path = hostile_input(fmt_name, case, tmp_path, prepared)
    before = _snapshot(store)
    r = rl("ingest", str(path), "--store", str(store))
    assert_one_error(r, shown(path))
    assert _snapshot(store) == before


MERGE_CASES = [*CASES, "nsys_half"]


@pytest.mark.parametrize("case", MERGE_CASES)
@pytest.mark.parametrize("bad_first", [False, True], ids=["bad-second", "bad-first"])
@pytest.mark.parametrize("kind", ["ncu-rep", "ncu-csv"])
def test_ingest_merge(
    kind: str, case: str, bad_first: bool, store: Path, prepared: dict[str, Path], tmp_path: Path
) -> None:
    """``rl ingest --merge A B`` of two Nsight Compute reports or two CSV exports: either half hostile (or an
    Nsight Systems export given as a half); the good half is the other half of the split profile."""
    if case == "nsys_half":
        bad = tmp_path / "nsys_half.sqlite"
        shutil.copy(NSYS_SQLITE, bad)
    else:
        bad = hostile_input(kind, case, tmp_path, prepared)
    suffix = FORMATS[kind].suffix
    good = tmp_path / f"half{suffix}"
    shutil.copy(_wdmapp_half("flops", suffix), good)
    pair = [bad, good] if bad_first else [good, bad]
    before = _snapshot(store)
    r = rl("ingest", "--merge", *map(str, pair), "--store", str(store))
    assert_one_error(r, shown(bad))
    assert _snapshot(store) == before


def _wdmapp_half(half: str, suffix: str) -> Path:
    """One half (``dram`` or ``flops``) of wdmapp's split GENE profile, as a report or a CSV export."""
    folder = "ncu" if suffix == ".ncu-rep" else "csv"
    name = (
        f"wdmapp__gene-paper-artifacts-pop2020__roofline__time-{half}__nvroof_dgdxy__ncuroof-time-1{suffix}"
    )
    return FIXTURES / folder / name


PROFILER = r"""#!{python}
import os, shutil, sys
args = sys.argv[1:]
if args[:1] == ["--version"]:
    print("NVIDIA (R) stand-in 2026.1")
    sys.exit(0)
bad = os.environ["RL_TEST_BAD"]
if "{tool}" == "ncu":
    out = args[args.index("-o") + 1] + ".ncu-rep"
    targets = [out]
elif args[:1] == ["profile"]:
    out = args[args.index("--output") + 1] if "--output" in args else args[args.index("-o") + 1]
    targets = [out + ".nsys-rep", out + ".sqlite"]
else:  # nsys export: the .sqlite beside the report is already there
    sys.exit(0)
for t in targets:
    if os.path.isdir(bad):
        shutil.copytree(bad, t)
    else:
        shutil.copyfile(bad, t)
"""


@pytest.mark.parametrize("case", [c for c in CASES if c not in ("unreadable", "hostile_name")])
@pytest.mark.parametrize("tool", ["ncu", "nsys"])
def test_profile_reads_what_the_profiler_wrote(
    tool: str, case: str, store: Path, prepared: dict[str, Path], tmp_path: Path
) -> None:
    """``rl profile``: the report the profiler wrote is the input. Unreadable is left out (the profiler runs as
    the user and writes a report the user can read); the output name is the user's own ``-o`` (the hostile name
    case is test_profile_with_a_hostile_output_name)."""
    bad = hostile_input("ncu-rep" if tool == "ncu" else "nsys-sqlite", case, tmp_path / "src", prepared)
    r = _profile(tool, bad, tmp_path / "work", "report", store)
    report = tmp_path / "work" / ("report.ncu-rep" if tool == "ncu" else "report.sqlite")
    assert_one_error(r, shown(report))


def test_profile_with_a_hostile_output_name(store: Path, prepared: dict[str, Path], tmp_path: Path) -> None:
    bad = hostile_input("ncu-rep", "truncated", tmp_path / "src", prepared)
    r = _profile("ncu", bad, tmp_path / "work", HOSTILE_NAME, store)
    assert_one_error(r, shown(tmp_path / "work" / (HOSTILE_NAME + ".ncu-rep")))


def _profile(tool: str, bad: Path, work: Path, name: str, store: Path) -> subprocess.CompletedProcess[str]:
    bin_dir = work / "bin"
    bin_dir.mkdir(parents=True)
    exe = bin_dir / tool
    exe.write_text(PROFILER.replace("{python}", sys.executable).replace("{tool}", tool))
    exe.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "RL_TEST_BAD": str(bad),
    }
    before = _snapshot(store)
    flag = "--ncu" if tool == "ncu" else "--nsys"
    r = rl("profile", flag, "-o", str(work / name), "--store", str(store), "--", "true", env=env, cwd=work)
    assert _snapshot(store) == before
    return r


MODELS = {
    "no_module": ("no_such_module_here:build", None),
    "no_factory": ("hostile_model:missing", "import torch\n"),
    "not_callable": ("hostile_model:VALUE", "VALUE = 3\n"),
    "syntax_error": ("hostile_model:build", "def build(:\n"),
    "raises_on_import": ("hostile_model:build", "raise RuntimeError('broken at import')\n"),
    "factory_raises": ("hostile_model:build", "def build():\n    raise ValueError('no model today')\n"),
    "not_a_module": ("hostile_model:build", "def build():\n    return 42\n"),
    "exits_on_import": ("hostile_model:build", "import sys\nsys.exit(3)\n"),
    "forward_raises": (
        "hostile_model:build",
        "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
        "        raise ValueError('not this shape')\n\n\ndef build():\n    return M()\n",
    ),
    "wrong_input_shape": (
        "hostile_model:build",
        "import torch\n\n\ndef build():\n    return torch.nn.Linear(3, 4)\n",
    ),
    "hostile_name": (f"hostile_model:{HOSTILE_NAME}", "import torch\n"),
    "a_file_path": ("hostile_model.py", "import torch\n"),
}


@pytest.mark.parametrize("case", list(MODELS))
def test_estimate(case: str, store: Path, tmp_path: Path) -> None:
    """``rl estimate MODEL``: the model spec names code the user wrote; broken code is bad input too."""
    spec, source = MODELS[case]
    if source is not None:
        (tmp_path / "hostile_model.py").write_text(source)
    before = _snapshot(store)
    r = rl("estimate", spec, "-i", "2x8", "--store", str(store), cwd=tmp_path)
    line = assert_one_error(r, code=2 if case == "a_file_path" else 1)  # (a spec without ':': a bad argument)
    assert repr(spec) in line or spec in line, line
    assert _snapshot(store) == before


def test_a_good_file_under_a_hostile_name_prints_one_printable_line(store: Path, tmp_path: Path) -> None:
    """What ``rl ingest`` prints of a file it read is data too: the name quoted, no escape reaching the terminal."""
    path = tmp_path / (HOSTILE_NAME + ".json")
    shutil.copy(ERT, path)
    r = rl("ingest", str(path), "--store", str(store))
    assert r.returncode == 0, r.stderr
    (line,) = r.stdout.splitlines()
    assert line.startswith("ingested ") and line.isprintable() and shown(path) in line, line
    assert all(ln.isprintable() for ln in r.stderr.splitlines()), r.stderr


@pytest.mark.parametrize("fmt_name", [f for f in FORMATS if f != "nsys-rep"] + ["nsys-rep"])
def test_a_good_file_whose_name_is_not_utf8_ingests(
    fmt_name: str, store: Path, prepared: dict[str, Path], tmp_path: Path
) -> None:
    """A name's bytes need not be UTF-8 (Python holds them as lone surrogates, which Arrow refuses): the run's
    source_path keeps them as ``\\xNN`` and the line printed quotes the name."""
    fmt = FORMATS[fmt_name]
    path = Path(os.fsdecode(os.fsencode(tmp_path) + b"/run\xff\xfe" + fmt.suffix.encode()))
    if fmt.good is None:
        shutil.copytree(prepared["parquetdir"], path)
    else:
        path.write_bytes(fmt.good())
    if fmt_name == "nsys-rep" and shutil.which("nsys") is None:
        pytest.skip("nsys is not on PATH")
    r = rl(
        "ingest", str(path), "--store", str(store), "--json", "--force"
    )  # the store holds the ncu-rep's bytes
    assert r.returncode == 0, r.stderr
    (line,) = r.stdout.splitlines()
    run_id = json.loads(line)["run_id"]
    r = rl(
        "sql", f"SELECT source_path FROM runs WHERE run_id = '{run_id}'", "-f", "csv", "--store", str(store)
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1].strip('"').endswith("/run\\xff\\xfe" + fmt.suffix), r.stdout


def test_export_metadata_that_is_not_utf8_is_read(store: Path, tmp_path: Path) -> None:
    """Text of an export's META_DATA_EXPORT that is not UTF-8 (nsys writes the report's path there, whose bytes
    need not be) is read with U+FFFD in place of the bad bytes. Before, the reader's extra ``value_hex`` column
    made a 3-tuple of each row: "cannot read it (ValueError: too many values to unpack (expected 2))"."""
    path = tmp_path / "meta.sqlite"
    shutil.copy(NSYS_SQLITE, path)
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SOURCE', CAST(x'2f72756eff2e6e7379732d726570' AS TEXT))"
        )
    db.close()
    r = rl("ingest", str(path), "--store", str(store))
    assert r.returncode == 0 and r.stdout.startswith("ingested "), r.stderr
