-- nsys_attribution: NVTX ranges, their nesting, and the attribution of every GPU operation (kernel, memcpy,
-- memset) to the NVTX ranges open on the CPU thread that launched it, at the launch call's time.
--
-- Inputs (views created by rooflake.ingest.nsys_sqlite over the export's tables read as Arrow, typed, possibly
-- empty; NAME columns as <name>_id into StringIds and <name>_text inline):
--   k_raw (start, "end", device_id, ..., name_id, name_text, grid_x, ..., graph_node_id)   CUPTI_ACTIVITY_KIND_KERNEL
--   mc_raw, ms_raw (start, "end", device_id, ..., bytes, copy_kind)                         memcpy, memset
--   api_raw0, api_raw1 (start, "end", thread, correlation_id, api_id, api_text)            runtime, driver API
--   nvtx_raw (src_row, start, "end", event_type, text_inline, text_id, thread, end_thread, domain_id)
--   strings (id, value)                                                                     StringIds
-- Outputs (temporary tables and views the reader streams to Parquet, joined with the source's strings there):
--   ranges_named  (view) one row per range (range_id = src_row of the NVTX event): kind, start/end, thread, text,
--                 name; computed while it is written (the text stays in the compact Arrow source until then)
--   pp            range_id -> depth, parent_id of every push/pop range
--   ops_out       one row per GPU operation: uid; op_kind, idx (row number of its table in start order:
--                 kernel_id, op_id), src_row (its rowid: the writer joins the source's other columns by it); its
--                 launch call; path_id, nvtx_start_end (start/end range names), attribution (reason)
--   paths         path_id -> nvtx_path, nvtx_stack, nvtx_domain (one row per distinct NVTX stack)
--   domain_names
-- Directives for the reader: "-- @wait <source>" before a statement that needs a source that may still be read on
-- another thread (the biggest table is, while this starts); "-- @release <source>" frees a source's Arrow table
-- once no later statement reads it; "-- @each <table>" marks a run of statements executed in turn once per row
-- of <table> (in the order of its first column), each column bound as parameter $<column>; "-- @purge": after the
-- statement, DuckDB's allocator gives back the memory it keeps freed but resident (at 700k ranges ~100 MB after
-- the sweep, ~65 MB after the walk: the statements after reuse only part of it).
--
-- Method. Push/pop ranges nest per lane = (thread, domain). One sort of the lane's events (push, pop, and the
-- launch calls of GPU operations made on that thread) and a running sum of +1 (push) / -1 (pop) give the open
-- depth at every event. The innermost range open at a launch is the latest push at depth (level - 1) before it,
-- and the parent of a range the latest push one level up: both are one ASOF join. Everything is sort + window +
-- ASOF: linear in size (no thread-equality + interval join, which goes quadratic when every range sits on one
-- thread); the sort runs slice by slice of the time axis to bound its memory. At one instant the order is: pops
-- of ranges that began earlier (innermost first), pushes (outer first), pops of zero-length ranges (reverse push
-- order), launches: a range pushed at exactly t contains a launch at t, one popped at t does not.

-- where a PyTorch op's text ends its name: the first ", <key> = " (string search, 2x faster than a regex)
CREATE TEMP MACRO pytorch_cut(t) AS
CASE WHEN contains(t, ' = ') THEN coalesce(least(nullif(strpos(t, ', seq = '), 0), nullif(strpos(t, ', op_id = '), 0),
               nullif(strpos(t, ', sizes = '), 0), nullif(strpos(t, ', input_op_ids = '), 0)), 0) ELSE 0 END;

