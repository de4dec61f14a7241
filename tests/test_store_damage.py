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
