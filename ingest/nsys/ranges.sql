-- ranges: NVTX ranges, their domains, and the setup of the NVTX stack sweep (rooflake.ingest.nsys_sqlite; needs
-- nvtx_raw, strings, ops).
-- Parameters: $slice_ranges (push/pop ranges per slice of the sweep), $max_slices (at most this many slices).
-- Creates: domain_names, r0 (view: one row per range), range_flags (the ranges whose source rows look wrong, with
-- their flags), push_pop (view), lanes, lane_events (view), slices, lane_state, open_pushes, op_inner, pp (the
-- sweep's state and results; see sweep_slice.sql).
-- Columns: of the last statement, the slices in order:
--   t_lo   ns   the slice's first instant (inclusive)
--   t_hi   ns   the next slice's first instant (exclusive)
--
-- Method. Push/pop ranges nest per lane = (thread, domain). One sort of the lane's events (push, pop, and the
-- launch calls of GPU operations made on that thread) and a running sum of +1 (push) / -1 (pop) give the open
-- depth at every event. The innermost range open at a launch is the latest push at depth (level - 1) before it,
-- and the parent of a range the latest push one level up: both are one ASOF join. Everything is sort + window +
-- ASOF: linear in size (no thread-equality + interval join, which goes quadratic when every range sits on one
-- thread); the sort runs slice by slice of the time axis to bound its memory. At one instant the order is: pops
-- of ranges that began earlier (innermost first), pushes (outer first), pops of zero-length ranges (reverse push
-- order), launches: a range pushed at exactly t contains a launch at t, one popped at t does not.

CREATE TEMP VIEW src_nvtx AS
SELECT n.src_row, n.start, n."end", n.event_type, coalesce(n.text_inline, s.value) AS text,
       coalesce(n.text_inline_hex, s.value_hex) AS text_hex, n.thread, n.end_thread, n.domain_id
FROM nvtx_raw AS n LEFT JOIN strings AS s ON s.id = n.text_id;

CREATE TEMP VIEW src_domain AS
SELECT domain_id, any_value(text) AS domain, any_value(text_hex) AS domain_hex
FROM src_nvtx
WHERE nvtx_is_domain_create(event_type)
GROUP BY domain_id;

CREATE TEMP TABLE domain_names AS
SELECT ids.domain_id,
       coalesce(d.domain, CASE WHEN ids.domain_id = 0 THEN '<default domain>' ELSE 'domain ' || ids.domain_id::VARCHAR END)
           AS domain,
       d.domain_hex
FROM (SELECT DISTINCT coalesce(domain_id, 0) AS domain_id FROM nvtx_raw) AS ids
LEFT JOIN src_domain AS d USING (domain_id);

DROP VIEW src_domain;
DROP VIEW src_nvtx;

-- ranges: range_id = the event's rowid (a view: read from the Arrow source where used; text as in the source)
CREATE TEMP VIEW r0 AS
SELECT
    n.src_row AS range_id,
    nvtx_range_kind(n.event_type) AS kind,
    coalesce(n.domain_id, 0) AS domain_id,
    n.start AS start_ns,
    CASE WHEN nvtx_is_mark(n.event_type) THEN n.start ELSE n."end" END AS end_ns,
    n.thread,
    process_of(n.thread) AS process_id,
    n.end_thread,
    n.text_inline,
    n.text_inline_hex,
    n.text_id
FROM nvtx_raw AS n
WHERE nvtx_is_range(n.event_type);

-- ranges whose source rows look wrong, with their flags in a fixed order: no start, end before start, a negative
-- timestamp. A push/pop range with no start or ending before it starts cannot nest: it is left out of push_pop.
CREATE TEMP TABLE range_flags AS
SELECT src_row AS range_id,
       list_filter([
           CASE WHEN start IS NULL THEN 'null_start' END,
           CASE WHEN "end" < start THEN 'reversed_time' END,
           CASE WHEN start < 0 OR "end" < 0 THEN 'negative_time' END
       ], lambda f: f IS NOT NULL) AS flags
FROM nvtx_raw
WHERE nvtx_is_range(event_type) AND (start IS NULL OR "end" < start OR start < 0 OR "end" < 0);

