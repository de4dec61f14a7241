"""The NVTX stack sweep of the Nsight Systems reader, in numpy: the depth and parent of every push/pop range, the
innermost push/pop range open at every GPU operation's launch call, and the ranges on those operations' stacks
(:func:`sweep`, called by :func:`rooflake.ingest.nsys_sqlite.attribute` between ``nsys/ranges.sql`` and
``nsys/range_names.sql``). DuckDB reads the ranges and launch calls, numpy counts, DuckDB stores the results.

Push/pop ranges nest per lane = (thread, domain). Within a lane, the ranges are put in push order (start ascending,
then the later-ending first, then the lower range id: :func:`push_order`). Every event of the
lane (each range's push at its start and pop at its end, and the launch calls made on its thread) falls in one total
order; at one instant: pops of ranges that began earlier, pushes in push order, pops of zero-length ranges, launch
calls (a range pushed at exactly t contains a launch at t, one popped at t does not). The open depth before an event
is the pushes before it minus the pops before it; both counts are binary searches (``numpy.searchsorted``) in the
sorted starts and the sorted ends, so no sort of the merged events is needed:

- a range's depth = its position in push order - the pops before its push (ends <= its start, less the zero-length
  ranges at its start, which pop after it is pushed);
- its parent = the latest range pushed before it at one depth less (absent at depth 0);
- a launch call at t: level = the pushes at or before t - the pops at or before t; when level > 0, its innermost
  range is the latest range pushed at or before t at depth level - 1.

These are the definitions of the event-by-event sweep (a running sum of +1 per push and -1 per pop in that order,
and an ASOF match one level up), computed by counting: they hold whatever the data, improperly nested ranges
included. An operation launched on a thread with several lanes (domains) takes the latest-pushed of its lanes'
innermost ranges (pushed at the same instant: the higher range id).

Each range's depth and parent are put at its row's position in the NVTX source (``src_pos``) in two arrays that
``pp`` then holds in that order, so that the output joins them by position (``nsys/ranges.sql``).

Memory: lanes are read in groups of whole threads of at most :data:`GROUP_RANGES` ranges (a thread with more is
one group), read batch by batch into numpy arrays, ~75 bytes per range of the group at a time in numpy's memory
(+200 MB at the 2.8M-range lane of the range-heavy copy x8), and 12 bytes per NVTX row for the depths and parents
(+69 MB there), outside DuckDB's limit, which is lowered while the sweep runs (:data:`SWEEP_MEMORY_LIMIT`: 60 MB,
where 100 MB peaked 10 MB higher at that copy). Big arrays are their own mmap
(:func:`rooflake.ingest.nsys_export.mmap_big_allocations`) and the heaps are trimmed after each group, so that the
memory is given back before DuckDB's next steps (kept, it raised their peaks by ~50 MB). Time at that copy (1.2M
kernels, 5.7M ranges, two lanes of 2.8M): ~2.55 s wall for the sweep (3.1 s with DuckDB's ORDER BY putting the
ranges in push order), against 5.9 s for the SQL sweep it replaced (one sort of every push, pop and launch event,
slice by slice, then window functions and ASOF joins) and its walk up the stacks.
"""

from __future__ import annotations

from typing import Any

from rooflake.ingest import nsys_export, sqlscript

# push/pop ranges per group of threads read at once (a thread with more is read alone)
GROUP_RANGES = 1_000_000
# rows per batch of the ranges read from DuckDB
BATCH_ROWS = 1 << 16
# rows of pp appended per statement (nsys/sweep_pp.sql)
PP_ROWS = 1 << 20
# DuckDB's memory limit while the sweep holds a group's arrays in Python memory (the caller sets the reader's own
# limit again after; the sweep's queries are scans)
SWEEP_MEMORY_LIMIT = "60MB"