-- the grouping name of an NVTX text t: the rules of rooflake/ingest/nvtx.py (PyTorch op suffixes, PyProf/DLProf
-- dict markers), the text itself otherwise. cut = pytorch_cut(t), passed in as a column so that it is computed once
-- (a macro argument is substituted, and evaluated, at each use)
CREATE TEMP MACRO range_name(t, cut) AS
CASE
    WHEN cut > 0 THEN t[1:cut - 1]
    WHEN starts_with(t, '{''') AND regexp_matches(t, '^\{''mod'': ''[^'']*'', ''op'': ''[^'']*''')
        THEN regexp_extract(t, '^\{''mod'': ''([^'']*)''', 1) || '.'
            || regexp_extract(t, '^\{''mod'': ''[^'']*'', ''op'': ''([^'']*)''', 1)
    WHEN starts_with(t, '{''') AND regexp_matches(t, '''funcStack'': ''[^'']*/[^''/]*''')
        THEN regexp_extract(t, '''funcStack'': ''[^'']*/([^''/]*)''', 1)
    ELSE t
END;

-- GPU operations in start order (idx: kernel_id / op_id)
-- @wait k_raw
CREATE TEMP VIEW src_kernel AS
SELECT row_number() OVER (ORDER BY k.start, k.correlation_id, k.process, k.device_id) - 1 AS idx, k.*
FROM k_raw AS k;

CREATE TEMP VIEW src_memop AS
SELECT row_number() OVER (ORDER BY start, kind, correlation_id, process, device_id) - 1 AS idx, *
FROM (SELECT 'memcpy' AS kind, * FROM mc_raw UNION ALL SELECT 'memset' AS kind, * FROM ms_raw);

-- the (process, correlation id) of every GPU operation: the API calls that launched one are the only ones kept (an
-- export can hold 10x more API calls than GPU operations: aggregating all of them cost +400 MB at 1.7M calls)
CREATE TEMP TABLE op_keys AS
SELECT DISTINCT process, correlation_id
FROM (
    SELECT process, correlation_id FROM k_raw
    UNION ALL SELECT process, correlation_id FROM mc_raw
    UNION ALL SELECT process, correlation_id FROM ms_raw
);

-- API calls
-- @wait api_raw0
CREATE TEMP VIEW src_api AS
SELECT a.start, a."end", a.thread, a.correlation_id, coalesce(a.api_text, s.value) AS api
FROM (SELECT * FROM api_raw0 UNION ALL SELECT * FROM api_raw1) AS a
SEMI JOIN op_keys AS k ON k.process = (a.thread & ~16777215) AND k.correlation_id = a.correlation_id
LEFT JOIN strings AS s ON s.id = a.api_id;

-- the launching API call of each GPU operation (first by time if the export repeats a correlation id)
CREATE TEMP TABLE api1 AS
SELECT thread & ~16777215 AS process, correlation_id, arg_min(thread, start) AS thread,
       min(start) AS start, arg_min(api, start) AS api
FROM src_api
GROUP BY ALL;

-- every GPU operation (the columns attribution and coverage need; the others stay in the compact Arrow sources
-- until the output) and its launch call; uid: kernels even, memcpy/memset odd
CREATE TEMP TABLE ops AS
SELECT
    CASE WHEN o.op_kind = 'kernel' THEN 2 * o.idx ELSE 2 * o.idx + 1 END AS uid,
    o.*,
    a.thread AS launch_thread,
    a.start AS launch_start_ns,
    a.api AS launch_api
FROM (
    SELECT 'kernel' AS op_kind, idx, src_row, start, "end", device_id, correlation_id, process, graph_node_id
    FROM src_kernel
    UNION ALL
    SELECT kind, idx, src_row, start, "end", device_id, correlation_id, process, NULL FROM src_memop
) AS o
LEFT JOIN api1 AS a USING (process, correlation_id);

-- @release api_raw0 api_raw1
DROP TABLE api1;
DROP TABLE op_keys;
DROP VIEW src_api;
DROP VIEW api_raw0;
DROP VIEW api_raw1;

-- NVTX ranges
-- @wait nvtx_raw
CREATE TEMP VIEW src_nvtx AS
SELECT n.src_row, n.start, n."end", n.event_type, coalesce(n.text_inline, s.value) AS text, n.thread,
       n.end_thread, n.domain_id
FROM nvtx_raw AS n LEFT JOIN strings AS s ON s.id = n.text_id;

CREATE TEMP VIEW src_domain AS
SELECT domain_id, any_value(text) AS domain FROM src_nvtx WHERE event_type = 75 GROUP BY domain_id;

