"""Nsight Systems parquetdir exports (`nsys export --type parquetdir`): folders made from every fixture SQLite export
table by table (each column typed by its declared SQLite type) read to the same kernels, memops, ranges and
coverage as the SQLite path, row by row; the folder is detected by its files (`rl ingest FOLDER` is one run, and a
folder holding one is searched like any other); incomplete or damaged folders give one InputError naming the
folder."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from rooflake.cli import app
from rooflake.ingest import detect_format, file_sha256, read, source_bytes
from rooflake.ingest.nsys_parquet import FORMAT, write_parquetdir
from rooflake.schema import InputError

from _support import FIXTURES

NSYS = FIXTURES / "nsys"
EXPORTS = sorted(NSYS.glob("*.sqlite"))
DEMO = NSYS / "Sh1mwww__llama3-inference__demo.sqlite"
# the rows' identity in each output table (every table sorted by it before comparing)
KEYS = {
    "kernels": ["kernel_id"],
    "memops": ["op_id"],
    "ranges": ["range_id"],
    "coverage": ["device_id", "op_kind", "attribution"],
}


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every fixture export written as a parquetdir folder, once per module."""
    root = tmp_path_factory.mktemp("parquetdirs")
    out = {}
    for path in EXPORTS:
        out[path.name] = root / path.stem
        write_parquetdir(path, out[path.name])
    return out


def _sorted(t: pa.Table, keys: list[str]) -> pa.Table:
    return t.sort_by([(k, "ascending") for k in keys])


def test_every_fixture_export_is_covered() -> None:
    assert len(EXPORTS) >= 10  # the comparison below runs on all of them


@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: p.name[:40])
def test_parquetdir_reads_like_the_sqlite_export(folders: dict[str, Path], path: Path) -> None:
    folder = folders[path.name]
    assert detect_format(folder) == FORMAT == "nsys-parquetdir"
    sqlite = read(path, run_id="r")
    parquet = read(folder, run_id="r")
    _compare(sqlite, parquet)
    run_a, run_b = dict(sqlite["run"]), dict(parquet["run"])
    assert run_a.pop("source_format") == "nsys-sqlite"
    assert run_b.pop("source_format") == "nsys-parquetdir"
    assert run_b.pop("note").startswith("nsys parquetdir export: the folder is one run")
    assert run_b == run_a


def _compare(sqlite: dict, parquet: dict) -> None:
    for table, keys in KEYS.items():
        a, b = _sorted(sqlite[table], keys), _sorted(parquet[table], keys)
        assert b.schema == a.schema, table
        assert b.num_rows == a.num_rows, table
        for col in a.column_names:  # column by column, so that a difference names its column
            assert b.column(col).to_pylist() == a.column(col).to_pylist(), f"{table}.{col}"


NSYS_BIN = shutil.which("nsys")


@pytest.mark.skipif(NSYS_BIN is None, reason="NVIDIA Nsight Systems `nsys` is not on PATH")
def test_tables_as_nsys_itself_types_them(tmp_path: Path) -> None:
    """The DLProf .nsys-rep exported by NVIDIA's own `nsys export --type arrow` (Nsight Systems 2022.4 has no
    parquetdir yet; its Arrow export is one IPC stream per table, named in the schema metadata, typed as nsys types
    them: text as binary, uint32/uint64 integers, no rowid), each table written to Parquet unchanged: the same
    kernels, memops, ranges and coverage as the .sqlite export of the same report."""
    import pyarrow.ipc as ipc

    arrow = tmp_path / "dlprof.arrow"
    rep = NSYS / "MohanadOdema__DLProf__nsys_profile.nsys-rep"
    cmd = [
        NSYS_BIN,
        "export",
        "--type",
        "arrow",
        "--force-overwrite",
        "true",
        "--output",
        str(arrow),
        str(rep),
    ]
    subprocess.run(cmd, capture_output=True, check=True, timeout=300)
    folder = tmp_path / "dlprof.parquetdir"
    folder.mkdir()
    stream = pa.BufferReader(arrow.read_bytes())
    types = {}
    while stream.tell() < stream.size():
        t = ipc.open_stream(stream).read_all()
        name = t.schema.metadata[b"table_name"].decode()
        types[name] = {f.name: str(f.type) for f in t.schema}
        pq.write_table(t, folder / f"{name}.parquet")
    assert types["StringIds"] == {"id": "int32", "value": "binary"}  # what the reader must take as text
    assert types["CUPTI_ACTIVITY_KIND_KERNEL"]["correlationId"] == "uint32"
    parquet = read(folder, run_id="r")
    sqlite = read(NSYS / "MohanadOdema__DLProf__nsys_profile.sqlite", run_id="r")
    _compare(sqlite, parquet)
    assert (parquet["kernels"].num_rows, parquet["ranges"].num_rows) == (46, 82)
    assert parquet["run"]["producer"].startswith(
        "nsys 2022.4"
    )  # the exporter's version (the .sqlite: 2022.1)