-- push/pop ranges (straight from the source: cheaper to scan than r0, and scanned once per slice below)
CREATE TEMP VIEW push_pop AS
SELECT src_row AS range_id, start AS start_ns, "end" AS end_ns, thread, coalesce(domain_id, 0) AS domain_id
FROM nvtx_raw
WHERE nvtx_is_push_pop(event_type) AND start IS NOT NULL AND ("end" IS NULL OR "end" >= start);

-- lanes: the (thread, domain) pairs that hold push/pop ranges
CREATE TEMP TABLE lanes AS
SELECT thread, domain_id, (row_number() OVER (ORDER BY thread, domain_id))::INTEGER AS lane
FROM (SELECT DISTINCT thread, domain_id FROM push_pop);

-- every lane's events (kind: 1 push, -1 pop, 0 launch; ord: 0 pop of an earlier range, 1 push, 2 pop of a
-- zero-length range, 3 launch; sub, then range_id (pushes) or its negative (pops) order events with the same t and
-- ord: pushes the later-ending first (sub = ~end = -end - 1, which cannot overflow), pops the later-starting first;
-- e: a push's end)
CREATE TEMP VIEW lane_events AS
SELECT l.lane, 1::TINYINT AS kind, r.range_id AS ref, r.start_ns AS t, 1::TINYINT AS ord,
       ~coalesce(r.end_ns, 9223372036854775807) AS sub, r.end_ns AS e
FROM push_pop AS r JOIN lanes AS l USING (thread, domain_id)
UNION ALL
SELECT l.lane, -1::TINYINT, r.range_id, r.end_ns, CASE WHEN r.end_ns = r.start_ns THEN 2 ELSE 0 END, ~r.start_ns, NULL
FROM push_pop AS r JOIN lanes AS l USING (thread, domain_id) WHERE r.end_ns IS NOT NULL
UNION ALL
SELECT l.lane, 0::TINYINT, o.uid, o.launch_start_ns, 3, 0, NULL
FROM ops AS o JOIN lanes AS l ON l.thread = o.launch_thread;

-- The sweep runs over slices of the time axis, one after another, so that only one slice's events are sorted at
-- a time (all 1.8M events of a 700k-range export at once: +200 MB). The slice bounds split the push/pop ranges'
-- start times, from a 1,024-bin histogram, into parts of about $slice_ranges ranges, in at most $max_slices
-- slices (each slice scans the sources again, so their number is bounded to keep the sweep linear). Each lane's
-- level and event count carry over from one slice to the next (lane_state), and so do the ranges still open at a
-- slice's end (open_pushes): an event's innermost range or parent is either pushed in its own slice or open at
-- the slice's start.
CREATE TEMP TABLE slices AS
WITH p AS (SELECT start_ns AS t FROM push_pop),
-- (differences of times in HUGEINT: no overflow whatever the timestamps)
span AS (SELECT min(t) AS lo, (max(t)::HUGEINT - min(t) + 1)::DOUBLE AS w, count(*) AS total FROM p),
bins AS (
    SELECT floor((p.t::HUGEINT - span.lo) / span.w * 1024)::INTEGER AS bin, count(*) AS n FROM p, span GROUP BY ALL
),
cut AS (
    SELECT bin, span.lo, span.w,
           -- integer division: // of a DOUBLE does not floor, and ::INTEGER rounds
           ((sum(n) OVER (ORDER BY bin) - n)
               * least(ceil(span.total / $slice_ranges), $max_slices)::BIGINT
               // span.total)::INTEGER AS slice
    FROM bins, span
),
lo AS (
    SELECT slice,
           CASE WHEN slice = 0 THEN -9223372036854775808
                ELSE any_value(lo) + (min(bin) * any_value(w) / 1024)::BIGINT END AS t_lo
    FROM cut GROUP BY slice
)
SELECT slice, t_lo, coalesce(lead(t_lo) OVER (ORDER BY slice), 9223372036854775807) AS t_hi FROM lo;

CREATE TEMP TABLE lane_state AS SELECT lane, 0 AS level, 0::BIGINT AS seq FROM lanes;
CREATE TEMP TABLE open_pushes (lane INTEGER, seq BIGINT, level INTEGER, ref BIGINT, t BIGINT, e BIGINT);
-- the sweep's results (in the work database, nsys/work_db.sql: pp holds every push/pop range)
CREATE TABLE op_inner (uid BIGINT, innermost BIGINT);
CREATE TABLE pp (range_id BIGINT, depth INTEGER, parent_id BIGINT);

SELECT t_lo, t_hi FROM slices ORDER BY slice;