def sweep(con: Any) -> None:
    """Fill the tables ``pp`` (depth, parent_id: every push/pop range's, at its row's position in ``nvtx_raw``),
    ``op_inner`` (uid, innermost: every GPU operation with a push/pop range open on its launching thread at its
    launch call) and ``walk_ids`` (id, parent_id, depth: the ranges on those operations' stacks, each innermost
    range and its ancestors) that ``nsys/ranges.sql`` creates, from its ``lanes`` and ``push_pop`` and from ``ops``
    (the module docstring has the method). Depths are 0 for an outermost range; ``parent_id`` is NULL at depth 0.
    Leaves DuckDB's memory limit at :data:`SWEEP_MEMORY_LIMIT` (the caller sets its own again). Raises
    ``duckdb.Error`` when a statement fails."""
    from rooflake.schema.without_pandas import pyarrow_without_pandas

    nsys_export.mmap_big_allocations()
    sqlscript.run(con, "nsys/memory_limit.sql", memory_limit=SWEEP_MEMORY_LIMIT)
    rows = sqlscript.run(con, "nsys/sweep_lanes.sql").fetchall()
    lanes = [(lane, thread, n) for lane, thread, n, _ in rows]
    # (numpy from Arrow and back makes pyarrow import pandas where installed: 0.17 s, and ~30 MB resident for the
    # rest of the ingest)
    with pyarrow_without_pandas():
        found = _Found(max((last for *_, last in rows), default=-1) + 1)
        for lo, hi in _groups(lanes):
            _group(con, lo, hi, lanes[lo - 1 : hi], found)
            nsys_export.trim_heap()
        found.store(con)


class _Found:
    """Every push/pop range's depth and parent id by its row's position in ``nvtx_raw`` (``src_pos``), as the
    groups are swept; :meth:`store` writes them to ``pp`` in position order. ``size`` rows (the position of the last
    push/pop range in a lane + 1: marks and other rows before it count too), 12 bytes each: 69 MB at the x8 copy's
    5.7M ranges."""

    def __init__(self, size: int) -> None:
        import numpy as np

        self.depth = np.full(size, -1, dtype=np.int32)  # -1: no push/pop range in a lane at this position
        self.parent = np.zeros(size, dtype=np.int64)  # meaningful where depth >= 1

    def __len__(self) -> int:
        return len(self.depth)

    def put(self, pos: Any, ids: Any, depth: Any, parent: Any) -> None:
        """Put a group's results: ranges ``ids`` at positions ``pos``, their ``depth`` and the group position of
        their ``parent`` (-1 at depth 0: a range at depth d >= 1 always has one, since depths rise by at most one
        from a push to the next, from 0)."""
        self.depth[pos] = depth
        up = parent >= 0
        self.parent[pos[up]] = ids[parent[up]]

    def store(self, con: Any) -> None:
        """Append the rows to ``pp`` (``nsys/sweep_pp.sql``), :data:`PP_ROWS` at a time, in position order: NULL
        depth where no range was swept, NULL parent_id at depth 0 and there."""
        import pyarrow as pa

        system = pa.system_memory_pool()  # (given back when freed: Arrow's own pool keeps it)
        for a in range(0, len(self.depth), PP_ROWS):
            depth = self.depth[a : a + PP_ROWS]
            rows = pa.table(
                {
                    "depth": pa.array(depth, mask=depth < 0, memory_pool=system),
                    "parent_id": pa.array(self.parent[a : a + PP_ROWS], mask=depth <= 0, memory_pool=system),
                }
            )
            con.register("sweep_pp", rows)
            try:
                sqlscript.run(con, "nsys/sweep_pp.sql")
            finally:
                con.unregister("sweep_pp")
        del self.depth, self.parent