def test_binary_text_that_is_not_utf8_is_kept_as_hex(folders: dict[str, Path], tmp_path: Path) -> None:
    """Text stored as binary (as nsys's own Arrow writer stores it) is decoded as UTF-8; a kernel name whose bytes
    are not UTF-8 keeps them escaped in the name and in hex in invalid_utf8_hex (the SQLite reader writes U+FFFD
    there instead: DuckDB has no decoding with replacement), and the other kernels are as before."""
    folder = shutil.copytree(folders[DEMO.name], tmp_path / "binary")
    strings = pq.read_table(folder / "StringIds.parquet")
    before = read(folder, run_id="r")["kernels"].sort_by("kernel_id")
    name = before.column("name")[0].as_py()
    values = [v.encode() + (b"\xff" if v == name else b"") for v in strings.column("value").to_pylist()]
    pq.write_table(
        strings.set_column(1, "value", pa.array(values, pa.binary())), folder / "StringIds.parquet"
    )
    after = read(folder, run_id="r")["kernels"].sort_by("kernel_id")
    hexed = (name.encode() + b"\xff").hex()
    changed = [
        i
        for i in range(after.num_rows)
        if after.column("name")[i].as_py() != before.column("name")[i].as_py()
    ]
    assert changed and all(after.column("name")[i].as_py() == name + "\\xFF" for i in changed)
    assert all(dict(after.column("invalid_utf8_hex")[i].as_py())["name"] == hexed for i in changed)
    same = [i for i in range(after.num_rows) if i not in changed]
    assert [after.column("name")[i].as_py() for i in same] == [before.column("name")[i].as_py() for i in same]


def test_real_values_of_one_export(folders: dict[str, Path]) -> None:
    """The llama3 export's figures as the SQLite tests know them: 64 kernels, 271 NVTX ranges, RTX 4060 Ti."""
    out = read(folders[DEMO.name], run_id="r")
    k = out["kernels"]
    assert (k.num_rows, out["ranges"].num_rows) == (64, 271)
    assert out["run"]["gpu_name"] == "NVIDIA GeForce RTX 4060 Ti"
    assert out["run"]["producer"] == "nsys 2024.6.2.225"
    assert k.column("nvtx_path").null_count < k.num_rows  # kernels attributed to NVTX ranges


