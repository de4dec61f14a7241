"""Attribution and layer_summary golden tests on a tiny Nsight Systems export built in code: nested ranges on two
threads, a kernel outside every range, one launched while only another thread had ranges open, a start/end range
ended on another thread and overlapping a second one, a PyTorch op range, a second NVTX domain, a kernel with no
launch row, a mark, and a memcpy."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from rooflake import queries
from rooflake.pipeline import ingest_file
from rooflake.store import Store

PID = 7 << 24  # nsys globalPid: the process in bits 24+, the thread id below
A, B, C = PID + 1, PID + 2, PID + 3  # three threads

# (start, end, eventType, text, globalTid, endGlobalTid, domainId); 59 push/pop, 60 start/end, 34 mark, 75 domain
NVTX = [
    (0, 100, 59, "outer", A, None, 0),
    (10, 50, 59, "inner", A, None, 0),
    (70, 80, 59, "aten::mm, op_id = 7", A, None, 0),
    (5, None, 34, "tick", A, None, 0),
    (0, 200, 59, "b_outer", B, None, 0),
    (5, 15, 59, "b_inner", B, None, 0),
    (250, 400, 60, "async", A, C, 0),
    (320, 500, 60, "se2", C, None, 0),
    (1, None, 75, "dom", A, None, 1),
    (200, 210, 59, "d_range", A, None, 1),
]
# kernel name, launch thread, launch time (None: no API row), GPU start, duration
KERNELS = [
    ("k1", A, 20, 1000, 10),  # outer/inner
    ("k2", A, 60, 1100, 20),  # outer
    ("k3", A, 50, 1200, 30),  # inner was popped at 50 (end exclusive): outer
    ("k4", A, 10, 1300, 40),  # inner pushed at 10 (start inclusive): outer/inner
    ("k5", B, 100, 1400, 50),  # b_outer
    ("k6", C, 600, 1500, 60),  # nothing open anywhere: no_range_open
    ("k7", C, 30, 1600, 70),  # only thread A/B ranges open: other_thread
    ("k8", C, 350, 1700, 80),  # start/end ranges async + se2 (async ended on thread C)
    ("k9", A, 75, 1800, 90),  # outer/aten::mm (op suffix cut)
    ("k10", A, None, 1900, 100),  # no runtime row: no_launch_row
    ("k11", A, 205, 2000, 110),  # dom:d_range
]
EXPECTED = {
    "k1": ("<default domain>:outer/inner", "push_pop", None),
    "k2": ("<default domain>:outer", "push_pop", None),
    "k3": ("<default domain>:outer", "push_pop", None),
    "k4": ("<default domain>:outer/inner", "push_pop", None),
    "k5": ("<default domain>:b_outer", "push_pop", None),
    "k6": (None, "no_range_open", None),
    "k7": (None, "other_thread", None),
    "k8": (None, "start_end", ["async", "se2"]),
    "k9": ("<default domain>:outer/aten::mm", "push_pop", None),
    "k10": (None, "no_launch_row", None),
    "k11": ("dom:d_range", "push_pop", None),
}


def build_export(path: Path) -> None:
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, text TEXT,
            globalTid INTEGER, endGlobalTid INTEGER, domainId INTEGER, textId INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER,
            globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER,
            streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER,
            mangledName INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER,
            blockZ INTEGER, registersPerThread INTEGER, staticSharedMemory INTEGER, dynamicSharedMemory INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER,
            streamId INTEGER, correlationId INTEGER, globalPid INTEGER, bytes INTEGER, copyKind INTEGER);
        CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
        INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.99.0');
        INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel'), (2, 'cudaMemcpyAsync');
        """
    )
    db.executemany("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, ?, ?, ?, NULL)", NVTX)
    for i, (name, thread, launch, start, dur) in enumerate(KERNELS):
        sid = 100 + i
        db.execute("INSERT INTO StringIds VALUES (?, ?)", [sid, name])
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 1, 7, ?, ?, ?, ?, ?, 1, 1, 1, 32, 1, 1, 16, 0, 0)",
            [start, start + dur, 1000 + i, PID, sid, sid, sid],
        )
        if launch is not None:
            db.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, 1, 0)",
                [launch, launch + 1, thread, 1000 + i],
            )
    # a memcpy issued inside outer/inner: counts in GPU time, not in kernels
    db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (15, 16, 0, ?, 5000, 2, 0)", [A])
    db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (3000, 3200, 0, 1, 7, 5000, ?, 4096, 1)", [PID])
    db.commit()
    db.close()


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("tiny_nsys")
    build_export(tmp / "tiny.sqlite")
    res = ingest_file(tmp / "tiny.sqlite", tmp / "store")
    assert res.kernels == len(KERNELS)
    return queries.connect(Store(tmp / "store"))