CREATE TEMP TABLE domain_names AS
SELECT ids.domain_id,
       coalesce(d.domain, CASE WHEN ids.domain_id = 0 THEN '<default domain>' ELSE 'domain ' || ids.domain_id::VARCHAR END)
           AS domain
FROM (SELECT DISTINCT coalesce(domain_id, 0) AS domain_id FROM nvtx_raw) AS ids
LEFT JOIN src_domain AS d USING (domain_id);

DROP VIEW src_domain;
DROP VIEW src_nvtx;

-- ranges: range_id = the event's rowid (a view: read from the Arrow source where used; text as in the source)
CREATE TEMP VIEW r0 AS
SELECT
    n.src_row AS range_id,
    CASE
        WHEN n.event_type IN (59, 70) THEN 'push_pop'
        WHEN n.event_type IN (60, 71) THEN 'start_end'
        ELSE 'mark'
    END AS kind,
    coalesce(n.domain_id, 0) AS domain_id,
    n.start AS start_ns,
    CASE WHEN n.event_type IN (34, 65) THEN n.start ELSE n."end" END AS end_ns,
    n.thread,
    n.thread & ~16777215 AS process,
    n.end_thread,
    n.text_inline,
    n.text_id
FROM nvtx_raw AS n
WHERE n.event_type IN (34, 59, 60, 65, 70, 71);

-- push/pop ranges (straight from the source: cheaper to scan than r0, and scanned once per slice below)
CREATE TEMP VIEW push_pop AS
SELECT src_row AS range_id, start AS start_ns, "end" AS end_ns, thread, coalesce(domain_id, 0) AS domain_id
FROM nvtx_raw
WHERE event_type IN (59, 70);

-- lanes: the (thread, domain) pairs that hold push/pop ranges
CREATE TEMP TABLE lanes AS
SELECT thread, domain_id, (row_number() OVER (ORDER BY thread, domain_id))::INTEGER AS lane
FROM (SELECT DISTINCT thread, domain_id FROM push_pop);

-- every lane's events (kind: 1 push, -1 pop, 0 launch; ord: 0 pop of an earlier range, 1 push, 2 pop of a
-- zero-length range, 3 launch; sub, then range_id (pushes) or its negative (pops) order events with the same t and
-- ord; e: a push's end)
CREATE TEMP VIEW lane_events AS
SELECT l.lane, 1::TINYINT AS kind, r.range_id AS ref, r.start_ns AS t, 1::TINYINT AS ord,
       -(coalesce(r.end_ns, 9223372036854775807) - r.start_ns) AS sub, r.end_ns AS e
FROM push_pop AS r JOIN lanes AS l USING (thread, domain_id)
UNION ALL
SELECT l.lane, -1::TINYINT, r.range_id, r.end_ns, CASE WHEN r.end_ns = r.start_ns THEN 2 ELSE 0 END, -r.start_ns, NULL
FROM push_pop AS r JOIN lanes AS l USING (thread, domain_id) WHERE r.end_ns IS NOT NULL
UNION ALL
SELECT l.lane, 0::TINYINT, o.uid, o.launch_start_ns, 3, 0, NULL
FROM ops AS o JOIN lanes AS l ON l.thread = o.launch_thread;

