-- sweep_slice: one slice of the NVTX stack sweep (rooflake.ingest.nsys_sqlite runs it once per row of `slices`, in
-- order; the method is in ranges.sql). Adds the slice's launches to op_inner and its push/pop ranges to pp, and
-- carries lane_state and open_pushes over to the next slice.
-- Parameters: $t_lo, $t_hi (ns): the slice's events are those at t_lo <= t < t_hi.
-- Columns: none (statements only).

-- the slice's events in stack order, with seq (position in the lane) and the open depth after each (level =
-- running sum of kind)
CREATE OR REPLACE TEMP TABLE ev AS
SELECT e.lane, e.kind, e.ref, e.t, e.e,
       s.seq + row_number() OVER w AS seq,
       (s.level + sum(e.kind) OVER (w ROWS UNBOUNDED PRECEDING))::INTEGER AS level
FROM lane_events AS e JOIN lane_state AS s USING (lane)
WHERE e.t >= $t_lo AND e.t < $t_hi
WINDOW w AS (PARTITION BY e.lane ORDER BY e.t, e.ord, e.sub, e.ref * e.kind);

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
