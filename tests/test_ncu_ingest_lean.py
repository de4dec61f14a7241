"""ncu ingest spends its time reading the report (issue 14): no pandas import where Arrow tables are built, and the
start-up every ingest worker would repeat (the main script's imports) done once, in the fork server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from _support import fixture


def _stand_in_pandas(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose ``pandas`` is a stand-in recording each import of it (a file ``imported.PID``)."""
    fake = tmp_path / "site" / "pandas"
    fake.mkdir(parents=True)
    marker = tmp_path / "imported"
    (fake / "__init__.py").write_text(
        f"import os\nopen({str(marker)!r} + '.' + str(os.getpid()), 'w').close()\nraise ImportError('stand-in')\n"
    )
    path = os.pathsep.join(p for p in (str(tmp_path / "site"), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}, tmp_path


def test_one_report_ingested_in_process_never_imports_pandas(tmp_path: Path) -> None:
    """``rl ingest FILE`` reads the report in the ``rl`` process itself: building its Arrow tables (``pa.table`` of
    Python lists) must not import pandas there either (0.8 s of a 1.5 s ingest where pandas is installed)."""
    env, where = _stand_in_pandas(tmp_path)
    code = "import sys; from rooflake.cli import main; sys.argv[0] = 'rl'; main()"
    report = fixture("NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__manual_nvtx")
    p = subprocess.run(
        [sys.executable, "-c", code, "ingest", str(report), "--store", str(tmp_path / "s")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("ingested") and "3 kernels" in p.stdout, p.stdout
    assert not list(where.glob("imported.*"))


def test_pandas_still_usable_after_an_ingest(tmp_path: Path) -> None:
    """pyarrow settles 'no pandas' during the ingest, yet retries the import for an explicit conversion: a caller
    that imports pandas afterwards converts both ways (the real pandas when it is installed; skipped otherwise)."""
    code = (
        "import importlib.util, sys\n"
        "if importlib.util.find_spec('pandas') is None: print('no pandas'); sys.exit(0)\n"
        "from rooflake.pipeline import ingest_file\n"
        f"r = ingest_file({str(fixture('NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__CuVectorAddDrv'))!r}, "
        f"{str(tmp_path / 's')!r})\n"
        "assert 'pandas' not in sys.modules\n"
        "import pandas as pd, pyarrow as pa\n"
        "df = pa.table({'x': [1, 2]}).to_pandas()\n"
        "assert list(df['x']) == [1, 2]\n"
        "assert pa.Table.from_pandas(df).column('x').to_pylist() == [1, 2]\n"
        "print('ok', r.kernels)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() in ("ok 1", "no pandas"), p.stdout


def test_workers_find_the_main_scripts_imports_done(tmp_path: Path) -> None:
    """A worker from the fork server runs the parent's main script again (the ``rl`` console script imports
    ``rooflake.cli``); the server imported that script's rooflake modules already, so each worker finds them in
    ``sys.modules`` instead of importing them again (40 ms per report)."""
    marks = tmp_path / "mark"
    script = tmp_path / "rl_like.py"
    reports = [fixture("AveryClapp__ESMM-Research__profile_output"), fixture("armleth__cuda-mlp-inference")]
    script.write_text(
        "import os, sys\n"
        "if __name__ == '__mp_main__':\n"
        f"    open({str(marks)!r} + '.' + str(os.getpid()), 'w').write(str('rooflake.cli' in sys.modules))\n"
        "from rooflake.cli import main\n"
        "if __name__ == '__main__':\n"
        "    from rooflake.pipeline import ingest_paths, main_script_modules\n"
        "    print('rooflake.cli' in main_script_modules())\n"
        f"    for r in ingest_paths({[str(r) for r in reports]!r}, {str(tmp_path / 's')!r}, workers=2):\n"
        "        print(r.status, r.kernels)\n"
    )
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "True"
    assert sorted(lines[1:]) == ["ingested 1", "ingested 4"]
    seen = [m.read_text() for m in tmp_path.glob("mark.*")]
    assert seen and set(seen) == {"True"}, seen


def test_no_main_script_no_preload() -> None:
    """Run with ``-c`` (no script file: workers run nothing again), nothing extra is preloaded."""
    code = "from rooflake.cli import main\nfrom rooflake.pipeline import main_script_modules\nprint(main_script_modules())"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"