def _group(con: Any, lo: int, hi: int, lanes: list[tuple[int, int, int]], found: _Found) -> None:
    """Sweep lanes ``lo`` to ``hi`` (``lanes``: their (lane, thread, ranges)): put the depths and parents in
    ``found``, and store the other results."""
    import pyarrow as pa

    l_thread, l_uid, l_t = _launches(con, lo, hi)
    lane, ids, starts, ends, popped, pos = _ranges(con, lo, hi, sum(n for _, _, n in lanes), len(found))
    nsys_export.purge(con)  # what DuckDB's allocator kept of the two queries
    order = push_order(lane, ids, starts, ends, popped)
    del lane
    # (one array at a time: each gather is a copy)
    ids = ids[order]
    starts = starts[order]
    ends = ends[order]
    popped = popped[order]
    pos = pos[order]
    del order
    depth, parent, best = _lanes(lanes, ids, starts, ends, popped, l_thread, l_t)
    del starts, ends, popped
    found.put(pos, ids, depth, parent)
    del pos
    hit = best >= 0
    inner = pa.table({"uid": l_uid[hit], "innermost": ids[best[hit]]})
    on_stack = _stacks(best[hit], parent)
    del best, hit, l_thread, l_uid, l_t
    # (numpy's memory, and the system pool's for Arrow's validity bitmaps: Arrow's own pool keeps ~10 MB after)
    walk = pa.table(
        {
            "range_id": ids[on_stack],
            "depth": depth[on_stack],
            "parent_id": _ids(ids, parent[on_stack], pa.system_memory_pool()),
        }
    )
    del parent, depth, on_stack, ids
    tables = {"sweep_inner": inner, "sweep_walk": walk}
    for name, table in tables.items():
        con.register(name, table)
    sqlscript.run(con, "nsys/sweep_store.sql")
    for name in tables:
        con.unregister(name)


def _launches(con: Any, lo: int, hi: int) -> tuple[Any, Any, Any]:
    """The launch calls on the threads of lanes ``lo`` to ``hi`` (``nsys/sweep_launches.sql``): numpy arrays
    (thread, uid, start), by thread, then uid."""
    import numpy as np

    launches = sqlscript.arrow(con, "nsys/sweep_launches.sql", lo=lo, hi=hi)
    thread, uid, t = (_np(launches[c]) for c in ("thread", "uid", "t"))
    del launches
    order = np.lexsort((uid, thread))
    return thread[order], uid[order], t[order]


def _ranges(con: Any, lo: int, hi: int, n: int, size: int) -> tuple[Any, Any, Any, Any, Any, Any]:
    """The ``n`` push/pop ranges of lanes ``lo`` to ``hi`` (``nsys/sweep_ranges.sql``, in DuckDB's order): numpy
    arrays (lane, range_id, start, end, popped, position in ``nvtx_raw``: below ``size``, int32 where that fits),
    filled one batch at a time (no whole Arrow result beside them: -80 MB at a 2.8M-range lane)."""
    import numpy as np

    cols = {
        "lane": np.int32,
        "range_id": np.int64,
        "start_ns": np.int64,
        "end_ns": np.int64,
        "open": np.uint8,
        "src_pos": np.int32 if size <= np.iinfo(np.int32).max else np.int64,
    }
    out = {c: np.empty(n, dtype=t) for c, t in cols.items()}
    at = 0
    for batch in sqlscript.batches(con, "nsys/sweep_ranges.sql", BATCH_ROWS, lo=lo, hi=hi):
        k = batch.num_rows
        for c, a in out.items():
            a[at : at + k] = batch.column(c).to_numpy()
        at += k
    lane, ids, starts, ends, open_, pos = (a[:at] for a in out.values())  # at == n: lanes.n counts these rows
    return lane, ids, starts, ends, open_ == 0, pos


