"""The NVTX stack sweep in numpy (rooflake.ingest.nsys_sweep) against its definition: an event-by-event sweep in
the documented order at one instant (pops of ranges that began earlier, pushes in push order, pops of zero-length
ranges, launch calls), written here as a plain loop, on generated lanes: nested, overlapping, zero-length, tied and
never-popped ranges."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rooflake.ingest import nsys_sweep

MAX = 2**63 - 1
Range = tuple[int, int, int | None]  # (range_id, start, end or None: never popped)


def reference(ranges: list[Range], launches: list[int]) -> tuple[dict, dict, list]:
    """(range_id -> depth, range_id -> parent id or None, innermost range id or None per launch), by sweeping
    every event in order with a running depth."""
    events = []
    for rid, start, end in ranges:
        events.append(((start, 1, ~(MAX if end is None else end), rid), "push", rid))
        if end is not None:
            events.append(((end, 2 if end == start else 0, ~start, -rid), "pop", rid))
    for i, t in enumerate(launches):
        events.append(((t, 3, 0, 0), "launch", i))
    level, last_at = 0, {}  # last_at: depth -> the latest range pushed at that depth
    depth, parent, inner = {}, {}, [None] * len(launches)
    for _, kind, ref in sorted(events):
        if kind == "push":
            depth[ref] = level
            parent[ref] = last_at.get(level - 1) if level >= 1 else None
            last_at[level] = ref
            level += 1
        elif kind == "pop":
            level -= 1
        elif level > 0:
            inner[ref] = last_at.get(level - 1)
    return depth, parent, inner


def arrays(ranges: list[Range]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(ids, starts, ends, popped) as nsys/sweep_ranges.sql gives them: end 0 where never popped."""
    ids = np.array([r[0] for r in ranges], dtype=np.int64)
    starts = np.array([r[1] for r in ranges], dtype=np.int64)
    ends = np.array([0 if r[2] is None else r[2] for r in ranges], dtype=np.int64)
    popped = np.array([r[2] is not None for r in ranges], dtype=bool)
    return ids, starts, ends, popped


def swept(ranges: list[Range], launches: list[int]) -> tuple[dict, dict, list]:
    """The same from nsys_sweep._lane, the ranges put in push order by nsys_sweep.push_order from the reverse of
    the order given (DuckDB's result comes in no particular order)."""
    ids, starts, ends, popped = arrays(ranges[::-1])
    order = nsys_sweep.push_order(np.zeros(len(ids), dtype=np.int32), ids, starts, ends, popped)
    ids, starts, ends, popped = ids[order], starts[order], ends[order], popped[order]
    depth, parent, inner = nsys_sweep._lane(starts, ends, popped, np.array(launches, dtype=np.int64))
    return (
        dict(zip(ids.tolist(), depth.tolist(), strict=True)),
        {int(i): (int(ids[p]) if p >= 0 else None) for i, p in zip(ids, parent, strict=True)},
        [int(ids[p]) if p >= 0 else None for p in inner],
    )


def nested(spans: list[tuple[int, int]]) -> list[Range]:
    """Properly nested push/pop ranges from (start, length) pairs: each one closes inside the innermost range open
    at its start, as a real push/pop stack does."""
    out: list[Range] = []
    open_: list[tuple[int, int]] = []  # (id, end)
    for start, length in sorted(spans):
        while open_ and open_[-1][1] <= start:
            open_.pop()
        end = start + length
        if open_:
            end = min(end, open_[-1][1])
        out.append((len(out) + 1, start, end))
        open_.append((len(out), end))
    return out


times = st.integers(min_value=0, max_value=40)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(times, st.integers(0, 15)), min_size=1, max_size=40), st.lists(times, max_size=20))
def test_nested_ranges_match_the_event_sweep(spans: list[tuple[int, int]], launches: list[int]) -> None:
    ranges = nested(spans)
    assert swept(ranges, launches) == reference(ranges, launches)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(times, st.one_of(st.none(), st.integers(0, 15))), min_size=1, max_size=40),
    st.lists(times, max_size=20),
)
def test_any_ranges_match_the_event_sweep(spans: list[tuple[int, int | None]], launches: list[int]) -> None:
    """Overlapping (improperly nested), zero-length, tied and never-popped ranges: the counts are those of the
    event-by-event sweep whatever the data."""
    ranges = [(i + 1, s, None if n is None else s + n) for i, (s, n) in enumerate(spans)]
    assert swept(ranges, launches) == reference(ranges, launches)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 3), st.integers(0, 6), st.one_of(st.none(), st.integers(0, 4))), max_size=60
    ),
    st.randoms(use_true_random=False),
)
def test_push_order_sorts_by_lane_start_later_end_and_id(rows: list, rnd) -> None:
    """push_order against Python's sort by (lane, start, ~end with never popped as the int64 limit, range id), on
    rows in any order with many ties (a few lanes, starts and lengths)."""
    ranges = [(i + 1, s, None if n is None else s + n) for i, (_, s, n) in enumerate(rows)]
    lanes = {i + 1: lane for i, (lane, _, _) in enumerate(rows)}
    rnd.shuffle(ranges)
    ids, starts, ends, popped = arrays(ranges)
    lane = np.array([lanes[r[0]] for r in ranges], dtype=np.int32)
    got = ids[nsys_sweep.push_order(lane, ids, starts, ends, popped)].tolist()
    want = [
        r[0]
        for r in sorted(ranges, key=lambda r: (lanes[r[0]], r[1], ~(MAX if r[2] is None else r[2]), r[0]))
    ]
    assert got == want


def test_instant_rules() -> None:
    """A launch at a push's instant is inside it, at a pop's instant outside; a zero-length range at a push's
    instant is that range's child."""
    ranges = [(1, 0, 10), (2, 10, 10), (3, 10, 20)]
    depth, parent, inner = swept(ranges, [0, 10, 20])
    assert depth == {1: 0, 2: 1, 3: 0} and parent == {1: None, 2: 3, 3: None}
    assert inner == [1, 3, None]


def test_groups_keep_threads_whole() -> None:
    lanes = [(1, 7, 600_000), (2, 7, 600_000), (3, 8, 10), (4, 9, 999_990), (5, 10, 5)]
    assert nsys_sweep._groups(lanes) == [(1, 2), (3, 4), (5, 5)]


def test_stacks_marks_innermost_ranges_and_their_ancestors() -> None:
    parent = np.array([-1, 0, 1, 0, -1, 4])
    on = nsys_sweep._stacks(np.array([2, 2]), parent)
    assert on.tolist() == [True, True, True, False, False, False]


def test_an_empty_result_is_an_empty_array() -> None:
    """No launch call on a lane's thread: DuckDB's result has no chunk at all."""
    import pyarrow as pa

    got = nsys_sweep._np(pa.chunked_array([], type=pa.int64()))
    assert got.dtype == np.int64 and len(got) == 0
    assert nsys_sweep._np(pa.chunked_array([[1, 2], [3]])).tolist() == [1, 2, 3]