def test_kernel_attribution(con) -> None:
    rows = con.execute("SELECT name, nvtx_path, attribution, nvtx_start_end FROM kernels").fetchall()
    assert {name: (path, how, se) for name, path, how, se in rows} == EXPECTED


def test_ranges_depth_parent_kind(con) -> None:
    rows = {
        r[0]: r[1:]
        for r in con.execute(
            "SELECT c.name, c.kind, c.depth, p.name, c.domain, c.start_ns, c.end_ns, c.text, c.thread, c.end_thread "
            "FROM ranges c LEFT JOIN ranges p ON p.run_id = c.run_id AND p.range_id = c.parent_id"
        ).fetchall()
    }
    assert rows["outer"][:4] == ("push_pop", 0, None, "<default domain>")
    assert rows["inner"][:3] == ("push_pop", 1, "outer")
    assert rows["aten::mm"][:3] == ("push_pop", 1, "outer") and rows["aten::mm"][6] == "aten::mm, op_id = 7"
    assert rows["b_inner"][:3] == ("push_pop", 1, "b_outer") and rows["b_inner"][7] == B
    assert rows["tick"][:2] == ("mark", None) and rows["tick"][4] == rows["tick"][5] == 5
    assert rows["async"][:2] == ("start_end", None) and rows["async"][8] == C
    assert rows["d_range"][:4] == ("push_pop", 0, None, "dom")
    assert len(rows) == len(NVTX) - 1  # the domain-create event is not a range


def test_coverage(con) -> None:
    got = dict(
        (a, (n, t))
        for a, n, t in con.execute(
            "SELECT attribution, ops, gpu_time_ns FROM coverage WHERE op_kind = 'kernel'"
        ).fetchall()
    )
    assert got == {
        "push_pop": (7, 10 + 20 + 30 + 40 + 50 + 90 + 110),
        "no_range_open": (1, 60),
        "other_thread": (1, 70),
        "start_end": (1, 80),
        "no_launch_row": (1, 100),
    }
    assert con.execute("SELECT attribution, ops FROM coverage WHERE op_kind = 'memcpy'").fetchall() == [
        ("push_pop", 1)
    ]


def test_layer_summary_golden(con) -> None:
    rows = con.execute(
        "SELECT depth, layer, kernels, launches, memops, gpu_time_ns, kernel_time_ns, share_of_gpu_time "
        "FROM layer_summary ORDER BY depth, layer"
    ).fetchall()
    total = sum(k[4] for k in KERNELS) + 200
    outer_1 = 10 + 20 + 30 + 40 + 90  # k1..k4, k9
    expected = [
        (1, "(no NVTX range)", 4, 4, 0, 60 + 70 + 80 + 100, 60 + 70 + 80 + 100),
        (1, "<default domain>:b_outer", 1, 1, 0, 50, 50),
        (1, "<default domain>:outer", 5, 5, 1, outer_1 + 200, outer_1),
        (1, "dom:d_range", 1, 1, 0, 110, 110),
        (2, "(no NVTX range)", 4, 4, 0, 310, 310),
        (2, "<default domain>:b_outer", 1, 1, 0, 50, 50),
        (2, "<default domain>:outer", 2, 2, 0, 20 + 30, 20 + 30),
        (2, "<default domain>:outer/aten::mm", 1, 1, 0, 90, 90),
        (2, "<default domain>:outer/inner", 2, 2, 1, 10 + 40 + 200, 10 + 40),
        (2, "dom:d_range", 1, 1, 0, 110, 110),
    ]
    assert [r[:7] for r in rows] == expected
    for r in rows:
        assert r[7] == pytest.approx(r[5] / total)
    for depth in (1, 2):
        assert sum(r[7] for r in rows if r[0] == depth) == pytest.approx(1.0)