def push_order(lane: Any, ids: Any, starts: Any, ends: Any, popped: Any) -> Any:
    """The positions that put ranges lane by lane in push order: by ``lane``, then start ascending, then the
    later-ending first (never popped, where ``popped`` is false: first of all, as if it ended at the int64 limit),
    then the lower range id (``ids``). A stable sort by lane and start (fast on keys nearly in order, as an export
    holds its NVTX events by start: 0.02 s at 2.8M ranges, where sorting by every key took 0.24 s), then the runs
    of ranges pushed at one instant sorted by the other keys."""
    import numpy as np

    multi = bool(len(lane)) and lane.min() != lane.max()
    order = np.lexsort((starts, lane)) if multi else np.argsort(starts, kind="stable")
    at = starts[order]
    tied = at[1:] == at[:-1]
    del at
    if multi:
        in_lane = lane[order]
        tied &= in_lane[1:] == in_lane[:-1]
        del in_lane
    if tied.any():
        pairs = np.flatnonzero(tied)
        members = np.union1d(pairs, pairs + 1)  # positions in order within a run of ties, ascending
        first = np.ones(len(members), dtype=bool)  # a member not tied with the position before starts a run
        first[1:] = ~tied[members[1:] - 1]
        runs = np.cumsum(first)
        sub = order[members]
        later_first = np.where(popped[sub], ~ends[sub], np.iinfo(np.int64).min)  # ~end = -end - 1: descending
        order[members] = sub[np.lexsort((ids[sub], later_first, runs))]
    return order


def _lanes(
    lanes: list[tuple[int, int, int]], ids: Any, starts: Any, ends: Any, popped: Any, l_thread: Any, l_t: Any
) -> tuple[Any, Any, Any]:
    """The sweep of a group's ``lanes`` (lane, thread, ranges), whose ranges come lane by lane in push order:
    (depth of each range, position of its parent in the group or -1, position of each launch call's innermost
    range or -1). ``l_thread``/``l_t``: the launch calls' threads (sorted) and times."""
    import numpy as np

    if len(lanes) == 1:  # the lane's arrays are the group's (no copy: -33 MB at a 2.8M-range lane)
        depth, parent, inner = _lane(starts, ends, popped, l_t)
        return depth, parent, inner  # (the group's launch calls are all on the lane's thread)
    depth = np.empty(len(ids), dtype=np.int32)
    parent = np.empty(len(ids), dtype=np.int64)
    best = np.full(len(l_t), -1, dtype=np.int64)
    a = 0
    for _, thread, n in lanes:
        b = a + n
        # launches come by thread, then uid (two searches: thread + 1 could pass the int64 range)
        la, lb = np.searchsorted(l_thread, thread, "left"), np.searchsorted(l_thread, thread, "right")
        depth[a:b], p, inner = _lane(starts[a:b], ends[a:b], popped[a:b], l_t[la:lb])
        p[p >= 0] += a
        parent[a:b] = p
        del p
        # the latest-pushed of the thread's lanes' innermost ranges (the same instant: the higher range id)
        inner[inner >= 0] += a
        cur = best[la:lb]
        new, old = np.maximum(inner, 0), np.maximum(cur, 0)
        later = (starts[new] > starts[old]) | ((starts[new] == starts[old]) & (ids[new] > ids[old]))
        best[la:lb] = np.where((inner >= 0) & ((cur < 0) | later), inner, cur)
        a = b
    return depth, parent, best


def _lane(starts: Any, ends: Any, popped: Any, launch_t: Any) -> tuple[Any, Any, Any]:
    """One lane: (depth of each range (int32), position of its parent or -1, position of each launch's innermost
    range or -1), positions in push order; ``starts``/``ends`` in push order (``ends`` meaningless where not
    ``popped``), ``launch_t`` the times of the launch calls on the lane's thread. (Temporaries freed as soon as
    done with: at a 2.8M-range lane this peaks ~120 MB above its inputs.)"""
    import numpy as np

    n = len(starts)
    all_popped = bool(popped.all())
    # (numpy's stable sort, a timsort here, runs through the ends of nested ranges, nearly in order already: 0.015 s
    # at a 2.8M-range lane where the default quicksort took 0.17; on random ends it is ~15% slower)
    ends_sorted = np.sort(ends if all_popped else ends[popped], kind="stable")
    pops = np.searchsorted(ends_sorted, starts, "right")  # first the pops before each push
    # the launch calls' open depths (here: ends_sorted is freed after)
    pushed = np.searchsorted(starts, launch_t, "right")
    level = pushed - np.searchsorted(ends_sorted, launch_t, "right")
    del ends_sorted
    zero = starts[(ends == starts) if all_popped else (popped & (ends == starts))]
    if len(zero):  # zero-length ranges: popped after every push at their instant
        pops -= np.searchsorted(zero, starts, "right")
        pops += np.searchsorted(zero, starts, "left")
    del zero
    np.subtract(np.arange(n, dtype=pops.dtype), pops, out=pops)
    depth = pops.astype(np.int32)
    del pops
    levels = _Levels(depth)
    parent = np.full(n, -1, dtype=np.int64)
    for d, members in levels:  # members in push order: the parents are searched in order
        prev = levels.at(d - 1)
        if d >= 1 and prev is not None:
            k = np.searchsorted(prev, members, "left") - 1
            ok = k >= 0
            parent[members[ok]] = prev[k[ok]]
    inner = np.full(len(launch_t), -1, dtype=np.int64)
    if len(launch_t):
        for lv, asked in _Levels(level):
            prev = levels.at(lv - 1)
            if lv >= 1 and prev is not None:
                k = np.searchsorted(prev, pushed[asked], "left") - 1
                ok = k >= 0
                inner[asked[ok]] = prev[k[ok]]
    return depth, parent, inner


