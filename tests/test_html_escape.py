"""Hostile names in HTML pages (issue 10): kernel names, NVTX text, labels and notes that hold markup reach every
page escaped. Pages built from tiny tables in code are opened in headless Chromium; the DOM it dumps must hold no
injected element and no script effect, and the hostile text must still be shown, as text.

Needs no fixture. Skipped, with the reason, where Chromium is not installed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from rooflake.render import roofline_chart, save_chart, time_roofline_chart, trajectory_chart, zero_flop_table
from rooflake.render.page import script_json
from rooflake.render.report import write_report

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (apt-get install chromium)"
)

# each one took effect in Chromium before the fix (issue 10)
SCRIPT = (
    "</script><script>document.title='PWNED';document.documentElement.setAttribute('data-pwned','1')</script>"
)
ELEMENT = "</script><b id=x>injected</b>"
COMMENT = "<!--<script>document.title='PWNED'</script>"
TAG = '"><img id=img src=x onerror="document.title=\'PWNED\'">'
SEPARATORS = "a\u2028b\u2029c"
HOSTILE = [SCRIPT, ELEMENT, COMMENT, TAG, SEPARATORS]
RUN = "hostile00000000a"


def _kernels() -> pl.DataFrame:
    """kernel_roofline-shaped rows: three kernels with FLOPs (one per hostile name) and one without (ELEMENT)."""
    rows = []
    for kid, name in enumerate([SCRIPT, COMMENT, TAG, ELEMENT]):
        flops = 0.0 if name == ELEMENT else 1e9 * (kid + 1)
        rows.append(
            {"run_id": RUN, "kernel_id": kid, "name": name, "short_name": name, "nvtx_path": f"{SCRIPT}:{ELEMENT}",
             "precision": "fp32", "is_dominant": True, "duration_ns": 1e6, "flops": flops,
             "achieved_flops_per_s": flops / 1e-3, "bytes_l1": 4e8, "bytes_l2": 2e8, "bytes_dram": 1e8,
             "ai_l1": flops / 4e8, "ai_l2": flops / 2e8, "ai_dram": flops / 1e8, "zero_flops": flops == 0,
             "bound": TAG, "flags": [ELEMENT]}
        )  # fmt: skip
    return pl.DataFrame(rows)


def _ceilings() -> pl.DataFrame:
    rows = [
        ("DRAM", "bandwidth", 1e12),
        ("L2", "bandwidth", 4e12),
        ("L1", "bandwidth", 1.6e13),
        ("FP32", "compute", 2e13),
    ]
    return pl.DataFrame(
        [{"run_id": RUN, "ceiling": c, "kind": k, "value": v, "source": SCRIPT, "formula": ELEMENT,
          "machine_key": TAG, "label": f"{c} {ELEMENT}"} for c, k, v in rows]
    )  # fmt: skip


def _time_rows() -> pl.DataFrame:
    rows = []
    for kid, name in enumerate([SCRIPT, ELEMENT]):
        rows.append(
            {"run_id": RUN, "grain": "kernel", "kernel_id": kid, "name": name, "short_name": name,
             "precision": "fp32", "duration_ns": 2e6, "flops": 1e9, "bytes_dram": 1e8, "t_min_ns": 1e6,
             "launch_overhead_ns": 3000.0, "launch_overhead_source": SCRIPT, "inefficiency": 2.0, "bound": TAG,
             "compute_time_ns": 5e4, "dram_time_ns": 1e5, "overhead_floor_ns": 3000.0, "flags": [ELEMENT]}
        )  # fmt: skip
    return pl.DataFrame(rows)


def _trajectory_rows() -> pl.DataFrame:
    rows = []
    for step, value in enumerate([SCRIPT, ELEMENT], start=1):
        rows.append(
            {"series": TAG, "entity": SCRIPT, "label": ELEMENT, "level": "dram", "run_id": f"{RUN[:-1]}{step}",
             "value": value, "step": step, "ai": 2.0 * step, "flops_per_s": 1e12 * step, "vary": SCRIPT,
             "entity_kind": "kernel", "precision": "fp32", "flags": [ELEMENT]}
        )  # fmt: skip
    return pl.DataFrame(rows)


def _dom(page: Path, tmp_path: Path) -> str:
    """The DOM Chromium builds from ``page`` (scripts run, vega-embed given time to draw)."""
    assert CHROMIUM is not None
    profile = tmp_path / f"chromium-{page.stem}"
    cmd = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--no-first-run", "--disable-component-update", "--disable-sync", "--disable-extensions",
        f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--dump-dom", page.as_uri(),
    ]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def _assert_clean(dom: str, charts: int) -> None:
    """No injected element or script effect; the charts drew (vega-embed ran on the escaped spec)."""
    title = re.search(r"<title>(.*?)</title>", dom, re.S)
    assert title is None or title.group(1) != "PWNED", "an injected script changed document.title"
    assert not re.search(r"<html[^>]*data-pwned", dom), "an injected script ran"
    assert not re.search(r"<b id=\"?x\"?>", dom), "an injected element was parsed"
    assert not re.search(r"<img id=\"?img\"?", dom), "an injected element was parsed"
    assert dom.count('class="marks"') == charts, "the charts were not drawn"


@needs_chromium
def test_roofline_page(tmp_path: Path) -> None:
    points = _kernels()
    chart = roofline_chart(points, _ceilings(), level="all", title=SCRIPT)
    page = tmp_path / "roofline.html"
    save_chart(chart, page, below=zero_flop_table(points))
    dom = _dom(page, tmp_path)
    _assert_clean(dom, charts=1)
    # the zero-FLOP kernel's name is shown, as text, in the table under the chart
    assert "<code>&lt;/script&gt;&lt;b id=x&gt;injected&lt;/b&gt;</code>" in dom


@needs_chromium
def test_time_and_trajectory_pages(tmp_path: Path) -> None:
    for name, chart in (
        ("time", time_roofline_chart(_time_rows(), _ceilings(), level="dram", title=ELEMENT)),
        ("trajectory", trajectory_chart(_trajectory_rows(), _ceilings(), level="dram", title=SCRIPT)),
    ):
        page = tmp_path / f"{name}.html"
        save_chart(chart, page)
        _assert_clean(_dom(page, tmp_path), charts=1)


@needs_chromium
def test_report_page(tmp_path: Path) -> None:
    points = _kernels()
    section: dict[str, Any] = {
        "title": SCRIPT,
        "meta": {ELEMENT: TAG, "labels": f"model={SCRIPT}"},
        "charts": [(ELEMENT, roofline_chart(points, _ceilings(), level="dram", title=SCRIPT))],
        "tables": [(TAG, zero_flop_table(points)), (COMMENT, points.select("name", "nvtx_path"))],
        "notes": [SCRIPT, SEPARATORS],
    }
    res = write_report([section], tmp_path / "rep", title=ELEMENT)
    dom = _dom(res["index"], tmp_path)
    _assert_clean(dom, charts=1)
    assert "&lt;/script&gt;&lt;b id=x&gt;injected&lt;/b&gt;" in dom  # the title and headings, as text


def test_script_json_cannot_end_a_script() -> None:
    """Without a browser: the embedded JSON holds no '<', '>', '&' or line separator, and parses back unchanged."""
    data = {"name": HOSTILE, "</script>": "&amp;"}
    out = script_json(data)
    assert not set(out) & {"<", ">", "&", "\u2028", "\u2029"}
    assert json.loads(out) == data


@pytest.fixture()
def hostile_store(tmp_path: Path) -> Path:
    """A store with one run whose kernel names and NVTX path are hostile (published in code, no fixture)."""
    from _support import tiny_run

    def kernel(kid: int, name: str, flops: float) -> dict[str, Any]:
        return {"kernel_id": kid, "name": name, "short_name": name, "nvtx_path": f"{ELEMENT}:{SCRIPT}",
                "duration_ns": 1e6, "flops_fp32": flops, "bytes_l1": 4e8, "bytes_l2": 2e8, "bytes_dram": 1e8,
                "device_id": 0}  # fmt: skip

    ceilings = {"DRAM": 1e12, "L2": 4e12, "L1": 1.6e13, "FP32": 2e13}
    root = tmp_path / "store"
    tiny_run(
        root,
        RUN,
        [kernel(0, SCRIPT, 1e9), kernel(1, TAG, 2e9), kernel(2, ELEMENT, 0.0)],
        [{"kernel_id": k, "ceiling": c, "value": v} for k in range(3) for c, v in ceilings.items()],
    )
    return root


@needs_chromium
def test_cli_pages_from_a_hostile_run(hostile_store: Path, tmp_path: Path) -> None:
    """``rl roofline`` (--level all, --time) and ``rl report`` on a run with hostile kernel names and NVTX text."""
    from typer.testing import CliRunner

    from rooflake.cli import app

    pages = {
        "all.html": ["roofline", RUN, "--level", "all"],
        "time.html": ["roofline", RUN, "--time"],
    }
    for name, args in pages.items():
        r = CliRunner().invoke(app, [*args, "--store", str(hostile_store), "-o", str(tmp_path / name)])
        assert r.exit_code == 0, (r.stdout, r.stderr)
        _assert_clean(_dom(tmp_path / name, tmp_path), charts=1)
    r = CliRunner().invoke(app, ["report", "--store", str(hostile_store), "-o", str(tmp_path / "rep")])
    assert r.exit_code == 0, (r.stdout, r.stderr)
    dom = _dom(tmp_path / "rep" / "index.html", tmp_path)
    _assert_clean(dom, charts=len(re.findall(r'<div id="chart-\d+-\d+"', dom)))
    assert "&lt;/script&gt;&lt;b id=x&gt;injected&lt;/b&gt;" in dom  # the zero-FLOP kernel's name, as text
