"""Corrupt Nsight Compute reports (issue 10): one line, always. ncu_report's own logging (absl/protobuf, written to
file descriptor 2 by C++) is captured during the read, and what it said goes into rooflake's one error line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from _support import fixture

GOOD = fixture("NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__CuVectorAddDrv")


def _corrupt_header(tmp_path: Path) -> Path:
    """The report with its file header's first field tag changed from 1 to 2 (byte 8: 0x08 -> 0x10): the framing
    is intact, and protobuf logs that the header lacks its required Version."""
    data = bytearray(GOOD.read_bytes())
    assert data[8] == 0x08
    data[8] = 0x10
    path = tmp_path / "header.ncu-rep"
    path.write_bytes(bytes(data))
    return path


def test_ncu_report_logging_stays_out_of_stderr(tmp_path: Path) -> None:
    path = _corrupt_header(tmp_path)
    code = (
        "import sys\nfrom rooflake.ingest import ncu_rep\nfrom rooflake.schema import InputError\n"
        "try:\n    ncu_rep.read(sys.argv[1], run_id='r')\nexcept InputError as e:\n    print(e)\n"
    )
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert r.stderr == ""
    assert r.stdout.splitlines() == [
        f"{path}: the report holds no ranges (not a readable Nsight Compute report); ncu_report: Can't parse "
        'message of type "NV.Profiler.Messages.FileHeader" because it is missing required fields: Version'
    ]