def _ids(ids: Any, positions: Any, pool: Any) -> Any:
    """The range ids at ``positions`` of a group as an Arrow array, NULL where a position is -1 (memory from
    ``pool``)."""
    import numpy as np
    import pyarrow as pa

    return pa.array(ids[np.maximum(positions, 0)], mask=positions < 0, memory_pool=pool)


def _stacks(innermost: Any, parent: Any) -> Any:
    """Which ranges of a group are on some operation's NVTX stack: the ``innermost`` positions and their ancestors
    through ``parent`` (positions, -1 at the top), one level up per step."""
    import numpy as np

    on = np.zeros(len(parent), dtype=bool)
    up = innermost[~on[innermost]]
    while len(up):
        on[up] = True
        up = parent[up]
        up = up[up >= 0]
        up = up[~on[up]]
    return on


class _Levels:
    """Positions grouped by their level (a range's depth, a launch call's open depth), each group in position
    order: iterating gives (level, positions)."""

    def __init__(self, level: Any) -> None:
        import numpy as np

        low, high = (int(level.min()), int(level.max())) if len(level) else (0, 0)
        narrow = level.astype(np.int16) if low >= -(2**15) and high < 2**15 else level
        self.order = np.argsort(narrow, kind="stable")  # a radix sort for 16-bit keys
        at = narrow[self.order]
        edges = np.r_[0, np.flatnonzero(at[1:] != at[:-1]) + 1, len(at)]
        self.groups = {int(at[a]): (a, b) for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a}

    def __iter__(self) -> Any:
        return ((lv, self.order[a:b]) for lv, (a, b) in self.groups.items())

    def at(self, level: int) -> Any:
        """The positions at ``level``, in order (None: none)."""
        group = self.groups.get(level)
        return None if group is None else self.order[group[0] : group[1]]


def _groups(lanes: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    """Consecutive lanes (lane, thread, ranges; by thread) in groups of whole threads of at most
    :data:`GROUP_RANGES` ranges (a thread with more alone): the (first, last) lane of each."""
    out: list[tuple[int, int]] = []
    total = 0
    prev = None
    for lane, thread, n in lanes:
        if out and (thread == prev or total + n <= GROUP_RANGES):
            out[-1] = (out[-1][0], lane)
            total += n
        else:
            out.append((lane, lane))
            total = n
        prev = thread
    return out


def _np(column: Any) -> Any:
    """A non-null Arrow column as one numpy array (its chunks copied into numpy's memory, which is given back when
    freed: Arrow's pool would keep it)."""
    import numpy as np

    chunks = [c.to_numpy() for c in column.chunks]  # zero-copy views (a non-null column)
    if not chunks:  # an empty result
        return np.empty(0, dtype=column.type.to_pandas_dtype())
    return chunks[0].copy() if len(chunks) == 1 else np.concatenate(chunks)