def test_rl_ingest_folder_is_one_run(folders: dict[str, Path], tmp_path: Path) -> None:
    folder = folders[DEMO.name]
    store = tmp_path / "store"
    res = CliRunner().invoke(app, ["ingest", str(folder), "--store", str(store), "--json"])
    assert res.exit_code == 0, res.output
    (line,) = [json.loads(x) for x in res.stdout.splitlines()]
    assert line["status"] == "ingested" and line["kernels"] == 64 and line["ranges"] == 271
    assert line["run_id"] == file_sha256(folder)[:16]
    assert "one run" in line["note"]
    res = CliRunner().invoke(
        app, ["sql", "--store", str(store), "--format", "json",
              "select source_format, source_bytes, n_kernels from runs"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == [
        {"source_format": "nsys-parquetdir", "source_bytes": source_bytes(folder), "n_kernels": 64}
    ]
    # the same folder again: the same run
    res = CliRunner().invoke(app, ["ingest", str(folder), "--store", str(store)])
    assert res.exit_code == 0 and res.stdout.startswith("exists")


def test_a_folder_holding_a_parquetdir_and_a_sqlite_is_two_runs(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    parent = tmp_path / "profiles"
    shutil.copytree(folders[DEMO.name], parent / "demo.parquetdir")
    shutil.copyfile(NSYS / "GindaChen__nsys-ai__tests__fixtures__mock.sqlite", parent / "mock.sqlite")
    res = CliRunner().invoke(app, ["ingest", str(parent), "--store", str(tmp_path / "s"), "--json"])
    assert res.exit_code == 0, res.output
    lines = sorted((json.loads(x) for x in res.stdout.splitlines()), key=lambda r: r["path"])
    assert [(Path(r["path"]).name, r["kernels"]) for r in lines] == [
        ("demo.parquetdir", 64),
        ("mock.sqlite", 2),
    ]


def test_a_folder_without_string_table_is_one_clear_error(folders: dict[str, Path], tmp_path: Path) -> None:
    folder = shutil.copytree(folders[DEMO.name], tmp_path / "partial")
    (folder / "StringIds.parquet").unlink()
    assert detect_format(folder) == FORMAT  # recognised by its other tables, then refused
    with pytest.raises(
        InputError, match=r"partial: an incomplete Nsight Systems parquetdir export: no StringIds"
    ):
        read(folder, run_id="r")
    res = CliRunner().invoke(app, ["ingest", str(folder), "--store", str(tmp_path / "s")])
    assert res.exit_code == 1
    assert res.stderr.count("Error:") == 1 and "StringIds.parquet" in res.stderr
    assert not (tmp_path / "s" / "runs").exists()


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_a_damaged_parquet_file_is_one_clear_error(
    folders: dict[str, Path], tmp_path: Path, damage: str
) -> None:
    folder = shutil.copytree(folders[DEMO.name], tmp_path / "damaged")
    kernel = folder / "CUPTI_ACTIVITY_KIND_KERNEL.parquet"
    data = kernel.read_bytes()
    kernel.write_bytes(data[: len(data) // 2] if damage == "truncated" else b"not parquet at all " * 50)
    with pytest.raises(
        InputError, match=r"damaged: CUPTI_ACTIVITY_KIND_KERNEL.parquet is not a readable Parquet"
    ):
        read(folder, run_id="r")


def test_a_column_of_the_wrong_type_is_one_clear_error(folders: dict[str, Path], tmp_path: Path) -> None:
    """A column whose Parquet type cannot hold the reader's (text where integers belong) is refused from the
    footer, before DuckDB reads anything: one InputError naming the folder, file and column."""
    folder = shutil.copytree(folders[DEMO.name], tmp_path / "badtype")
    kernel = folder / "CUPTI_ACTIVITY_KIND_KERNEL.parquet"
    t = pq.read_table(kernel)
    i = t.schema.get_field_index("start")
    pq.write_table(t.set_column(i, "start", pa.array(["not a time"] * t.num_rows)), kernel)
    with pytest.raises(
        InputError, match=r"badtype: CUPTI_ACTIVITY_KIND_KERNEL.parquet: column start is string, not an"
    ):
        read(folder, run_id="r")


@pytest.mark.parametrize("table", ["NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_KERNEL", "StringIds"])
def test_damaged_pages_are_one_clear_error(folders: dict[str, Path], tmp_path: Path, table: str) -> None:
    """Bytes flipped inside a file whose footer is intact: DuckDB finds it while reading (a page header it cannot
    parse, a Snappy failure), and the error is one InputError naming the folder, also through `rl ingest`."""
    folder = shutil.copytree(folders[DEMO.name], tmp_path / "pages")
    file = folder / f"{table}.parquet"
    data = bytearray(file.read_bytes())
    for i in range(8, len(data) // 3, 7):  # the pages come first, the footer last
        data[i] ^= 0x5A
    file.write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"pages: cannot read the Parquet export"):
        read(folder, run_id="r")
    res = CliRunner().invoke(app, ["ingest", str(folder), "--store", str(tmp_path / "s")])
    assert res.exit_code == 1 and len(res.stderr.splitlines()) == 1
    assert res.stderr.startswith("Error: ") and "pages: cannot read" in res.stderr


def test_an_unrelated_folder_is_still_no_report(tmp_path: Path) -> None:
    (tmp_path / "other.parquet").write_bytes(b"PAR1")
    with pytest.raises(InputError, match="is a directory|not a regular file"):
        detect_format(tmp_path)


def test_stringids_held_twice_in_a_folder(folders: dict[str, Path], tmp_path: Path) -> None:
    """As for the SQLite export (test_nsys_hostile): StringIds rows held twice are kept once (the kernels are the
    clean folder's), and an id with a second, different text is one InputError naming the folder."""
    clean = read(folders[DEMO.name], run_id="r")["kernels"]
    for name, other in (("twice", False), ("other", True)):
        folder = shutil.copytree(folders[DEMO.name], tmp_path / name)
        strings = folder / "StringIds.parquet"
        t = pq.read_table(strings)
        extra = t.slice(0, 1)
        if other:
            extra = extra.set_column(1, "value", pa.array(["another text"], extra.schema.field(1).type))
        pq.write_table(pa.concat_tables([t, t if not other else extra]), strings)
        if other:
            with pytest.raises(
                InputError, match=r"other: StringIds holds id \d+ in 2 rows with 2 different values"
            ):
                read(folder, run_id="r")
        else:
            kernels = read(folder, run_id="r")["kernels"]
            assert _sorted(kernels, KEYS["kernels"]).equals(_sorted(clean, KEYS["kernels"]))
