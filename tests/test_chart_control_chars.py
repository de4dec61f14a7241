"""Kernel names with characters XML cannot hold (ESC, BEL, U+FFFE) reach PNG and SVG charts as their escapes; the
report's HTML page and the terminal lines show them escaped too (the GPU name as well).

vl-convert draws PNG through SVG: before :func:`rooflake.render.engine.xml_safe`, such a name made ``rl roofline -o
x.png`` and ``rl report`` end in a traceback (``a non-XML character '\\u{1b}'``) and ``-o x.svg`` write a file that
is not well-formed XML. The name comes from a real report's CSV export with its first kernel renamed.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from rooflake.render.engine import xml_safe

from _support import FIXTURES

RL = Path(sys.executable).with_name("rl")
GOLDEN = FIXTURES / "golden" / "AveryClapp__ESMM-Research__profile_output.raw.csv"
# the chart shows its escapes (no NUL: a CSV holding one is binary, not an export)
PREFIX = "\x1b[31mX\x07\ufffe"
SHOWN = "\\x1b[31mX\\x07\\ufffe"


def _rl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(RL), *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding the A10G report's CSV export with its first kernel's name, and the GPU name of every row,
    prefixed by :data:`PREFIX`."""
    tmp = tmp_path_factory.mktemp("control_chars")
    with GOLDEN.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    column = rows[0].index("Kernel Name")
    rows[2][column] = PREFIX + rows[2][column]  # rows[1] holds the units
    gpu = rows[0].index("device__attribute_display_name")
    for row in rows[2:]:
        row[gpu] = PREFIX + row[gpu]
    src = tmp / "renamed.csv"
    with src.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f, quoting=csv.QUOTE_ALL).writerows(rows)
    root = tmp / "store"
    done = _rl("ingest", str(src), "--store", str(root))
    assert done.returncode == 0, done.stderr
    return root


@pytest.mark.parametrize("suffix", ["svg", "png"])
def test_roofline_chart_file(store: Path, tmp_path: Path, suffix: str) -> None:
    out = tmp_path / f"r.{suffix}"
    done = _rl("roofline", "--store", str(store), "--level", "all", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    data = out.read_bytes()
    if suffix == "png":
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
        return
    text = data.decode("utf-8")
    ET.fromstring(text)  # well-formed XML
    assert SHOWN in text
    assert "\x1b" not in text and "\x07" not in text and "\ufffe" not in text


def test_report(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    done = _rl("report", "--store", str(store), "-o", str(out))
    assert done.returncode == 0, done.stderr
    svgs = sorted(out.rglob("*.svg"))
    assert svgs and any(SHOWN in p.read_text(encoding="utf-8") for p in svgs)
    for p in svgs:
        ET.fromstring(p.read_text(encoding="utf-8"))
    page = (out / "index.html").read_text(encoding="utf-8")  # the kernel tables and the GPU name
    assert SHOWN + "NVIDIA A10G" in page
    assert "\x1b" not in page and "\x07" not in page and "\ufffe" not in page


def test_ceilings_show_headline(store: Path) -> None:
    done = _rl("ceilings", "show", "--store", str(store))
    assert done.returncode == 0, done.stderr
    headline = done.stdout.splitlines()[0]
    assert SHOWN + "NVIDIA A10G" in headline and "\x1b" not in done.stdout


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_xml_safe(ensure_ascii: bool) -> None:
    spec = {"data": {"values": [{"name": PREFIX + "k", "tab": "a\tb\nc", "astral": "\U0001f600", "u": "ü"}]}}
    out = json.loads(xml_safe(json.dumps(spec, ensure_ascii=ensure_ascii)))
    assert out == {
        "data": {"values": [{"name": SHOWN + "k", "tab": "a\tb\nc", "astral": "\U0001f600", "u": "ü"}]}
    }
    plain = json.dumps({"name": "gemm", "text": "a\\u001b is text"})  # a backslash, not ESC: unchanged
    assert json.loads(xml_safe(plain)) == json.loads(plain)
    clean = json.dumps({"name": "gemm"})
    assert xml_safe(clean) is clean