def _tiny(tmp_path: Path, nvtx: list[tuple], kernels: list[tuple]):
    """A store holding one export with only ``nvtx`` rows and ``kernels`` (name, thread, launch time)."""
    db = sqlite3.connect(tmp_path / "t.sqlite")
    db.executescript(
        """
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, text TEXT,
            globalTid INTEGER, endGlobalTid INTEGER, domainId INTEGER, textId INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, globalTid INTEGER,
            correlationId INTEGER, nameId INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,
            correlationId INTEGER, globalPid INTEGER, demangledName INTEGER);
        INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel');
        """
    )
    db.executemany("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, ?, ?, NULL, 0, NULL)", nvtx)
    for i, (name, thread, launch) in enumerate(kernels):
        db.execute("INSERT INTO StringIds VALUES (?, ?)", [100 + i, name])
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, ?, ?, ?)",
            [1000 + i, 1001 + i, i, PID, 100 + i],
        )
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, 1)", [launch, launch + 1, thread, i]
        )
    db.commit()
    db.close()
    ingest_file(tmp_path / "t.sqlite", tmp_path / "s")
    return queries.connect(Store(tmp_path / "s"))


def test_ranges_ending_at_the_same_instant(tmp_path: Path) -> None:
    # outer and inner both end at 100 (inner has the later row id); a launch after them sits in no range
    con = _tiny(tmp_path, [(0, 100, "outer", A), (10, 100, "inner", A)], [("in", A, 50), ("after", A, 150)])
    got = dict(con.execute("SELECT name, coalesce(nvtx_path, attribution) FROM kernels").fetchall())
    assert got == {"in": "<default domain>:outer/inner", "after": "no_range_open"}


def test_zero_length_range(tmp_path: Path) -> None:
    con = _tiny(tmp_path, [(0, 100, "outer", A), (10, 10, "empty", A)], [("at", A, 10), ("later", A, 50)])
    got = dict(con.execute("SELECT name, nvtx_path FROM kernels").fetchall())
    assert got == {"at": "<default domain>:outer", "later": "<default domain>:outer"}
    rows = con.execute(
        "SELECT c.name, c.depth, p.name FROM ranges c LEFT JOIN ranges p ON p.range_id = c.parent_id ORDER BY c.start_ns"
    ).fetchall()
    assert rows == [("outer", 0, None), ("empty", 1, "outer")]


def test_ranges_starting_at_the_same_instant(tmp_path: Path) -> None:
    # outer and inner both start at 0; the longer one is the outer one whatever the row order
    con = _tiny(tmp_path, [(0, 50, "inner", A), (0, 100, "outer", A)], [("k", A, 0), ("k2", A, 60)])
    got = dict(con.execute("SELECT name, nvtx_path FROM kernels").fetchall())
    assert got == {"k": "<default domain>:outer/inner", "k2": "<default domain>:outer"}


def test_a_range_without_a_thread_is_left_out_of_the_nesting(tmp_path: Path) -> None:
    """A push/pop row with no globalTid belongs to no lane: no depth, no parent; the other ranges nest as usual."""
    con = _tiny(
        tmp_path, [(0, 100, "outer", A), (10, 50, "lost", None), (20, 30, "inner", A)], [("k", A, 25)]
    )
    assert con.execute("SELECT nvtx_path FROM kernels").fetchall() == [("<default domain>:outer/inner",)]
    rows = con.execute("SELECT name, depth FROM ranges ORDER BY start_ns").fetchall()
    assert rows == [("outer", 0), ("lost", None), ("inner", 1)]
