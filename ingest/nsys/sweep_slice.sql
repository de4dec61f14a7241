-- sweep_slice: one slice of the NVTX stack sweep (rooflake.ingest.nsys_sqlite runs it once per row of `slices`, in
-- order; the method is in ranges.sql). Adds the slice's launches to op_inner and its push/pop ranges to pp, and
-- carries lane_state and open_pushes over to the next slice.
-- Parameters: $t_lo, $t_hi (ns): the slice's events are those at t_lo <= t < t_hi.
-- Columns: none (statements only).

-- the slice's events in stack order (lane by lane), with seq (position in the lane) and the lane's open depth after
-- each (level). One sort of the slice, then streaming windows in that order (a window partitioned by lane sorted and
-- windowed each lane apart: ~0.65 against ~0.45 CPU s per slice of 1.8M events): a row number (rn) and a running sum
-- of kind (cs) over all lanes one after another, and each lane's bases, taken at its marker row (sorted first in the
-- lane, kind NULL, carrying the lane's state before the slice): rn and cs there minus the lane's seq and level, so
-- that seq = rn - seq base and level = cs - level base. Streaming windows run on one thread in their input's order;
-- insertion order is kept for this statement so that the sorted rows reach them in order.
SET preserve_insertion_order = true;

CREATE OR REPLACE TEMP TABLE ev AS
SELECT lane, kind, ref, t, e, rn - seq_base AS seq, (cs - level_base)::INTEGER AS level
FROM (
    SELECT y.*,
           last_value(CASE WHEN kind IS NULL THEN rn - mark_seq END IGNORE NULLS) OVER (ROWS UNBOUNDED PRECEDING)
               AS seq_base,
           last_value(CASE WHEN kind IS NULL THEN cs - mark_level END IGNORE NULLS) OVER (ROWS UNBOUNDED PRECEDING)
               AS level_base
    FROM (
        SELECT x.*, row_number() OVER () AS rn, sum(coalesce(x.kind, 0)) OVER (ROWS UNBOUNDED PRECEDING) AS cs
        FROM (
            SELECT lane, kind, ref, t, e, NULL::BIGINT AS mark_seq, NULL::INTEGER AS mark_level, t AS t_sort, ord, sub,
                   ref * kind AS tie
            FROM lane_events
            WHERE t >= $t_lo AND t < $t_hi
            UNION ALL
            SELECT lane, NULL, NULL, NULL, NULL, seq, level, -9223372036854775808, -1, 0, 0 FROM lane_state
            ORDER BY lane, t_sort, ord, sub, tie
        ) AS x
    ) AS y
)
WHERE kind IS NOT NULL;

-- (the reader's setting again: nsys_sqlite.connect)
SET preserve_insertion_order = false;

-- for a push: its parent (latest push one level up); for a launch: the innermost open range of the lane
CREATE OR REPLACE TEMP TABLE ev_up AS
SELECT e.kind, e.ref, e.level, p.ref AS up_id, p.t AS up_start
FROM (SELECT * FROM ev WHERE kind >= 0) AS e
ASOF LEFT JOIN (
    SELECT lane, seq, level, ref, t FROM ev WHERE kind = 1
    UNION ALL
    SELECT lane, seq, level, ref, t FROM open_pushes
) AS p
    ON p.lane = e.lane AND p.level = e.level - e.kind AND e.seq >= p.seq;

-- innermost range of each operation: over its thread's lanes (domains; all in this slice: same launch time), the
-- latest-pushed innermost one (pushed at the same instant in two domains: the later event row)
INSERT INTO op_inner
SELECT ref, arg_max(up_id, (up_start, up_id)) FROM ev_up WHERE kind = 0 AND level > 0 GROUP BY ref;

-- depth and parent of each push/pop range (kept for the output)
INSERT INTO pp
SELECT ref, level - 1, CASE WHEN level > 1 THEN up_id END FROM ev_up WHERE kind = 1;

-- ranges still open after the slice (popped later, or never)
CREATE OR REPLACE TEMP TABLE open_pushes AS
SELECT * FROM (SELECT * FROM open_pushes UNION ALL SELECT lane, seq, level, ref, t, e FROM ev WHERE kind = 1)
WHERE e IS NULL OR e > $t_hi;

CREATE OR REPLACE TEMP TABLE lane_state AS
SELECT s.lane, coalesce(x.level, s.level) AS level, coalesce(x.seq, s.seq) AS seq
FROM lane_state AS s
LEFT JOIN (SELECT lane, arg_max(level, seq) AS level, max(seq) AS seq FROM ev GROUP BY lane) AS x USING (lane);

-- the slice's events are done with: freed before the next slice sorts its own (kept, they took ~120 MB of the
-- memory limit from the next slice's sort at 1.2M kernels, which then spilled)
DROP TABLE ev;
DROP TABLE ev_up;
