"""A damaged store is named, never a traceback: a damaged ``compacted.json`` (empty, ``null``, a field missing, cut
JSON) and damaged Parquet partitions (a byte changed: a page checksum fails) are one ``Error:`` line naming the
file, in every command; ``rl doctor`` lists them as damaged and says how to recover."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflake.cli import app
from rooflake.store import Store, compact

from _support import FIXTURES, snapshot, tiny_run

ERT = sorted((FIXTURES / "ert").glob("*.json"))[0]
MANIFESTS = {
    "empty": b"",
    "null": b"null",
    "generation only": b'{"generation":"1"}',
    "cut": b'{"generation": "00000000001", "files": {"runs": ["runs/compacted/part-0',
    "a list": b"[]",
    "runs not a list": b'{"generation": "1", "files": {}, "runs": 3}',
    "a path outside": b'{"generation": "1", "files": {"runs": ["../../etc/x.parquet"]}, "runs": []}',
    "not UTF-8": b"\xff\xfe{",
}


def _store(root: Path, n: int = 3) -> list[str]:
    ids = [f"{i:016x}" for i in range(n)]
    for r in ids:
        tiny_run(root, r, [{"kernel_id": 0, "name": "k"}], [{"ceiling": "DRAM", "value": 1e12}])
    return ids


def _one_error(result, name: str) -> None:
    """One ``Error:`` line on stderr naming ``name``, exit 1, no traceback."""
    assert result.exit_code == 1, (result.exit_code, result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and name in lines[0], result.stderr
    assert "Traceback" not in result.output


@pytest.fixture(scope="module")
def compacted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("compacted") / "store"
    _store(root)
    compact.compact(root)
    return root


@pytest.mark.parametrize("kind", sorted(MANIFESTS))
def test_a_damaged_manifest_is_one_error_line_in_every_command(compacted, tmp_path: Path, kind: str) -> None:
    import shutil

    root = tmp_path / "store"
    shutil.copytree(compacted, root)
    (root / "compacted.json").write_bytes(MANIFESTS[kind])
    before = snapshot(root)
    runner = CliRunner()
    for args in (["sql", "SELECT count(*) FROM runs"], ["runs"], ["compact"], ["ingest", str(ERT)]):
        _one_error(runner.invoke(app, [*args, "--store", str(root)]), "compacted.json")
        assert snapshot(root) == before, args  # nothing written, nothing deleted
    r = runner.invoke(app, ["doctor", "--store", str(root), "-f", "json"])
    assert r.exit_code == 1, r.output
    rows = json.loads(r.stdout)
    damaged = [row for row in rows if row["path"].endswith("compacted.json")]
    assert len(damaged) == 1 and damaged[0]["problem"] == "damaged", rows
    assert "restore it from a backup" in damaged[0]["error"]
    assert not [row for row in rows if row["problem"] == "unpublished"], (
        rows
    )  # its files: not called leftovers
    assert snapshot(root) == before


def test_a_manifest_written_by_compact_reads_back(compacted) -> None:
    """The check refuses damage only: what rl compact writes (and a manifest without segments) reads."""
    assert Store(compacted).query("SELECT count(*) AS n FROM runs").column(0).to_pylist() == [3]


def _flip(path: Path, seed: int) -> None:
    """Change one bit of ``path``, at a place drawn from ``seed`` (the magic bytes excepted: a file that is not
    Parquet at all is named already)."""
    import random

    data = bytearray(path.read_bytes())
    rng = random.Random(seed)
    i = rng.randrange(4, len(data) - 4)
    data[i] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def partitions(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A store of three tiny runs with metrics (list values too) and the answer of each table before damage."""
    root = tmp_path_factory.mktemp("parts") / "store"
    metrics = [
        {
            "kernel_id": 0,
            "metric_name": f"m{i}",
            "unit": "byte",
            "value_double": float(i),
            "value_string": f"v{i}",
        }
        for i in range(40)
    ]
    for r in (f"{i:016x}" for i in range(3)):
        tiny_run(
            root,
            r,
            [{"kernel_id": k, "name": f"kernel-{k}"} for k in range(5)],
            [{"ceiling": "DRAM", "value": 1e12}],
            metrics,
        )
    answers = {t: _answer(root, t) for t in ("runs", "kernels", "metrics", "ceilings")}
    return root, answers


def _answer(root: Path, table: str) -> str:
    r = CliRunner().invoke(
        app, ["sql", f"SELECT * FROM {table} ORDER BY ALL", "--store", str(root), "-f", "csv"]
    )
    assert r.exit_code == 0, r.output
    return r.stdout


@pytest.mark.parametrize("table", ["runs", "kernels", "metrics", "ceilings"])
@pytest.mark.parametrize("seed", range(12))
def test_a_damaged_partition_is_named_or_reads_the_same(
    partitions, tmp_path: Path, table: str, seed: int
) -> None:
    """One bit changed anywhere in a partition: `rl sql` gives an answer or one Error line naming the file, and
    `rl doctor` lists the file whenever the answer is not the same (its page checksums: DuckDB, which checks none,
    may read a changed value silently; doctor does not pass it)."""
    import shutil

    src, answers = partitions
    root = tmp_path / "store"
    shutil.copytree(src, root)
    part = sorted((root / table).glob("run_id=*/part-0.parquet"))[seed % 3]
    _flip(part, seed)
    r = CliRunner().invoke(
        app, ["sql", f"SELECT * FROM {table} ORDER BY ALL", "--store", str(root), "-f", "csv"]
    )
    same = r.exit_code == 0 and r.stdout == answers[table]
    if r.exit_code != 0:
        _one_error(r, str(part))
    d = CliRunner().invoke(app, ["doctor", "--store", str(root), "-f", "json"])
    assert "Traceback" not in d.output and d.exception is None or isinstance(d.exception, SystemExit), (
        d.output
    )
    named = d.exit_code == 1 and str(part) in {row["path"] for row in json.loads(d.stdout or "[]")}
    assert named or same, (r.output, d.output)