-- The sweep runs over slices of the time axis, one after another, so that only one slice's events are sorted at
-- a time (all 1.8M events of a 700k-range export at once: +200 MB). The slice bounds split the push/pop ranges'
-- start times, from a 1,024-bin histogram, into parts of about getvariable('slice_ranges') ranges, in at most
-- getvariable('max_slices') slices (both set by the reader: each slice scans the sources again, so their number
-- is bounded to keep the sweep linear). Each lane's level and event count carry over from one slice to the next
-- (lane_state), and so do the ranges still open at a slice's end (open_pushes): an event's innermost range or
-- parent is either pushed in its own slice or open at the slice's start.
CREATE TEMP TABLE slices AS
WITH p AS (SELECT start_ns AS t FROM push_pop),
span AS (SELECT min(t) AS lo, (max(t) - min(t) + 1)::DOUBLE AS w, count(*) AS total FROM p),
bins AS (SELECT floor((p.t - span.lo) / span.w * 1024)::INTEGER AS bin, count(*) AS n FROM p, span GROUP BY ALL),
cut AS (
    SELECT bin, span.lo, span.w,
           -- integer division: // of a DOUBLE does not floor, and ::INTEGER rounds
           ((sum(n) OVER (ORDER BY bin) - n)
               * least(ceil(span.total / getvariable('slice_ranges')), getvariable('max_slices'))::BIGINT
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
CREATE TEMP TABLE op_inner (uid BIGINT, innermost BIGINT);
CREATE TEMP TABLE pp (range_id BIGINT, depth INTEGER, parent_id BIGINT);

-- one slice's events in stack order, with seq (position in the lane) and the open depth after each (level =
-- running sum of kind)
-- @each slices
CREATE OR REPLACE TEMP TABLE ev AS
SELECT e.lane, e.kind, e.ref, e.t, e.e,
       s.seq + row_number() OVER w AS seq,
       (s.level + sum(e.kind) OVER (w ROWS UNBOUNDED PRECEDING))::INTEGER AS level
FROM lane_events AS e JOIN lane_state AS s USING (lane)
WHERE e.t >= $t_lo AND e.t < $t_hi
WINDOW w AS (PARTITION BY e.lane ORDER BY e.t, e.ord, e.sub, e.ref * e.kind);

-- for a push: its parent (latest push one level up); for a launch: the innermost open range of the lane
-- @each slices
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
-- @each slices
INSERT INTO op_inner
SELECT ref, arg_max(up_id, (up_start, up_id)) FROM ev_up WHERE kind = 0 AND level > 0 GROUP BY ref;

-- depth and parent of each push/pop range (kept for the output)
-- @each slices
INSERT INTO pp
SELECT ref, level - 1, CASE WHEN level > 1 THEN up_id END FROM ev_up WHERE kind = 1;

-- ranges still open after the slice (popped later, or never)
-- @each slices
CREATE OR REPLACE TEMP TABLE open_pushes AS
SELECT * FROM (SELECT * FROM open_pushes UNION ALL SELECT lane, seq, level, ref, t, e FROM ev WHERE kind = 1)
WHERE e IS NULL OR e > $t_hi;

-- @each slices
CREATE OR REPLACE TEMP TABLE lane_state AS
SELECT s.lane, coalesce(x.level, s.level) AS level, coalesce(x.seq, s.seq) AS seq
FROM lane_state AS s
LEFT JOIN (SELECT lane, arg_max(level, seq) AS level, max(seq) AS seq FROM ev GROUP BY lane) AS x USING (lane);

DROP TABLE IF EXISTS ev;
DROP TABLE IF EXISTS ev_up;
DROP TABLE open_pushes;
DROP TABLE lane_state;
DROP TABLE slices;
-- @purge
DROP VIEW lane_events;

-- every range with its text and grouping name (a view: computed where used, the output included)
CREATE TEMP VIEW ranges_named AS
SELECT *, range_name(text, cut) AS name
FROM (
    SELECT *, pytorch_cut(text) AS cut
    FROM (SELECT r0.*, coalesce(r0.text_inline, s.value) AS text FROM r0 LEFT JOIN strings AS s ON s.id = r0.text_id)
);

-- the stack of names of every range that is some operation's innermost one, then one path_id per distinct
-- (domain, stack). First the ids on those stacks (walking up the parent ids), then the names of those ranges only
-- (the names of all 700k ranges of a large export at once: +130 MB), then the walk again, carrying the names
CREATE TEMP TABLE walk_ids AS
WITH RECURSIVE up(id, cur) AS (
    SELECT range_id, parent_id FROM pp WHERE range_id IN (SELECT innermost FROM op_inner)
    UNION
    SELECT p.range_id, p.parent_id FROM up AS u JOIN pp AS p ON p.range_id = u.cur
)
SELECT id, cur AS parent_id FROM up;

-- (text and name as in ranges_named, but joined on nvtx_raw: through the view DuckDB names all 700k ranges before
-- the join, 0.11 s against 0.05 s)
CREATE TEMP TABLE walk AS
SELECT id, parent_id, domain_id, range_name(text, cut) AS name
FROM (
    SELECT *, pytorch_cut(text) AS cut
    FROM (
        SELECT w.id, w.parent_id, coalesce(n.domain_id, 0) AS domain_id, coalesce(n.text_inline, s.value) AS text
        FROM nvtx_raw AS n JOIN walk_ids AS w ON w.id = n.src_row LEFT JOIN strings AS s ON s.id = n.text_id
    )
);

-- @purge
DROP TABLE walk_ids;

CREATE TEMP TABLE leaf_stack AS
WITH RECURSIVE up(leaf, domain_id, cur, stack) AS (
    SELECT w.id, w.domain_id, w.parent_id, [w.name] FROM walk AS w WHERE w.id IN (SELECT innermost FROM op_inner)
    UNION ALL
    SELECT u.leaf, u.domain_id, p.parent_id, list_prepend(p.name, u.stack) FROM up AS u JOIN walk AS p ON p.id = u.cur
)
SELECT leaf, domain_id, stack FROM up WHERE cur IS NULL;

-- @purge
DROP TABLE walk;

CREATE TEMP TABLE paths AS
SELECT row_number() OVER (ORDER BY s.domain_id, s.stack) AS path_id, s.domain_id, s.stack AS nvtx_stack,
       d.domain AS nvtx_domain, d.domain || ':' || array_to_string(s.stack, '/') AS nvtx_path
FROM (SELECT DISTINCT domain_id, stack FROM leaf_stack) AS s
LEFT JOIN domain_names AS d USING (domain_id);

CREATE TEMP TABLE leaf_path AS
SELECT l.leaf AS range_id, p.path_id
FROM leaf_stack AS l JOIN paths AS p ON p.domain_id = l.domain_id AND p.nvtx_stack = l.stack;

DROP TABLE leaf_stack;

-- start/end ranges open anywhere in the launching process at launch time
CREATE TEMP TABLE op_se AS
SELECT o.uid, list(r.name ORDER BY r.start_ns, r.range_id) AS names
FROM ops AS o
JOIN (SELECT * FROM ranges_named WHERE kind = 'start_end') AS r
    ON r.process = o.process
    AND o.launch_start_ns >= r.start_ns AND o.launch_start_ns < coalesce(r.end_ns, 9223372036854775807)
GROUP BY o.uid;

-- operations with no range on their own thread: was a push/pop range open on another thread of the process?
CREATE TEMP TABLE op_other AS
SELECT DISTINCT o.uid
FROM (SELECT * FROM ops WHERE launch_thread IS NOT NULL AND uid NOT IN (SELECT uid FROM op_inner)) AS o
JOIN push_pop AS r
    ON r.thread & ~16777215 = o.process
    AND o.launch_start_ns >= r.start_ns AND o.launch_start_ns < coalesce(r.end_ns, 9223372036854775807);

CREATE TEMP TABLE ops_out AS
SELECT
    o.*, lp.path_id, se.names AS nvtx_start_end,
    CASE
        WHEN lp.path_id IS NOT NULL THEN 'push_pop'
        WHEN o.launch_thread IS NULL THEN 'no_launch_row'
        WHEN se.names IS NOT NULL THEN 'start_end'
        WHEN ot.uid IS NOT NULL THEN 'other_thread'
        ELSE 'no_range_open'
    END AS attribution
FROM ops AS o
LEFT JOIN op_inner AS i USING (uid)
LEFT JOIN leaf_path AS lp ON lp.range_id = i.innermost
LEFT JOIN op_se AS se USING (uid)
LEFT JOIN op_other AS ot USING (uid);

DROP TABLE ops;
DROP TABLE op_inner;
DROP TABLE leaf_path;
DROP TABLE op_se;
-- @purge
DROP TABLE op_other;
